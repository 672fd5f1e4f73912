"""Scoring: stored transcripts + rules -> assertion outcomes and verdicts (pure).

Nothing here runs a target or a grader. ``score_trial`` and ``verdict`` are what a run
calls as trials finish; ``apply_rules`` puts the rules of another revision on a stored
run and ``rescore`` recomputes every outcome and verdict from its stored transcripts
and expectations: ``score_run`` is the two. Runs come in through ``artifact.load``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from gitevals.model import Case, Scenario
from gitevals.run.artifact import (
    JSON,
    AssertionOutcome,
    CaseRun,
    ErrorRecord,
    GraderAnswer,
    JSONObject,
    Run,
    ScenarioRun,
    Transcript,
    Trial,
    Verdict,
    VerdictName,
)
from gitevals.run.assertions import CHECKS, Check, check

_GRADER_SHAPE = 'return True/False or {"pass": bool, "score": number, "why": str}'
_ANSWER_KEYS = frozenset(("pass", "score", "why"))


# -- graders ----------------------------------------------------------------------


def _outcome(kind: str, passed: bool, message: str, error: ErrorRecord | None = None,
             score: float | None = None, index: int = 0) -> AssertionOutcome:
    return {"index": index, "kind": kind, "passed": passed, "message": message,
            "error": error, "score": score}


def _is_number(x: object) -> bool:
    """A finite JSON number; an integer too large for a float (10**400) is not one."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _malformed(raw: JSON) -> str | None:
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


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def decide_grader(arg: JSON, answer: GraderAnswer | None) -> AssertionOutcome:
    """The outcome (``index`` 0) of ``grader: arg`` given its recorded answer.

    ``answer`` is a grader answer of the run or None when none was recorded. Passes
    when the grader said pass and, with ``pass_below``, its score is present and
    ``>= pass_below``. A bare ``True`` has no score, so it fails a ``pass_below``.
    Errors and malformed answers are errors, never decisions.
    """
    name = arg.get("name") if isinstance(arg, dict) else None
    head = f"grader {name}"
    if not isinstance(name, str):
        return _outcome("grader", False, f"grader: bad argument {arg!r}: missing 'name'",
                        {"kind": "assertion_error", "message": "grader needs a name"})
    pass_below = arg.get("pass_below") if isinstance(arg, dict) else None
    if pass_below is not None and not _is_number(pass_below):
        return _outcome("grader", False, f"{head}: bad argument pass_below {pass_below!r}",
                        {"kind": "assertion_error", "message": "pass_below must be a number"})
    if answer is None:
        msg = "no answer recorded (the rule is newer than the run: score with --regrade)"
        return _outcome("grader", False, f"{head}: {msg}",
                        {"kind": "grader_missing", "message": msg})
    err = answer.get("error")
    if err is not None:
        kind, text = str(err.get("kind", "grader_error")), str(err.get("message", ""))
        return _outcome("grader", False, f"{head}: {kind}: {text}",
                        {"kind": kind, "message": text})
    return _decide(head, pass_below, answer.get("raw"))


def _decide(head: str, pass_below: JSON, raw: JSON) -> AssertionOutcome:
    why = _malformed(raw)
    if why is not None:
        text = f"{why}; {_GRADER_SHAPE}"
        return _outcome("grader", False, f"{head}: malformed answer: {text}",
                        {"kind": "grader_malformed", "message": text})
    said = raw if isinstance(raw, bool) else isinstance(raw, dict) and raw["pass"] is True
    given = raw.get("score") if isinstance(raw, dict) else None
    score = float(given) if isinstance(given, (int, float)) else None
    reason = f" ({raw['why']})" if isinstance(raw, dict) and raw.get("why") else ""
    if not said:
        return _outcome("grader", False, f"{head}: judged fail{_at(score)}{reason}",
                        score=score)
    if pass_below is None:
        return _outcome("grader", True, f"{head}: judged pass{_at(score)}", score=score)
    if score is None:
        return _outcome("grader", False, f"{head}: judged pass without a score, "
                                         f"pass_below {pass_below} needs one")
    assert isinstance(pass_below, (int, float))
    if score < pass_below:
        return _outcome("grader", False, f"{head}: score {score:g} below pass_below "
                                         f"{pass_below}{reason}", score=score)
    return _outcome("grader", True, f"{head}: score {score:g} >= pass_below {pass_below}",
                    score=score)


def _at(score: float | None) -> str:
    return "" if score is None else f" (score {score:g})"


def _answer_for(index: int, name: JSON, graders: list[GraderAnswer]) -> GraderAnswer | None:
    """The recorded answer for assertion ``index``: same index and name, else same name.

    Matching by name keeps stored answers usable when rules from another revision
    moved the grader assertion to another position.
    """
    same_name = [g for g in graders if g["name"] == name]
    for g in same_name:
        if g["index"] == index:
            return g
    return same_name[0] if same_name else None


# -- trials and verdicts ------------------------------------------------------------

