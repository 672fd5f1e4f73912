"""Rules between two revisions: case files -> scenario and assertion changes (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitevals.jsontypes import JSON
from gitevals.model import Assertion, Case, Scenario


@dataclass(frozen=True)
class Change:
    """``before -> after`` of one named thing: a field's value, or an assertion as
    ``{kind: arg}`` (``Assertion.as_dict``), None where it is absent."""

    what: str
    before: JSON
    after: JSON


@dataclass(frozen=True)
class ScenarioChange:
    """A scenario added, removed or changed in one case file (path relative to cases/)."""

    path: str
    case: str
    id: str
    kind: str  # added | removed | changed
    fields: tuple[Change, ...] = ()       # trials, timeout, user
    assertions: tuple[Change, ...] = ()   # before None = added, after None = removed


@dataclass(frozen=True)
class CaseFileChange:
    """A case file whose blob differs. ``problem`` says why one side could not be read."""

    path: str
    kind: str  # added | removed | changed | unreadable
    problem: str | None = None
    scenarios: tuple[ScenarioChange, ...] = ()


def read_case(path: str, data: bytes) -> tuple[Case | None, str | None]:
    """A case file's bytes -> Case, or the one-line reason it cannot be read."""
    from gitevals.model import load_case
    from gitevals.yamlsafe import parse  # imported here: a goldens-only diff never needs yaml

    doc, findings = parse(data, path)
    if doc is None:
        f = findings[0] if findings else None
        return None, (f"{f.location()}: {f.message}" if f else f"{path}: empty")
    try:
        if not isinstance(doc.data, dict) or not isinstance(doc.data.get("scenarios"), list):
            raise ValueError("no scenarios list")
        return load_case(path, doc.data), None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return None, f"{path}:1:1: not a valid case ({exc}); `gitevals lint` says where"


def _identity(a: Assertion) -> tuple[str, str | tuple[str, str] | None]:
    """What makes two assertions "the same one, changed": kind plus the tool/grader it names."""
    arg = a.arg
    if isinstance(arg, dict):
        if "name" in arg:
            return a.kind, str(arg["name"])
        if "first" in arg:
            return a.kind, (str(arg.get("first")), str(arg.get("then")))
    return a.kind, None


def _kind(a: Assertion) -> str:
    return a.kind


def _itself(a: Assertion) -> Assertion:
    return a


def _take(pool: list[Assertion], key: Callable[[Assertion], object],
          want: object) -> Assertion | None:
    """Remove and return the first assertion of ``pool`` whose ``key`` equals ``want``."""
    for k, item in enumerate(pool):
        if key(item) == want:
            return pool.pop(k)
    return None


def diff_assertions(before: Iterable[Assertion], after: Iterable[Assertion]) -> tuple[Change, ...]:
    """Added, removed and changed assertions; order alone is not a change (all must pass).

    Equal assertions pair first; then the same kind naming the same tool or grader;
    then, for kinds that name nothing (final_answer_contains...), the same kind.
    """
    old = list(before)
    new: list[Assertion] = []
    for a in after:
        if _take(old, _itself, a) is None:
            new.append(a)
    out: list[Change] = []
    for a in list(new):
        ident = _identity(a)
        match = _take(old, _identity, ident)
        if match is None and ident[1] is None:
            match = _take(old, _kind, a.kind)
        if match is not None:
            new.remove(a)
            out.append(Change(a.kind, match.as_dict(), a.as_dict()))
    out += [Change(a.kind, a.as_dict(), None) for a in old]
    out += [Change(a.kind, None, a.as_dict()) for a in new]
    return tuple(out)


def _scenario_fields(a: Scenario, b: Scenario) -> tuple[Change, ...]:
    out = []
    for name in ("trials", "timeout"):
        if getattr(a, name) != getattr(b, name):
            out.append(Change(name, getattr(a, name), getattr(b, name)))
    if a.user != b.user:
        out.append(Change("user", list(a.user), list(b.user)))
    return tuple(out)


def diff_cases(path: str, a: Case | None, b: Case | None) -> tuple[ScenarioChange, ...]:
    """Scenario rows for one case file (either side may be absent)."""
    either = b or a
    name = either.name if either is not None else path
    sa = {s.id: s for s in a.scenarios} if a else {}
    sb = {s.id: s for s in b.scenarios} if b else {}
    rows = []
    for sid in [s for s in sa if s not in sb]:
        rows.append(ScenarioChange(path, name, sid, "removed"))
    for sid, s in sb.items():
        if sid not in sa:
            rows.append(ScenarioChange(path, name, sid, "added"))
            continue
        fields = _scenario_fields(sa[sid], s)
        asserts = diff_assertions(sa[sid].expect, s.expect)
        if fields or asserts:
            rows.append(ScenarioChange(path, name, sid, "changed", fields, asserts))
    return tuple(rows)


def diff_case_file(rel: str, path_a: str | None, data_a: bytes | None, path_b: str | None,
                   data_b: bytes | None) -> tuple[CaseFileChange, Case | None]:
    """One case file whose blob differs -> its change and B's Case (None when unreadable)."""
    case_a, why_a = read_case(path_a, data_a) if path_a and data_a is not None else (None, None)
    case_b, why_b = read_case(path_b, data_b) if path_b and data_b is not None else (None, None)
    kind = "added" if data_a is None else "removed" if data_b is None else "changed"
    problems = [f"A: {why_a}" if why_a else "", f"B: {why_b}" if why_b else ""]
    problem = "; ".join(p for p in problems if p) or None
    if problem:
        return CaseFileChange(rel, "unreadable", problem), case_b
    return CaseFileChange(rel, kind, None, diff_cases(rel, case_a, case_b)), case_b
