"""Two revisions -> ``Diff``: rules, graders, goldens and verdicts (pure functions of values).

The command (``gitevals.commands.diff``) reads blobs and run artifacts; everything
here takes bytes and dicts and returns frozen values, so each part is tested with
plain inputs. Only files whose blob differs between A and B are ever handed in.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from gitevals.goldens_diff import GoldensDiff
from gitevals.model import Assertion, Case, Scenario
from gitevals.stats import DEFAULT_ALPHA, DEFAULT_TEST, two_sided

# ---------------------------------------------------------------- rules


@dataclass(frozen=True)
class Change:
    """``before -> after`` of one named thing (a field, an assertion)."""

    what: str
    before: Any
    after: Any


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
        return None, (f"{f.path}:{f.line}:{f.col}: {f.message}" if f else f"{path}: empty")
    try:
        if not isinstance(doc.data, dict) or not isinstance(doc.data.get("scenarios"), list):
            raise ValueError("no scenarios list")
        return load_case(path, doc.data), None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return None, f"{path}:1:1: not a valid case ({exc}); `gitevals lint` says where"


def _identity(a: Assertion) -> tuple[str, Any]:
    """What makes two assertions "the same one, changed": kind plus the tool/grader it names."""
    arg = a.arg
    if isinstance(arg, dict):
        if "name" in arg:
            return a.kind, str(arg["name"])
        if "first" in arg:
            return a.kind, (str(arg.get("first")), str(arg.get("then")))
    return a.kind, None


def _take(pool: list[Assertion], pred: Any) -> Assertion | None:
    for k, item in enumerate(pool):
        if pred(item):
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
        if _take(old, lambda x, a=a: x == a) is None:
            new.append(a)
    out: list[Change] = []
    for a in list(new):
        ident = _identity(a)
        match = _take(old, lambda x, i=ident: _identity(x) == i)
        if match is None and ident[1] is None:
            match = _take(old, lambda x, a=a: x.kind == a.kind)
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


# ---------------------------------------------------------------- graders


@dataclass(frozen=True)
class GraderChange:
    """A grader function ``module.function`` added, removed or changed.

    ``via`` names module-level helpers/constants whose change reaches an otherwise
    identical function (kind "changed" with an empty ``via`` = its own code changed).
    """

    path: str
    name: str
    kind: str  # added | removed | changed | unreadable
    via: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class GraderUse:
    """A scenario on B that uses a grader that changed."""

    case: str
    scenario: str
    grader: str


_MODULE = "<module code>"


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return body[1:]
    return body


def _normal(node: ast.AST) -> str:
    """A node's code without positions, comments, formatting or docstrings."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node = type(node)(**{**{f: getattr(node, f) for f in node._fields},
                             "body": _strip_docstring(node.body)})
    return ast.dump(node, annotate_fields=True, include_attributes=False)