#: One assertion of ``expect`` split once: (index, kind, arg, check).
_Step = tuple[int, str, JSON, Check | None]


def score_trial(expect: list[JSONObject], transcript: Transcript, graders: list[GraderAnswer],
                error: ErrorRecord | None, advisory: frozenset[str] = frozenset()
                ) -> tuple[list[AssertionOutcome], bool]:
    """Outcomes of ``expect`` on one trial, and whether the trial passed.

    ``error`` is the trial's infrastructure error: it fails the trial (and any
    ``no_error`` assertion) whatever the assertions say. Outcomes are in ``expect`` order.
    Outcomes of graders named in ``advisory`` are marked so and never fail the trial.
    """
    return _score(_steps(expect), transcript, graders, error, advisory)


def _steps(expect: list[JSONObject]) -> list[_Step]:
    """``expect`` split once into steps: a scenario's trials share them."""
    out: list[_Step] = []
    for i, item in enumerate(expect):
        kind, arg = _split(item)
        out.append((i, kind, arg, CHECKS.get(kind)))
    return out


def _score(steps: list[_Step], transcript: Transcript, graders: list[GraderAnswer],
           error: ErrorRecord | None, advisory: frozenset[str] = frozenset()
           ) -> tuple[list[AssertionOutcome], bool]:
    records = [_assess(step, transcript, graders, error) for step in steps]
    if advisory:
        for step, rec in zip(steps, records, strict=True):
            if step[1] == "grader" and isinstance(step[2], dict) \
                    and step[2].get("name") in advisory:
                rec["advisory"] = True
    return records, error is None and all(r["passed"] or r.get("advisory") for r in records)


def _assess(step: _Step, transcript: Transcript, graders: list[GraderAnswer],
            error: ErrorRecord | None) -> AssertionOutcome:
    """The outcome of one assertion on one trial (the hot path of re-scoring)."""
    index, kind, arg, fn = step
    if kind == "grader":
        rec = _grade(arg, graders, error, index)
    elif kind == "no_error" and arg is True and error is not None:
        rec = _outcome(kind, False, f"no_error: {_error_text(error)}")
    else:
        try:  # ``check``'s slower, exception-proof path only when the check raises
            out = fn(arg, transcript) if fn is not None else check(kind, arg, transcript)
        except Exception:
            out = check(kind, arg, transcript)
        rec = _outcome(kind, out.passed, out.message,
                       {"kind": out.error, "message": out.message} if out.error else None)
    rec["index"] = index
    return rec


def _grade(arg: JSON, graders: list[GraderAnswer], error: ErrorRecord | None,
           index: int) -> AssertionOutcome:
    name = arg.get("name") if isinstance(arg, dict) else None
    answer = _answer_for(index, name, graders)
    if answer is None and error is not None:
        # A trial lost to an infrastructure error is not graded; its own error is the
        # one to count, not a "missing" answer on top of it.
        return _outcome("grader", False, f"grader {name}: not graded ({_error_text(error)})")
    return decide_grader(arg, answer)


def _split(item: JSONObject) -> tuple[str, JSON]:
    """An ``expect`` item ``{kind: arg}`` -> (kind, arg); a bad item becomes an unknown kind."""
    if isinstance(item, dict) and len(item) == 1:
        for kind, arg in item.items():
            return str(kind), arg
    return repr(item), None


def _error_text(error: ErrorRecord) -> str:
    return f"{error.get('kind', 'error')}: {error.get('message', '')}".rstrip(": ")


def trial_errors(result: Trial) -> list[str]:
    """Error kinds of one trial: its own, then each assertion's."""
    kinds = []
    if result["error"] is not None:
        kinds.append(str(result["error"].get("kind", "error")))
    for a in result["assertions"]:
        if a["error"] is not None and not a.get("advisory"):
            kinds.append(str(a["error"].get("kind", "error")))
    return kinds


def _first_failure(result: Trial) -> str | None:
    """What a reader should see first about a failed trial: the infrastructure error,
    else the error the target itself reported (an assertion it broke, such as a hook
    that "never ran", is only a consequence), else the first failed assertion."""
    if result["error"] is not None:
        return _error_text(result["error"])
    reported = result["transcript"].get("error")
    if reported is not None:
        text = reported if isinstance(reported, str) else json.dumps(reported, sort_keys=True)
        # the verdict keeps a line, not a copy: the whole error stays in the transcript
        return "target error: " + (text if len(text) <= 300 else text[:299] + "…")
    for a in result["assertions"]:
        if not a["passed"] and not a.get("advisory"):
            return a["message"]
    return None


def verdict(results: list[Trial]) -> Verdict:
    """The verdict of one scenario from its scored trials (trial order).

    pass: every trial passed; flaky: some did; fail: none did; broken: none did and
    every trial carries an infrastructure error (its own, or a grader/assertion
    error); not_run: no trial ran.
    """
    trials = len(results)
    passes = sum(1 for r in results if r["passed"] is True)
    errors: dict[str, int] = {}
    all_errored = True
    first = None
    for r in results:
        kinds = trial_errors(r)
        all_errored = all_errored and bool(kinds)
        for k in kinds:
            errors[k] = errors.get(k, 0) + 1
        if first is None and r["passed"] is not True:
            first = _first_failure(r) or "trial failed"
    name: VerdictName
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


