"""Scoring: stored transcripts + rules -> assertion outcomes and verdicts (pure).

Nothing here runs a target or a grader. ``score_trial`` and ``verdict`` are what a run
calls as trials finish; ``score_artifact`` recomputes a whole stored artifact, with its
own stored expectations or with the rules of another revision; ``load_artifact`` is
the one door through which a stored artifact comes in (validated, one-line errors).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gitevals.errors import ArtifactError
from gitevals.model import Case, Scenario
from gitevals.run.assertions import CHECKS, Check, check

FORMAT = "gitevals-run/1"
VERDICTS = ("pass", "flaky", "fail", "broken", "not_run")
_GRADER_SHAPE = 'return True/False or {"pass": bool, "score": number, "why": str}'
_ANSWER_KEYS = frozenset(("pass", "score", "why"))


# -- graders ----------------------------------------------------------------------


def _record(kind: str, passed: bool, message: str, error: dict[str, str] | None = None,
            score: float | None = None) -> dict[str, Any]:
    return {"kind": kind, "passed": passed, "message": message, "error": error, "score": score}


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _malformed(raw: Any) -> str | None:
    """Why ``raw`` is not a grader decision, or None when it is one."""
    if isinstance(raw, bool):
        return None
    if not isinstance(raw, dict):
        return f"returned {_short(raw)}"
    extra = sorted(str(k) for k in raw if k not in _ANSWER_KEYS)
    if extra:
        return f"returned a dict with unexpected key {extra[0]!r}"
    if not isinstance(raw.get("pass"), bool):
        return f"returned {{'pass': {_short(raw.get('pass'))}}}, not a bool"
    if "score" in raw and raw["score"] is not None and not _is_number(raw["score"]):
        return f"returned score {_short(raw['score'])}, not a number"
    if "why" in raw and raw["why"] is not None and not isinstance(raw["why"], str):
        return f"returned why {_short(raw['why'])}, not a string"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def judge_grader(arg: Any, answer: dict[str, Any] | None) -> dict[str, Any]:
    """The assertion record (without ``index``) of ``grader: arg`` given its recorded answer.

    ``answer`` is a grader record of the artifact (``raw``, ``error``) or None when no
    answer was recorded. Passes when the grader said pass and, with ``pass_below``, its
    score is present and ``>= pass_below``. A bare ``True`` has no score, so it fails a
    ``pass_below``. Errors and malformed answers are errors, never decisions.
    """
    name = arg.get("name") if isinstance(arg, dict) else None
    head = f"grader {name}"
    if not isinstance(name, str):
        return _record("grader", False, f"grader: bad argument {arg!r}: missing 'name'",
                       {"kind": "assertion_error", "message": "grader needs a name"})
    pass_below = arg.get("pass_below")
    if pass_below is not None and not _is_number(pass_below):
        return _record("grader", False, f"{head}: bad argument pass_below {pass_below!r}",
                       {"kind": "assertion_error", "message": "pass_below must be a number"})
    if answer is None:
        msg = "no answer recorded (the rule is newer than the run: score with --regrade)"
        return _record("grader", False, f"{head}: {msg}", {"kind": "grader_missing",
                                                           "message": msg})
    err = answer.get("error")
    if err is not None:
        kind = str(err.get("kind", "grader_error")) if isinstance(err, dict) else "grader_error"
        text = str(err.get("message", "")) if isinstance(err, dict) else str(err)
        return _record("grader", False, f"{head}: {kind}: {text}",
                       {"kind": kind, "message": text})
    return _decide(head, pass_below, answer.get("raw"))


def _decide(head: str, pass_below: Any, raw: Any) -> dict[str, Any]:
    why = _malformed(raw)
    if why is not None:
        text = f"{why}; {_GRADER_SHAPE}"
        return _record("grader", False, f"{head}: malformed answer: {text}",
                       {"kind": "grader_malformed", "message": text})
    said = raw if isinstance(raw, bool) else raw["pass"]
    score = None if isinstance(raw, bool) else raw.get("score")
    score = float(score) if score is not None else None
    reason = f" ({raw['why']})" if isinstance(raw, dict) and raw.get("why") else ""
    if not said:
        return _record("grader", False, f"{head}: judged fail{_at(score)}{reason}", score=score)
    if pass_below is None:
        return _record("grader", True, f"{head}: judged pass{_at(score)}", score=score)
    if score is None:
        return _record("grader", False, f"{head}: judged pass without a score, "
                                        f"pass_below {pass_below} needs one", score=None)
    if score < pass_below:
        return _record("grader", False, f"{head}: score {score:g} below pass_below "
                                        f"{pass_below}{reason}", score=score)
    return _record("grader", True, f"{head}: score {score:g} >= pass_below {pass_below}",
                   score=score)


def _at(score: float | None) -> str:
    return "" if score is None else f" (score {score:g})"


def _answer_for(index: int, name: Any, graders: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The recorded answer for assertion ``index``: same index and name, else same name.

    Matching by name keeps stored answers usable when rules from another revision
    moved the grader assertion to another position.
    """
    same_name = [g for g in graders if isinstance(g, dict) and g.get("name") == name]
    for g in same_name:
        if g.get("index") == index:
            return g
    return same_name[0] if same_name else None


