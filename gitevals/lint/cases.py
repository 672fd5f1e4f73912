"""The rules of one case file: bytes in, findings and grader references out.

Pure and per file (the tree-wide orchestration, cache and grader resolution
live elsewhere). Steps, each reporting every problem it finds:

1. ``yamlsafe.parse`` (GE1xx) and a mapping at the top (GE109);
2. refused keys in the top level, ``defaults`` and each scenario (GE301);
3. ``schemas/case.schema.json`` (GE2xx), minus what steps 2 and 4 already say
   better (a refused key is not also an "unknown key");
4. semantics in one pass over the scenarios (GE4xx) and grader name syntax (GE501).

Codes are documented in ``docs/lint-codes.md``.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from gitevals import schema, yamlsafe
from gitevals.findings import Finding, Severity
from gitevals.jsontypes import JSON, JSONObject
from gitevals.model import parse_duration
from gitevals.yamlsafe import Document

SCHEMA = "case"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GRADER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = frozenset(keyword.kwlist)
#: Assertion kinds the semantic rules look into.
_CHECKED = frozenset({"grader", "tool_order", "min_tool_calls", "max_tool_calls"})

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class GraderRef:
    """A syntactically valid grader name as written in a case, at its value's position."""

    name: str
    path: str
    line: int
    col: int


def lint_case_bytes(data: bytes, path: str, refused: Mapping[str, str]
                    ) -> tuple[list[Finding], list[GraderRef]]:
    """Lint one case file. Never raises: every problem is a ``Finding``.

    ``refused`` maps each refused key to the reason given when it is found
    (``Settings.refused_keys``). Grader references come back for resolution
    against the graders of the same revision.
    """
    doc, findings = yamlsafe.parse(data, path)
    if doc is None:
        return findings, []
    return lint_case_document(doc, refused)


def lint_case_document(doc: Document, refused: Mapping[str, str]
                       ) -> tuple[list[Finding], list[GraderRef]]:
    """Steps 1 (a mapping at the top) to 4 on a parsed document."""
    data: JSON = doc.data
    if not isinstance(data, dict):
        return [doc.finding((), "GE109", f"the top level is {_what(data)}, not a mapping; "
                            "write `scenarios:` (and optionally `defaults:`) at the top")], []
    sem = _Semantics(doc, data)
    sem.run()
    refused_at = set(_refused_keys(data, refused))
    findings = [doc.finding(p, "GE301", f"{p[-1]!r} is refused: {refused[str(p[-1])]}; "
                            "remove it", key=True) for p in refused_at]
    findings += sem.findings
    errors = schema.validate(SCHEMA, data)
    skip = _misindented(doc, data, errors, findings) if errors else set()
    for err in errors:
        if (err.key and err.path in refused_at) or _semantic(err):
            continue  # already reported by name, with a better message
        if err.path in skip or err.path[:-1] in skip:
            continue
        findings.append(_schema_finding(doc, err))
    return sorted(findings), sem.graders


# -- refused keys --------------------------------------------------------------


def _refused_keys(data: JSONObject, refused: Mapping[str, str]) -> Iterator[Path_]:
    """Paths of refused keys in the top level, ``defaults`` and every scenario mapping."""
    yield from ((k,) for k in data if k in refused)
    defaults = data.get("defaults")
    if isinstance(defaults, dict):
        yield from (("defaults", k) for k in defaults if k in refused)
    scenarios = data.get("scenarios")
    if isinstance(scenarios, list):
        for i, sc in enumerate(scenarios):
            if isinstance(sc, dict):
                yield from (("scenarios", i, k) for k in sc if k in refused)


# -- schema findings -----------------------------------------------------------

_CODES = {"additionalProperties": "GE201", "type": "GE202", "required": "GE203",
          "minProperties": "GE206", "maxProperties": "GE206"}


def _semantic(err: schema.SchemaError) -> bool:
    """Schema errors the semantic rules report better: a grader name's shape (GE501),
    ``pass_below`` out of range (GE404). Editors still see them through the schema."""
    tail = err.path[-2:]
    return (tail == ("grader", "name") and err.keyword == "pattern") or (
        tail == ("grader", "pass_below") and err.keyword in ("minimum", "maximum"))


def _schema_finding(doc: Document, err: schema.SchemaError) -> Finding:
    if err.keyword == "additionalProperties" and _is_assertion_key(err.path):
        return doc.finding(err.path, "GE205", _unknown_kind(err), key=True)
    if tuple(err.path) == ("cluster",):
        return doc.finding(err.path, "GE208", "bad cluster: a cluster is a name of letters, "
                           "digits, '_', '.' and '-' (at most 100, e.g. cluster: capitals); "
                           f"{err.message}", key=err.key)
    return doc.finding(err.path, _CODES.get(err.keyword, "GE204"), err.message, key=err.key)


