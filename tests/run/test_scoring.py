"""Scoring: grader answers, trials, verdicts, whole artifacts (pure), loading artifacts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gitevals.errors import ArtifactError
from gitevals.model import load_case
from gitevals.run.artifact import load as load_artifact
from gitevals.run.artifact import validate as validate_artifact
from gitevals.run.scoring import decide_grader, score_run, score_trial, verdict
from tests.support.artifacts import (
    BAD,
    artifact,
    grader_answer,
    result,
    sample,
    scenario,
    transcript,
)

# -- decide_grader -----------------------------------------------------------------

Q = "quality.answers"
GRADER_TABLE: list[tuple[str, dict[str, Any], Any, Any, bool, str, str | None]] = [
    # id, arg, raw, error, passed, message, error kind
    ("true", {"name": Q}, True, None, True, f"grader {Q}: judged pass", None),
    ("false", {"name": Q}, False, None, False, f"grader {Q}: judged fail", None),
    ("dict-pass", {"name": Q}, {"pass": True, "score": 0.8}, None, True,
     f"grader {Q}: judged pass (score 0.8)", None),
    ("score-above-pass_below", {"name": Q, "pass_below": 0.7}, {"pass": True, "score": 0.8},
     None, True, f"grader {Q}: score 0.8 >= pass_below 0.7", None),
    ("score-equal-pass_below", {"name": Q, "pass_below": 0.8}, {"pass": True, "score": 0.8},
     None, True, f"grader {Q}: score 0.8 >= pass_below 0.8", None),
    ("score-below-pass_below", {"name": Q, "pass_below": 0.9},
     {"pass": True, "score": 0.8, "why": "terse"}, None, False,
     f"grader {Q}: score 0.8 below pass_below 0.9 (terse)", None),
    ("own-pass-false-wins", {"name": Q, "pass_below": 0.1},
     {"pass": False, "score": 0.95, "why": "wrong city"}, None, False,
     f"grader {Q}: judged fail (score 0.95) (wrong city)", None),
    ("score-missing-with-pass_below", {"name": Q, "pass_below": 0.7}, {"pass": True}, None,
     False, f"grader {Q}: judged pass without a score, pass_below 0.7 needs one", None),
    ("bare-true-with-pass_below", {"name": Q, "pass_below": 0.7}, True, None, False,
     f"grader {Q}: judged pass without a score, pass_below 0.7 needs one", None),
    ("yes", {"name": Q}, "yes", None, False,
     f"grader {Q}: malformed answer: returned 'yes'; return True/False or "
     '{"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("pass-string", {"name": Q}, {"pass": "true"}, None, False,
     f"grader {Q}: malformed answer: returned {{'pass': 'true'}}, not a bool; return "
     'True/False or {"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("none", {"name": Q}, None, None, False,
     f"grader {Q}: malformed answer: returned None; return True/False or "
     '{"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("score-string", {"name": Q}, {"pass": True, "score": "high"}, None, False,
     f"grader {Q}: malformed answer: returned score 'high', not a number; return "
     'True/False or {"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("extra-key", {"name": Q}, {"pass": True, "reason": "x"}, None, False,
     f"grader {Q}: malformed answer: returned a dict with unexpected key 'reason'; return "
     'True/False or {"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("one-is-not-true", {"name": Q}, 1, None, False,
     f"grader {Q}: malformed answer: returned 1; return True/False or "
     '{"pass": bool, "score": number, "why": str}', "grader_malformed"),
    ("error-recorded", {"name": Q}, None,
     {"kind": "grader_error", "message": "ZeroDivisionError: division by zero"}, False,
     f"grader {Q}: grader_error: ZeroDivisionError: division by zero", "grader_error"),
    ("timeout-recorded", {"name": Q, "pass_below": 0.5}, None,
     {"kind": "grader_timeout", "message": "ran past 30 s"}, False,
     f"grader {Q}: grader_timeout: ran past 30 s", "grader_timeout"),
]


@pytest.mark.parametrize(("arg", "raw", "error", "passed", "message", "kind"),
                         [c[1:] for c in GRADER_TABLE], ids=[c[0] for c in GRADER_TABLE])
def test_decide_grader(arg: dict[str, Any], raw: Any, error: Any, passed: bool, message: str,
                      kind: str | None) -> None:
    rec = decide_grader(arg, grader_answer(raw, error=error))
    assert (rec["passed"], rec["message"]) == (passed, message)
    assert (rec["error"] or {}).get("kind") == kind
    assert rec["kind"] == "grader"


def test_decide_grader_records_the_score() -> None:
    rec = decide_grader({"name": Q, "pass_below": 0.9}, grader_answer({"pass": True,
                                                                      "score": 0.8}))
    assert rec["score"] == 0.8
    assert decide_grader({"name": Q}, grader_answer(True))["score"] is None


@pytest.mark.parametrize("arg", [{"pass_below": 0.5}, {"name": Q, "pass_below": "0.7"},
                                 "quality.answers", None], ids=["no-name", "pass_below-string",
                                                                "string", "none"])
def test_decide_grader_bad_argument_is_an_assertion_error(arg: Any) -> None:
    rec = decide_grader(arg, grader_answer({"pass": True, "score": 0.9}))
    assert rec["passed"] is False
    assert rec["error"]["kind"] == "assertion_error"


def test_decide_grader_without_an_answer_is_missing() -> None:
    rec = decide_grader({"name": Q}, None)
    assert rec["passed"] is False
    assert rec["error"]["kind"] == "grader_missing"
    assert rec["message"] == (f"grader {Q}: no answer recorded (the rule is newer than the "
                              "run: score with --regrade)")


# -- score_trial --------------------------------------------------------------------


def test_score_trial_records_every_assertion_in_order() -> None:
    expect = [{"final_answer_contains": "Paris"}, {"tool_called": {"name": "shell__run"}},
              {"grader": {"name": Q, "pass_below": 0.5}}]
    out, passed = score_trial(expect, transcript("Paris"),
                              [grader_answer({"pass": True, "score": 0.9}, index=2)], None)
    assert [a["index"] for a in out] == [0, 1, 2]
    assert [a["passed"] for a in out] == [True, False, True]
    assert out[1] == {"index": 1, "kind": "tool_called", "passed": False,
                                    "message": "tool_called shell__run: never called",
                                    "error": None, "score": None}
    assert out[2]["score"] == 0.9
    assert passed is False


def test_score_trial_infrastructure_error_fails_the_trial_and_no_error() -> None:
    err = {"kind": "target_timeout", "message": "no reply within 300s"}
    out, passed = score_trial([{"final_answer_contains": "Paris"}, {"no_error": True}],
                              transcript("Paris"), [], err)
    assert passed is False
    assert out[0]["passed"] is True
    assert out[1]["message"] == "no_error: target_timeout: no reply within 300s"


def test_score_trial_errored_trial_is_not_graded_and_counts_one_error() -> None:
    err = {"kind": "target_crash", "message": "exited with status 1"}
    expect = [{"grader": {"name": Q}}]
    res = result(0, expect, transcript(None), [], err)
    assert res["assertions"][0]["message"] == (f"grader {Q}: not graded (target_crash: "
                                               "exited with status 1)")
    assert res["assertions"][0]["error"] is None
    assert verdict([res])["errors"] == {"target_crash": 1}


def test_score_trial_matches_grader_answers_by_name_when_indexes_moved() -> None:
    expect = [{"no_error": True}, {"grader": {"name": Q}}, {"grader": {"name": "x.y"}}]
    answers = [grader_answer(True, index=0, name=Q)]  # recorded when the grader was first
    out, _ = score_trial(expect, transcript(), answers, None)
    assert out[1]["passed"] is True
    assert out[2]["error"]["kind"] == "grader_missing"


@pytest.mark.parametrize("item", [{}, {"a": 1, "b": 2}, "final_answer_contains", None],
                         ids=["empty", "two-keys", "string", "none"])
def test_score_trial_bad_expect_item_is_an_assertion_error(item: Any) -> None:
    out, passed = score_trial([item], transcript(), [], None)
    assert passed is False
    assert out[0]["error"]["kind"] == "assertion_error"


def test_score_trial_with_no_expectations_passes_unless_errored() -> None:
    assert score_trial([], transcript(), [], None) == ([], True)
    crash = {"kind": "target_crash", "message": "x"}
    assert score_trial([], transcript(), [], crash)[1] is False


# -- verdict --------------------------------------------------------------------------

NO_ERROR = {"error": None}
OK = {"passed": True, "error": None, "assertions": [], "transcript": NO_ERROR}
FAILED = {"passed": False, "error": None, "transcript": NO_ERROR,
          "assertions": [{"passed": False, "message": "final_answer_contains 'Paris': "
                          "not in the answer 'Lyon'", "error": None}]}
CRASHED = {"passed": False, "error": {"kind": "target_crash", "message": "exited with 1"},
           "assertions": [], "transcript": NO_ERROR}
GRADER_ERR = {"passed": False, "error": None, "transcript": NO_ERROR,
              "assertions": [{"passed": True, "message": "m", "error": None},
                             {"passed": False, "message": "grader q.a: grader_error: boom",
                              "error": {"kind": "grader_error", "message": "boom"}}]}
# A python target that raised: its reply carried the error; the hook it never reached
# failed too, but the error is what a reader needs to see.
RAISED = {"passed": False, "error": None, "transcript": {"error": "RuntimeError: kaboom"},
          "assertions": [{"passed": False, "message": "hook_called guard deny: never ran",
                          "error": None}]}
VERDICTS: list[tuple[str, list[dict[str, Any]], str, int, str | None, dict[str, int]]] = [
    ("pass", [OK, OK, OK], "pass", 3, None, {}),
    ("flaky", [OK, FAILED, OK], "flaky", 2, FAILED["assertions"][0]["message"], {}),
    ("fail", [FAILED, FAILED], "fail", 0, FAILED["assertions"][0]["message"], {}),
    ("fail-some-errors", [CRASHED, FAILED], "fail", 0, "target_crash: exited with 1",
     {"target_crash": 1}),
    ("broken", [CRASHED, GRADER_ERR], "broken", 0, "target_crash: exited with 1",
     {"grader_error": 1, "target_crash": 1}),
    ("flaky-with-crash", [OK, CRASHED], "flaky", 1, "target_crash: exited with 1",
     {"target_crash": 1}),
    ("target-error-before-assertions", [RAISED], "fail", 0,
     "target error: RuntimeError: kaboom", {}),
    ("not_run", [], "not_run", 0, None, {}),
    ("one-trial-pass", [OK], "pass", 1, None, {}),
    ("one-trial-fail", [FAILED], "fail", 0, FAILED["assertions"][0]["message"], {}),
    ("one-trial-broken", [CRASHED], "broken", 0, "target_crash: exited with 1",
     {"target_crash": 1}),
]


@pytest.mark.parametrize(("results", "name", "passes", "first", "errors"),
                         [v[1:] for v in VERDICTS], ids=[v[0] for v in VERDICTS])
def test_verdict(results: list[dict[str, Any]], name: str, passes: int, first: str | None,
                 errors: dict[str, int]) -> None:
    v = verdict(results)
    assert v == {"verdict": name, "passes": passes, "trials": len(results),
                 "pass_at_k": passes > 0, "pass_hat_k": bool(results) and passes == len(results),
                 "first_failure": first, "errors": errors}


# -- score_run -------------------------------------------------------------------


def test_score_run_is_pure_and_deterministic() -> None:
    art = sample()
    before = copy.deepcopy(art)
    one, two = score_run(art), score_run(art)
    assert art == before
    assert one is not art
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert one == art  # stored expectations give the stored outcomes back


def test_score_run_recomputes_tampered_outcomes() -> None:
    art = sample()
    s = art["cases"][0]["scenarios"][2]
    s["results"][0]["passed"] = True
    s["results"][0]["assertions"][0]["passed"] = True
    s["verdict"] = {**s["verdict"], "verdict": "pass"}
    out = score_run(art)
    assert out["cases"][0]["scenarios"][2]["verdict"]["verdict"] == "fail"
    assert out["cases"][0]["scenarios"][2]["results"][0]["passed"] is False
    assert s["verdict"]["verdict"] == "pass"  # the input is untouched


def _case(name: str, scenarios: list[dict[str, Any]]) -> Any:
    return load_case(f"evals/cases/{name}.yaml", {"defaults": {"trials": 2},
                                                  "scenarios": scenarios})


def test_score_run_with_rules_of_another_revision() -> None:
    rules = {"tone": _case("tone", [
        {"id": "capital", "user": "q", "expect": [{"final_answer_contains": "Lyon"}]},
        {"id": "wrong", "user": "q", "expect": [{"final_answer_not_contains": "Paris"}]},
        {"id": "brand-new", "user": "q", "expect": [{"no_error": True}]},
    ])}
    out = score_run(sample(), rules)
    tone = {s["id"]: s for s in out["cases"][0]["scenarios"]}
    assert [c["name"] for c in out["cases"]] == ["tone", "tools"]
    assert tone["capital"]["verdict"]["verdict"] == "fail"
    assert tone["capital"]["expect"] == [{"final_answer_contains": "Lyon"}]
    assert tone["capital"]["rules"] == "applied"
    assert tone["wrong"]["verdict"]["verdict"] == "pass"
    assert tone["flaky"]["verdict"]["verdict"] == "flaky"
    assert tone["flaky"]["rules"] == "stored"
    assert tone["brand-new"]["verdict"]["verdict"] == "not_run"
    assert tone["brand-new"]["rules"] == "added"
    assert tone["brand-new"]["results"] == []
    assert out["cases"][1]["scenarios"][0]["rules"] == "stored"  # tools: not in the rules
    assert validate_artifact(out) is None


def test_score_run_adds_cases_only_the_rules_have() -> None:
    rules = {"new": _case("new", [{"id": "s", "user": "q", "expect": []}])}
    out = score_run(sample(), rules)
    assert [c["name"] for c in out["cases"]] == ["new", "tone", "tools"]
    assert out["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "not_run"
    assert validate_artifact(out) is None
    picked = sample()
    picked["options"]["cases"] = ["tone"]  # the run chose its cases: others were not asked
    assert [c["name"] for c in score_run(picked, rules)["cases"]] == ["tone", "tools"]


def test_score_run_odd_stored_transcripts_still_score() -> None:
    art = sample()
    art["cases"][0]["scenarios"][0]["results"][0]["transcript"] = {"final_answer": 3}
    art["cases"][0]["scenarios"][0]["results"][1]["transcript"] = {}
    out = score_run(art)
    assert out["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "fail"


# -- load_artifact ---------------------------------------------------------------------


def test_load_artifact_reads_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(sample(), indent=1))
    assert load_artifact(path) == sample()
    assert load_artifact(str(path)) == sample()
    assert load_artifact(path.read_bytes()) == sample()


@pytest.mark.parametrize(("data", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_load_artifact_refuses_with_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(data)
    with pytest.raises(ArtifactError) as exc:
        load_artifact(path)
    assert str(exc.value) == f"{path}: not a gitevals run artifact: {message}"
    assert "\n" not in str(exc.value)


def test_load_artifact_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"nope\.json: cannot read: No such file"):
        load_artifact(tmp_path / "nope.json")


def test_sample_is_valid_and_scored_as_built() -> None:
    art = sample()
    assert validate_artifact(art) is None
    verdicts = [s["verdict"]["verdict"] for c in art["cases"] for s in c["scenarios"]]
    assert verdicts == ["pass", "flaky", "fail", "broken"]


def test_grader_rule_added_later_is_broken_until_regraded() -> None:
    rules = {"tone": _case("tone", [
        {"id": "capital", "user": "q",
         "expect": [{"final_answer_contains": "Paris"}, {"grader": {"name": Q}}]},
    ])}
    capital = score_run(sample(), rules)["cases"][0]["scenarios"][0]
    assert capital["verdict"]["verdict"] == "broken"
    assert capital["verdict"]["errors"] == {"grader_missing": 2}
    assert capital["verdict"]["first_failure"].startswith(f"grader {Q}: no answer recorded")


def test_stored_grader_answers_are_rejudged_against_todays_pass_below() -> None:
    judged = [{"grader": {"name": Q, "pass_below": 0.9}}]
    answers = [grader_answer({"pass": True, "score": 0.8})]
    art = artifact({"tone": [scenario("judged", judged, [
        result(0, judged, transcript(), answers)])]})
    assert art["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "fail"
    rules = {"tone": _case("tone", [{"id": "judged", "user": "q", "expect": [
        {"grader": {"name": Q, "pass_below": 0.75}}]}])}
    again = score_run(art, rules)["cases"][0]["scenarios"][0]
    assert again["verdict"]["verdict"] == "pass"
    assert again["results"][0]["assertions"][0]["score"] == 0.8


@pytest.mark.parametrize(("raw", "pass_below", "message"), [
    ({"pass": True, "score": 10**400}, None,
     f"grader {Q}: malformed answer: returned score {repr(10**400)[:59]}…, not a number; "
     'return True/False or {"pass": bool, "score": number, "why": str}'),
    ({"pass": True, "score": 0.5}, 10**400,
     f"grader {Q}: bad argument pass_below {10**400!r}"),
], ids=["score-10e400", "pass-below-10e400"])
def test_numbers_too_large_for_a_float_are_not_decisions(raw: Any, pass_below: Any,
                                                          message: str) -> None:
    arg = {"name": Q} if pass_below is None else {"name": Q, "pass_below": pass_below}
    rec = decide_grader(arg, grader_answer(raw))
    assert rec["passed"] is False and rec["message"] == message