# -- trials and verdicts ------------------------------------------------------------


def score_trial(expect: list[dict[str, Any]], transcript: dict[str, Any],
                graders: list[dict[str, Any]], error: dict[str, Any] | None) -> dict[str, Any]:
    """Outcomes of ``expect`` on one trial: ``{"assertions": [...], "passed": bool}``.

    ``error`` is the trial's infrastructure error: it fails the trial (and any
    ``no_error`` assertion) whatever the assertions say. Records are in ``expect`` order.
    """
    return _score(_plan(expect), transcript, graders, error)


_Plan = list[tuple[int, str, Any, Check | None]]


def _plan(expect: list[dict[str, Any]]) -> _Plan:
    """``expect`` split once into (index, kind, arg, check): a scenario's trials share it."""
    out: _Plan = []
    for i, item in enumerate(expect):
        kind, arg = _split(item)
        out.append((i, kind, arg, CHECKS.get(kind)))
    return out


def _score(plan: _Plan, transcript: dict[str, Any], graders: list[dict[str, Any]],
           error: dict[str, Any] | None) -> dict[str, Any]:
    records = [_assess(step, transcript, graders, error) for step in plan]
    return {"assertions": records,
            "passed": error is None and all(r["passed"] for r in records)}


def _assess(step: tuple[int, str, Any, Check | None], transcript: dict[str, Any],
            graders: list[dict[str, Any]], error: dict[str, Any] | None) -> dict[str, Any]:
    """The record of one assertion on one trial (the hot path of re-scoring)."""
    index, kind, arg, fn = step
    if kind == "grader":
        rec = _grade(index, arg, graders, error)
    elif kind == "no_error" and arg is True and error is not None:
        rec = _record(kind, False, f"no_error: {_error_text(error)}")
    else:
        try:  # ``check``'s slower, exception-proof path only when the check raises
            out = fn(arg, transcript) if fn is not None else check(kind, arg, transcript)
        except Exception:
            out = check(kind, arg, transcript)
        rec = {"kind": kind, "passed": out.passed, "message": out.message, "score": None,
               "error": {"kind": out.error, "message": out.message} if out.error else None}
    rec["index"] = index
    return rec


def _grade(index: int, arg: Any, graders: list[dict[str, Any]],
           error: dict[str, Any] | None) -> dict[str, Any]:
    answer = _answer_for(index, _get(arg, "name"), graders)
    if answer is None and error is not None:
        # A trial lost to an infrastructure error is not graded; its own error is the
        # one to count, not a "missing" answer on top of it.
        return _record("grader", False, f"grader {_get(arg, 'name')}: not graded "
                                        f"({_error_text(error)})")
    return judge_grader(arg, answer)


def _split(item: Any) -> tuple[str, Any]:
    """An ``expect`` item ``{kind: arg}`` -> (kind, arg); a bad item becomes an unknown kind."""
    if isinstance(item, dict) and len(item) == 1:
        for kind, arg in item.items():
            return str(kind), arg
    return repr(item), None


def _get(arg: Any, key: str) -> Any:
    return arg.get(key) if isinstance(arg, dict) else None


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)
    return f"{error.get('kind', 'error')}: {error.get('message', '')}".rstrip(": ")


def _trial_errors(result: dict[str, Any]) -> list[str]:
    """Error kinds of one trial: its own, then each assertion's."""
    kinds = []
    err = result.get("error")
    if err is not None:
        kinds.append(str(err.get("kind", "error")) if isinstance(err, dict) else "error")
    for a in result.get("assertions") or ():
        if isinstance(a, dict) and a.get("error") is not None:
            e = a["error"]
            kinds.append(str(e.get("kind", "error")) if isinstance(e, dict) else "error")
    return kinds


def _first_failure(result: dict[str, Any]) -> str | None:
    if result.get("error") is not None:
        return _error_text(result["error"])
    for a in result.get("assertions") or ():
        if isinstance(a, dict) and not a.get("passed"):
            return str(a.get("message", ""))
    return None