def _misindented(doc: Document, data: JSONObject, errors: list[schema.SchemaError],
                 findings: list[Finding]) -> set[Path_]:
    """Items like ``- tool_called:`` followed by ``name: x`` at the same indentation.

    YAML reads that as two keys, the kind with no value and a stray argument;
    one finding ("indent it") replaces the three the schema would give.
    """
    skip: set[Path_] = set()
    for err in errors:
        if err.keyword != "maxProperties" or len(err.path) != 4 or err.path[2] != "expect":
            continue
        item = _value_at(data, err.path)
        if not isinstance(item, dict):
            continue
        kinds = [k for k in item if k in _assertion_kinds()]
        stray = [k for k in item if k not in kinds]
        if len(kinds) != 1 or item[kinds[0]] is not None:
            continue
        args = _assertion_args(kinds[0])
        if stray and all(k in args for k in stray):
            skip.add(err.path)
            findings.append(doc.finding(
                (*err.path, stray[0]), "GE207",
                f"{', '.join(stray)} belong{'s' if len(stray) == 1 else ''} to {kinds[0]} but "
                f"{'is' if len(stray) == 1 else 'are'} not indented under it; "
                f"indent {'it' if len(stray) == 1 else 'them'} two more spaces", key=True))
    return skip


def _value_at(data: JSON, path: Path_) -> JSON:
    """The value at ``path`` (keys and indexes), None when there is none."""
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


@functools.cache
def _timeout_shape() -> re.Pattern[str]:
    """The case schema's own pattern for a timeout (one definition of its shape)."""
    from gitevals.validation import ecma_regex

    pattern = _value_at(schema.load(SCHEMA), ("$defs", "timeout", "pattern"))
    return ecma_regex(pattern if isinstance(pattern, str) else "")


def _assertion_kinds() -> JSONObject:
    """The case schema's assertion kinds: kind -> the schema of its argument."""
    kinds = _value_at(schema.load(SCHEMA), ("$defs", "assertion", "properties"))
    return kinds if isinstance(kinds, dict) else {}


def _is_assertion_key(path: Path_) -> bool:
    return len(path) == 5 and path[0] == "scenarios" and path[2] == "expect"


def _unknown_kind(err: schema.SchemaError) -> str:
    name = str(err.path[-1])
    if err.suggestion:
        return f"unknown assertion kind {name!r}; did you mean {err.suggestion}?"
    return f"unknown assertion kind {name!r}; kinds: {', '.join(err.allowed)}"


def _assertion_args(kind: str) -> JSONObject:
    props = _value_at(_assertion_kinds(), (kind, "properties"))
    return props if isinstance(props, dict) else {}


# -- semantics -----------------------------------------------------------------


#: The longest timeout a scenario may ask for, in seconds.
MAX_TIMEOUT = 24 * 3600