def _defines(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


@dataclass(frozen=True)
class Module:
    """A grader module reduced to what a diff needs: normalized code per top-level name."""

    code: dict[str, str]
    uses: dict[str, frozenset[str]]
    functions: frozenset[str]


def read_module(path: str, data: bytes) -> tuple[Module | None, str | None]:
    """Parse (never import) a grader module; a syntax error is the reason, not an exception."""
    try:
        tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        return None, f"{path}:{line}:1: does not parse ({getattr(exc, 'msg', exc)})"
    code: dict[str, list[str]] = {}
    uses: dict[str, set[str]] = {}
    functions = set()
    for stmt in _strip_docstring(tree.body):
        names = _defines(stmt) or [_MODULE]
        refs = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        for name in names:
            code.setdefault(name, []).append(_normal(stmt))
            uses.setdefault(name, set()).update(refs - {name})
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(stmt.name)
    return Module({k: "\n".join(v) for k, v in code.items()},
                  {k: frozenset(v) for k, v in uses.items()}, frozenset(functions)), None


def _reaches(mod: Module, name: str, changed: set[str]) -> tuple[str, ...]:
    """Changed module-level names ``name`` depends on, transitively."""
    seen, stack, hits = {name}, [name], set()
    while stack:
        for ref in mod.uses.get(stack.pop(), ()):
            if ref in changed:
                hits.add(ref)
            if ref not in seen and ref in mod.code:
                seen.add(ref)
                stack.append(ref)
    return tuple(sorted(hits))


def diff_grader_module(rel: str, data_a: bytes | None, data_b: bytes | None) -> list[GraderChange]:
    """Grader functions of one module whose blob differs: added, removed, changed."""
    stem = rel.rsplit("/", 1)[-1].removesuffix(".py")
    empty = Module({}, {}, frozenset())
    ma, why_a = read_module(rel, data_a) if data_a is not None else (empty, None)
    mb, why_b = read_module(rel, data_b) if data_b is not None else (empty, None)
    if ma is None or mb is None:
        why = "; ".join(f"{s}: {w}" for s, w in (("A", why_a), ("B", why_b)) if w)
        return [GraderChange(rel, f"{stem}.*", "unreadable", problem=why)]
    changed = {n for n in set(ma.code) | set(mb.code) if ma.code.get(n) != mb.code.get(n)}
    out = []
    for fn in sorted(ma.functions | mb.functions):
        name = f"{stem}.{fn}"
        if fn not in mb.functions:
            out.append(GraderChange(rel, name, "removed"))
        elif fn not in ma.functions:
            out.append(GraderChange(rel, name, "added"))
        elif fn in changed:
            out.append(GraderChange(rel, name, "changed"))
        else:
            via = _reaches(mb, fn, changed) or _reaches(ma, fn, changed)
            if via:
                out.append(GraderChange(rel, name, "changed", via))
    if _MODULE in changed:
        out.append(GraderChange(rel, f"{stem}.*", "changed", (_MODULE,)))
    return out


def grader_users(cases: Iterable[Case], changed: set[str]) -> tuple[GraderUse, ...]:
    """Scenarios (on B) whose assertions name one of the ``changed`` graders."""
    rows = {GraderUse(c.name, s.id, g) for c in cases for s in c.scenarios
            for g in s.graders() if g in changed}
    return tuple(sorted(rows, key=lambda u: (u.case, u.scenario, u.grader)))


# ---------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Tally:
    """One side's verdict of one scenario: ``passes`` of ``trials``."""

    verdict: str
    passes: int
    trials: int

    def __str__(self) -> str:
        return f"{self.verdict} {self.passes}/{self.trials}"


@dataclass(frozen=True)
class VerdictRow:
    case: str
    scenario: str
    a: Tally | None
    b: Tally | None
    change: str  # regressed | improved | unchanged | new | gone | not_run
    p: float | None = None
    beyond_noise: bool = False
    a_rescored: Tally | None = None
    graders_changed: tuple[str, ...] = ()  # graders it uses (on B) whose code changed


def mark_grader_users(rows: Iterable[VerdictRow], users: Iterable[GraderUse]
                      ) -> tuple[VerdictRow, ...]:
    """``rows`` with the changed graders each scenario uses, so a move can be read against them."""
    by_key: dict[tuple[str, str], list[str]] = {}
    for u in users:
        by_key.setdefault((u.case, u.scenario), []).append(u.grader)
    return tuple(replace(r, graders_changed=tuple(sorted(by_key.get((r.case, r.scenario), []))))
                 for r in rows)


def tallies(artifact: Mapping[str, Any] | None) -> dict[tuple[str, str], Tally]:
    """``(case, scenario) -> Tally`` from an artifact's stored verdicts."""
    out: dict[tuple[str, str], Tally] = {}
    for case in (artifact or {}).get("cases") or []:
        for s in case.get("scenarios") or []:
            v = s.get("verdict") or {}
            out[(str(case.get("name")), str(s.get("id")))] = Tally(
                str(v.get("verdict", "not_run")), int(v.get("passes", 0)),
                int(v.get("trials", 0)))
    return out


def _direction(a: Tally, b: Tally) -> str:
    if a.trials == 0 or b.trials == 0:
        return "not_run"
    ra, rb = a.passes * b.trials, b.passes * a.trials  # rates compared without floats
    return "regressed" if rb < ra else "improved" if rb > ra else "unchanged"


def compare_verdicts(run_a: Mapping[str, Any] | None, run_b: Mapping[str, Any] | None,
                     rescored_a: Mapping[str, Any] | None = None, test: str = DEFAULT_TEST,
                     alpha: float = DEFAULT_ALPHA) -> tuple[VerdictRow, ...]:
    """Per scenario: A, B, the change, and whether it is beyond noise (p < ``alpha``)."""
    ta, tb = tallies(run_a), tallies(run_b)
    tr = tallies(rescored_a) if rescored_a is not None else {}
    rows = []
    for key in sorted(set(ta) | set(tb)):
        a, b = ta.get(key), tb.get(key)
        if a is None or b is None:
            change, p = ("new" if a is None else "gone"), None
        else:
            change = _direction(a, b)
            p = (two_sided(test, a.passes, a.trials, b.passes, b.trials)
                 if change in ("regressed", "improved") else None)
        beyond = p is not None and p < alpha
        rows.append(VerdictRow(key[0], key[1], a, b, change, p, beyond, tr.get(key)))
    return tuple(rows)


# ---------------------------------------------------------------- the whole diff


@dataclass(frozen=True)
class Side:
    """One revision: as the user named it, its commit, and where its run came from."""

    rev: str
    commit: str
    root: str
    has_evals: bool = True
    run_id: str | None = None
    run_source: str | None = None  # "results" | "note" | "file"
    run_commit: str | None = None
    missing_run_hint: str | None = None


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    cases: tuple[CaseFileChange, ...] = ()
    graders: tuple[GraderChange, ...] = ()
    grader_users: tuple[GraderUse, ...] = ()
    goldens: GoldensDiff | None = None
    verdicts: tuple[VerdictRow, ...] = ()
    rescored: bool = False
    test: str = DEFAULT_TEST
    alpha: float = DEFAULT_ALPHA
    notes: tuple[str, ...] = field(default=())

    def scenario_changes(self) -> list[ScenarioChange]:
        return [s for c in self.cases for s in c.scenarios]

    def counts(self) -> dict[str, int]:
        """The numbers the summary line states."""
        v = self.verdicts
        g = self.goldens
        return {
            "regressed_beyond_noise": sum(r.change == "regressed" and r.beyond_noise for r in v),
            "regressed_within_noise": sum(r.change == "regressed" and not r.beyond_noise
                                          for r in v),
            "improved": sum(r.change == "improved" for r in v),
            "improved_beyond_noise": sum(r.change == "improved" and r.beyond_noise for r in v),
            "new": sum(r.change == "new" for r in v),
            "gone": sum(r.change == "gone" for r in v),
            "rules_changed": len(self.scenario_changes())
            + sum(c.kind == "unreadable" for c in self.cases),
            "graders_changed": len(self.graders),
            "goldens_changed": len(g.changes) if g else 0,
            "goldens_problems": len(g.problems) if g else 0,
        }

    def any_change(self) -> bool:
        c = self.counts()
        verdict_moves = any(r.change not in ("unchanged",) for r in self.verdicts)
        return bool(c["rules_changed"] or c["graders_changed"] or c["goldens_changed"]
                    or verdict_moves)

    def to_json(self) -> str:
        """The ``--format json`` document: every field, keys sorted, one line (C encoder)."""
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc.update(counts=self.counts(), format="gitevals-diff/1")
        return json.dumps(doc, default=_plain, sort_keys=True, ensure_ascii=False)

    def as_dict(self) -> dict[str, Any]:
        """The JSON document as plain Python."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]


def _plain(obj: Any) -> Any:
    """json.dumps fallback: dataclasses become their fields (tuples are lists already)."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in fields(obj)}
    return str(obj)