def verdict(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict of one scenario from its scored trial results (trial order).

    pass: every trial passed; flaky: some did; fail: none did; broken: none did and
    every trial carries an infrastructure error (its own, or a grader/assertion
    error); not_run: no trial ran.
    """
    trials = len(results)
    passes = sum(1 for r in results if r.get("passed") is True)
    errors: dict[str, int] = {}
    all_errored = True
    first = None
    for r in results:
        kinds = _trial_errors(r)
        all_errored = all_errored and bool(kinds)
        for k in kinds:
            errors[k] = errors.get(k, 0) + 1
        if first is None and r.get("passed") is not True:
            first = _first_failure(r) or "trial failed"
    if trials == 0:
        name = "not_run"
    elif passes == trials:
        name = "pass"
    elif passes:
        name = "flaky"
    else:
        name = "broken" if all_errored else "fail"
    return {"verdict": name, "passes": passes, "trials": trials,
            "pass_at_k": passes > 0, "pass_hat_k": trials > 0 and passes == trials,
            "first_failure": first, "errors": dict(sorted(errors.items()))}


# -- whole artifacts ----------------------------------------------------------------


def _rescore_results(expect: list[dict[str, Any]],
                     results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plan = _plan(expect)
    return [{**r, **_score(plan, r.get("transcript") or {}, r.get("graders") or [],
                           r.get("error"))} for r in results]


def _scenario_from_rules(s: Scenario) -> dict[str, Any]:
    return {"id": s.id, "user": list(s.user), "expect": [a.as_dict() for a in s.expect],
            "trials": s.trials, "timeout": s.timeout, "results": [], "rules": "added",
            "verdict": verdict([])}


def _score_scenario(scenario: dict[str, Any], rule: Scenario | None,
                    rules_given: bool) -> dict[str, Any]:
    if rule is not None:
        expect = [a.as_dict() for a in rule.expect]
    else:
        expect = scenario.get("expect") or []
    results = _rescore_results(expect, scenario.get("results") or [])
    out = {**scenario, "expect": expect, "results": results, "verdict": verdict(results)}
    if rules_given:
        out["rules"] = "applied" if rule is not None else "stored"
    return out


def _score_case(case: dict[str, Any], rule: Case | None, rules_given: bool) -> dict[str, Any]:
    by_id = {s.id: s for s in rule.scenarios} if rule is not None else {}
    stored = case.get("scenarios") or []
    scenarios = [_score_scenario(s, by_id.get(s.get("id")), rules_given) for s in stored]
    seen = {s.get("id") for s in stored}
    scenarios += [_scenario_from_rules(s) for s in by_id.values() if s.id not in seen]
    return {**case, "scenarios": scenarios}


def _new_case(rule: Case) -> dict[str, Any]:
    return {"name": rule.name, "path": rule.path, "blob": None,
            "scenarios": [_scenario_from_rules(s) for s in rule.scenarios]}


def score_artifact(artifact: dict[str, Any],
                   rules: Mapping[str, Case] | None = None) -> dict[str, Any]:
    """A new artifact whose assertions, ``passed`` flags and verdicts are recomputed.

    With ``rules`` (case name -> Case, e.g. read from another revision), each stored
    scenario is scored by the scenario of the same case name and id, and marked
    ``"rules": "applied"``; a scenario the rules lack keeps its stored expectations
    (``"rules": "stored"``); a scenario only the rules have is added with no results
    (verdict ``not_run``, ``"rules": "added"``), and so is a whole case when the run
    selected all cases. Without ``rules`` each scenario's stored ``expect`` is used.

    Pure and deterministic: ``artifact`` is not modified (unchanged transcripts and
    grader answers are shared with it, not copied).
    """
    given = rules is not None
    rules = rules or {}
    cases = [_score_case(c, rules.get(c.get("name", "")), given)
             for c in artifact.get("cases") or []]
    options = artifact.get("options") or {}
    if given and not options.get("cases"):
        seen = {c.get("name") for c in cases}
        cases += [_new_case(r) for n, r in rules.items() if n not in seen]
        cases.sort(key=lambda c: str(c.get("name")))
    return {**artifact, "cases": cases}


# -- reading artifacts ----------------------------------------------------------------


def load_artifact(source: str | Path | bytes) -> dict[str, Any]:
    """Read and validate a run artifact (a path, or its bytes).

    Raises ``ArtifactError`` with one line ``<path>: not a gitevals run artifact: <what>``.
    """
    label = "<bytes>" if isinstance(source, bytes) else str(source)
    if isinstance(source, bytes):
        data = source
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise ArtifactError(f"{label}: cannot read: {exc.strerror or exc}") from exc
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{label}: not a gitevals run artifact: not JSON ({exc}); "
                            "give the .json file `gitevals run` wrote") from exc
    problem = validate_artifact(doc)
    if problem is not None:
        raise ArtifactError(f"{label}: not a gitevals run artifact: {problem}")
    return doc  # type: ignore[no-any-return]


SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "result.schema.json"
_compiled: list[Callable[[Any], Any]] = []


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _skeleton_schema() -> dict[str, Any]:
    """The schema with trial records left opaque: ``_result_problem`` checks those."""
    schema = _schema()
    schema["$defs"]["result"] = {"type": "object"}
    return schema


def _skeleton_validator() -> Callable[[Any], Any]:
    """The skeleton schema compiled to Python, once per process."""
    if not _compiled:
        import fastjsonschema

        _compiled.append(fastjsonschema.compile(_skeleton_schema(), use_formats=False))
    return _compiled[0]


def validate_artifact(doc: Any) -> str | None:
    """What is wrong with ``doc`` as a run artifact (one phrase), or None when it is one.

    Everything but the trial records is checked by the compiled schema; the (many)
    trial records by ``_result_problem``, a hand-written mirror of ``$defs/result``
    that is several times faster. jsonschema only explains what they rejected, so the
    message names the JSON path of the problem.
    """
    if not isinstance(doc, dict):
        return f"the top level is {type(doc).__name__}, not an object"
    fmt = doc.get("format")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith("gitevals-run/"):
            return (f"format {fmt!r} is not {FORMAT!r}, the one this gitevals reads; "
                    "upgrade gitevals")
        return f"no \"format\": {FORMAT!r} key; give the .json file `gitevals run` wrote"
    import fastjsonschema

    try:
        _skeleton_validator()(doc)
    except fastjsonschema.JsonSchemaValueException:
        return _explain(doc, _skeleton_schema(), "$")
    for ci, case in enumerate(doc["cases"]):
        for si, scenario in enumerate(case["scenarios"]):
            for ri, result in enumerate(scenario["results"]):
                if _result_problem(result):
                    where = f"$.cases[{ci}].scenarios[{si}].results[{ri}]"
                    sub = {"$defs": _schema()["$defs"], "$ref": "#/$defs/result"}
                    return _explain(result, sub, where)
    return None


def _explain(doc: Any, schema: dict[str, Any], where: str) -> str:
    import jsonschema

    err = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if err is None:  # the fast check and jsonschema disagree: still refuse, say where
        return f"at {where}: it does not match schemas/result.schema.json"
    where += "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    return f"at {where}: {err.message}; see schemas/result.schema.json"


_RESULT_KEYS = frozenset(("trial", "transcript", "error", "graders", "assertions", "passed"))
_TRANSCRIPT_KEYS = frozenset(("final_answer", "tool_calls", "hooks", "error", "turns",
                              "duration_ms"))
_GRADER_KEYS = frozenset(("index", "name", "raw", "error", "duration_ms"))
_ASSERTION_KEYS = frozenset(("index", "kind", "passed", "message", "error", "score"))
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


def _count_ok(x: Any) -> bool:
    return type(x) is int and x >= 0


def _ms_ok(x: Any) -> bool:
    return (type(x) is int or type(x) is float) and x >= 0


def _error_ok(e: Any) -> bool:
    if e is None:
        return True
    return (type(e) is dict and type(e.get("kind")) is str and _KIND.match(e["kind"]) is not None
            and type(e.get("message")) is str)


def _named_ok(items: Any) -> bool:
    """A list of objects each with a string ``name`` (tool calls, hooks)."""
    return type(items) is list and all(type(x) is dict and type(x.get("name")) is str
                                       for x in items)


def _transcript_ok(t: Any) -> bool:
    return (type(t) is dict and t.keys() >= _TRANSCRIPT_KEYS
            and (t["final_answer"] is None or type(t["final_answer"]) is str)
            and _named_ok(t["tool_calls"]) and _named_ok(t["hooks"])
            and type(t["turns"]) is list and _ms_ok(t["duration_ms"]))


def _grader_ok(g: Any) -> bool:
    return (type(g) is dict and g.keys() >= _GRADER_KEYS and _count_ok(g["index"])
            and type(g["name"]) is str and _error_ok(g["error"]) and _ms_ok(g["duration_ms"]))


def _assertion_ok(a: Any) -> bool:
    return (type(a) is dict and a.keys() >= _ASSERTION_KEYS and _count_ok(a["index"])
            and type(a["kind"]) is str and type(a["passed"]) is bool
            and type(a["message"]) is str and _error_ok(a["error"])
            and (a["score"] is None or type(a["score"]) in (int, float)))


def _result_problem(r: Any) -> bool:
    """True when trial record ``r`` breaks ``$defs/result`` (mirrors the schema by hand)."""
    return not (type(r) is dict and r.keys() >= _RESULT_KEYS and _count_ok(r["trial"])
                and type(r["passed"]) is bool and _error_ok(r["error"])
                and _transcript_ok(r["transcript"])
                and type(r["graders"]) is list and all(map(_grader_ok, r["graders"]))
                and type(r["assertions"]) is list and all(map(_assertion_ok, r["assertions"])))