@dataclass
class _Semantics:
    """One pass over the scenarios: GE401-GE405 and GE501, plus grader references.

    """

    doc: Document
    data: JSONObject
    findings: list[Finding] = field(default_factory=list)
    graders: list[GraderRef] = field(default_factory=list)

    def run(self) -> None:
        data = self.data
        defaults = data.get("defaults")
        trials = defaults.get("trials") if isinstance(defaults, dict) else None
        scenarios = data.get("scenarios")
        if not isinstance(scenarios, list):
            return
        if isinstance(defaults, dict):
            self._timeout(defaults, ("defaults",))
        seen: dict[str, int] = {}
        for i, sc in enumerate(scenarios):
            if isinstance(sc, dict):
                self._ids(sc, i, seen)
                self._timeout(sc, ("scenarios", i))
                self._scenario(sc, ("scenarios", i), trials)

    def _timeout(self, obj: JSONObject, at: Path_) -> None:
        """GE406: a timeout longer than a run can wait for (the schema checks its shape)."""
        value = obj.get("timeout")
        if not isinstance(value, str) or not _timeout_shape().search(value):
            return  # not a duration: the schema's finding says so
        if parse_duration(value) > MAX_TIMEOUT:
            self._add((*at, "timeout"), "GE406", f"timeout {value} is over the limit of "
                      f"{MAX_TIMEOUT // 3600}h a conversation; use 24h or less")

    def _ids(self, sc: JSONObject, i: int, seen: dict[str, int]) -> None:
        sid = sc.get("id")
        if not isinstance(sid, str | int | float) or isinstance(sid, bool):
            return
        key = str(sid)
        if key in seen:
            first = self.doc.position(("scenarios", seen[key], "id"))[0]
            self._add(("scenarios", i, "id"), "GE401", f"duplicate scenario id {key!r} "
                      f"(first at line {first}); ids must be unique in a file")
        else:
            seen[key] = i

    def _scenario(self, sc: JSONObject, at: Path_, default_trials: JSON) -> None:
        expect = sc.get("expect")
        if not isinstance(expect, list):
            return
        lows: dict[str, tuple[int, Path_]] = {}
        highs: dict[str, tuple[int, Path_]] = {}
        first_grader: Path_ | None = None
        for j, item in enumerate(expect):
            if item.__class__ is not dict:
                continue
            for kind, arg in item.items():
                if kind not in _CHECKED or arg.__class__ is not dict:
                    continue  # most assertions have nothing to check here: stay cheap
                p = (*at, "expect", j, kind)
                if kind == "grader":
                    first_grader = first_grader or p
                    self._grader(arg, p)
                elif kind == "tool_order":
                    self._tool_order(arg, p)
                elif kind in ("min_tool_calls", "max_tool_calls"):
                    _bound(lows if kind == "min_tool_calls" else highs, arg, p,
                           lower=kind == "min_tool_calls")
        self._min_max(lows, highs)
        if first_grader is not None:
            self._one_trial(sc, at, default_trials, first_grader)

    def _tool_order(self, arg: JSONObject, p: Path_) -> None:
        first, then = arg.get("first"), arg.get("then")
        if isinstance(first, str) and first == then:
            self._add((*p, "then"), "GE402", f"tool_order has first and then both {first!r}; "
                      "name two different tools (to expect a repeat, use min_tool_calls)")

    def _min_max(self, lows: dict[str, tuple[int, Path_]],
                 highs: dict[str, tuple[int, Path_]]) -> None:
        for name, (low, p) in lows.items():
            if name in highs and low > highs[name][0]:
                high, hp = highs[name]
                line = self.doc.position((*hp, "count"))[0]
                self._add((*p, "count"), "GE403", f"min_tool_calls count {low} for {name!r} is "
                          f"above its max_tool_calls count {high} (line {line}); "
                          "no run can pass both")

    def _grader(self, arg: JSONObject, p: Path_) -> None:
        name, below = arg.get("name"), arg.get("pass_below")
        if isinstance(name, str):
            problem = grader_name_problem(name)
            if problem:
                self._add((*p, "name"), "GE501", problem)
            else:
                line, col = self.doc.position((*p, "name"))
                self.graders.append(GraderRef(name, self.doc.path, line, col))
        # `not 0 <= x <= 1` also catches .nan, which the schema lets through.
        if isinstance(below, int | float) and not isinstance(below, bool) and not 0 <= below <= 1:
            self._add((*p, "pass_below"), "GE404", f"pass_below is {below}, outside 0..1; "
                      "it is a score threshold, e.g. 0.7")

    def _one_trial(self, sc: JSONObject, at: Path_, default_trials: JSON,
                   grader: Path_) -> None:
        trials = sc.get("trials", default_trials)
        if trials is not None and (trials != 1 or isinstance(trials, bool)):
            return  # more than one (or not a number: the schema says so)
        # Point at the scenario's own `trials: 1`, else at the grader that needs more.
        if "trials" in sc:
            where, why = (*at, "trials"), "trials: 1"
        else:
            where = grader
            why = "defaults.trials is 1" if default_trials == 1 else "trials defaults to 1"
        self._add(where, "GE405", f"scenario names a grader but runs one trial ({why}): "
                  "one trial cannot tell flaky from pass; set trials: 3 or more",
                  key="trials" not in sc, severity="warning")

    def _add(self, p: Path_, code: str, message: str, key: bool = False,
             severity: Severity = "error") -> None:
        self.findings.append(self.doc.finding(p, code, message, key=key, severity=severity))


def _bound(into: dict[str, tuple[int, Path_]], arg: JSONObject, p: Path_,
           lower: bool) -> None:
    """Keep the tightest min (largest) / max (smallest) count per tool name."""
    name, count = arg.get("name"), arg.get("count")
    if not isinstance(name, str) or not isinstance(count, int) or isinstance(count, bool):
        return
    old = into.get(name)
    if old is None or (count > old[0] if lower else count < old[0]):
        into[name] = (count, p)


def grader_name_problem(name: str) -> str | None:
    """Why ``name`` is not ``<file>.<function>`` (both plain identifiers), or None."""
    if _GRADER.match(name):
        file, _, function = name.partition(".")
        if file not in _KEYWORDS and function not in _KEYWORDS:
            return None
    shown = repr(name) if len(name) <= 60 else repr(name[:59] + "…")
    if not name:
        return "grader name is empty; write <file>.<function>, e.g. quality.answers"
    if "/" in name or "\\" in name:
        return (f"grader name {shown} holds a path; name the file in evals/graders "
                "without directories or .py: <file>.<function>")
    if "." not in name:
        return (f"grader name {shown} has no function; write <file>.<function>, "
                f"e.g. {name}.grade if it is a file")
    file, _, function = name.partition(".")
    if "." in function:
        return (f"grader name {shown} has more than one dot; it is read up to the first dot "
                f"(file {file!r}), so write exactly <file>.<function>")
    for part, what in ((file, "file"), (function, "function")):
        if not part:
            return f"grader name {shown} has an empty {what} part; write <file>.<function>"
        if not _IDENT.match(part):
            return (f"grader name {shown}: {what} part {part!r} is not an identifier; "
                    "use letters, digits and _ (not starting with a digit)")
        if part in _KEYWORDS:
            return f"grader name {shown}: {what} part {part!r} is a Python keyword; rename it"
    return None


def _what(value: JSON) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a plain string"
    if isinstance(value, bool):
        return "true/false"
    return "null" if value is None else "a number"