# -- whole runs ---------------------------------------------------------------------


def expect_of(s: Scenario) -> list[JSONObject]:
    """A scenario's rules as the run stores them: one single-key object per assertion."""
    return [a.as_dict() for a in s.expect]


def advisory_graders(run: Run) -> frozenset[str]:
    """The graders the run's ``judge_calibration`` marks advisory (none in older runs)."""
    return frozenset(name for name, c in run.get("judge_calibration", {}).items()
                     if c.get("status") == "advisory")


def rescore_trials(expect: list[JSONObject], results: list[Trial],
                   advisory: frozenset[str] = frozenset()) -> list[Trial]:
    """``results`` with outcomes and ``passed`` recomputed under ``expect``, the failures
    of the ``advisory`` graders shown but not counted."""
    steps = _steps(expect)
    out = []
    for r in results:
        assertions, passed = _score(steps, r["transcript"], r["graders"], r["error"],
                                    advisory)
        trial: Trial = {**r, "assertions": assertions, "passed": passed}
        out.append(trial)
    return out


def _added(s: Scenario) -> ScenarioRun:
    return {"id": s.id, "user": list(s.user), "expect": expect_of(s), "trials": s.trials,
            "timeout": s.timeout, "results": [], "rules": "added", "verdict": verdict([])}


def _apply_to_case(case: CaseRun, rule: Case | None) -> CaseRun:
    by_id = {s.id: s for s in rule.scenarios} if rule is not None else {}
    scenarios: list[ScenarioRun] = []
    for s in case["scenarios"]:
        r = by_id.get(s["id"])
        if r is None:
            kept: ScenarioRun = {**s, "rules": "stored"}
            scenarios.append(kept)
        else:
            applied: ScenarioRun = {**s, "expect": expect_of(r), "rules": "applied"}
            scenarios.append(applied)
    seen = {s["id"] for s in case["scenarios"]}
    scenarios += [_added(s) for s in by_id.values() if s.id not in seen]
    out: CaseRun = {**case, "scenarios": scenarios}
    return out


def _new_case(rule: Case) -> CaseRun:
    return {"name": rule.name, "path": rule.path, "blob": None,
            "scenarios": [_added(s) for s in rule.scenarios]}


def apply_rules(run: Run, rules: Mapping[str, Case]) -> Run:
    """``run`` with the expectations of ``rules`` (case name -> Case, e.g. another revision's).

    Each stored scenario takes the ``expect`` of the scenario of the same case name and
    id (``"rules": "applied"``); a scenario the rules lack keeps its own (``"stored"``);
    a scenario only the rules have is added with no results (``"added"``), and so is a
    whole case when the run selected all cases. Outcomes are not recomputed: ``rescore``
    does that (so ``score --regrade`` can grade the expectations scoring will score).
    """
    # a task's entry takes its rules from task definitions (gitevals.run.tasks.with_rules)
    cases = [c if "task" in c else _apply_to_case(c, rules.get(c["name"]))
             for c in run["cases"]]
    if not run["options"]["cases"]:
        seen = {c["name"] for c in cases}
        cases += [_new_case(r) for n, r in rules.items() if n not in seen]
        cases.sort(key=lambda c: c["name"])
    out: Run = {**run, "cases": cases}
    return out


def rescore(run: Run) -> Run:
    """A new run whose outcomes, ``passed`` flags and verdicts are recomputed from each
    scenario's stored transcripts, grader answers and ``expect``.

    Pure and deterministic: ``run`` is not modified (transcripts and grader answers are
    shared with it, not copied).
    """
    cases = []
    advisory = advisory_graders(run)
    for c in run["cases"]:
        if "task" in c:  # judged from its stored rewards, not by assertions
            from gitevals.run.tasks import rescore_task

            cases.append(rescore_task(c))
            continue
        scenarios = []
        for s in c["scenarios"]:
            results = rescore_trials(s["expect"], s["results"], advisory)
            scored: ScenarioRun = {**s, "results": results, "verdict": verdict(results)}
            scenarios.append(scored)
        case: CaseRun = {**c, "scenarios": scenarios}
        cases.append(case)
    out: Run = {**run, "cases": cases}
    if "goldens" in run:  # each golden decided again from its stored grader answer
        from gitevals.run.goldens import rescore as rescore_goldens

        out["goldens"] = rescore_goldens(run["goldens"])
    return out


def score_run(run: Run, rules: Mapping[str, Case] | None = None) -> Run:
    """``run`` re-scored: by its own stored expectations, or by ``rules`` (``apply_rules``)."""
    return rescore(apply_rules(run, rules) if rules is not None else run)
