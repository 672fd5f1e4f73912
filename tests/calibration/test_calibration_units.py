"""The pure parts of calibration: which grader asks the judge, the status decision, the
labels reader, the record's sealed list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gitevals.calibration.labels import LabelsError, read_labels
from gitevals.calibration.record import already_sealed
from gitevals.calibration.status import status
from gitevals.graderfile import asks_judge
from gitevals.run.judge import verdict
from gitevals.settings import Judge

MODULE = b'''
def judged(t, case, run):
    return t.judge("x")

def via_helper(t, case, run):
    return _ask(t.llm)

def _ask(llm):
    return llm("x") == "yes"

def calls_helper(t, case, run):
    return _helper_that_asks(run)

def _helper_that_asks(run):
    import builtins
    return run.llm("y")

def hands_t_on(t, case, run):
    return other(t, run)

def deterministic(t, case, run):
    return normalize(run["final_answer"]) == "paris"

def normalize(text):
    return text.strip().lower()
'''


@pytest.mark.parametrize(("fn", "asks"), [
    ("judged", True), ("via_helper", True), ("calls_helper", True), ("hands_t_on", True),
    ("deterministic", False), ("missing", True),
], ids=lambda v: str(v))
def test_which_grader_asks_the_judge(fn: str, asks: bool) -> None:
    assert asks_judge(MODULE, fn) is asks


@pytest.mark.parametrize(("text", "said"), [
    ("PASS", True), (" pass\n", True), ("Fail", False), ("FAIL ", False),
    ("Maybe", None), ("PASS.", None), ("I think PASS", None), ("", None),
], ids=repr)
def test_verdict_takes_exactly_pass_or_fail(text: str, said: bool | None) -> None:
    assert verdict(text) is said


NOW = datetime(2026, 11, 30, tzinfo=UTC)
JUDGE = Judge("http://127.0.0.1:1/v1", "judge-2026-01-15", min_tpr=0.9, min_tnr=0.8)


def _record(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"final": True, "grader_blob": "b" * 40,
                           "judge_model": "judge-2026-01-15", "date": "2026-11-01T00:00:00Z",
                           "tpr": {"value": 0.95}, "tnr": {"value": 0.85}}
    rec.update(over)
    return rec


@pytest.mark.parametrize(("record", "problem", "state", "code"), [
    (_record(), None, "calibrated", None),
    (None, None, "advisory", "GE510"),
    (None, "it is not JSON", "advisory", "GE511"),
    (_record(final=False), None, "advisory", "GE512"),
    (_record(grader_blob="c" * 40), None, "advisory", "GE513"),
    (_record(judge_model="judge-2026-02-01"), None, "advisory", "GE514"),
    (_record(tnr={"value": 0.79}), None, "advisory", "GE515"),
    (_record(tpr={"value": None}), None, "advisory", "GE515"),
    (_record(date=(NOW - timedelta(days=91)).strftime("%Y-%m-%dT%H:%M:%SZ")), None,
     "advisory", "GE516"),
    (_record(date=(NOW - timedelta(days=90)).strftime("%Y-%m-%dT%H:%M:%SZ")), None,
     "calibrated", None),
    (_record(date="yesterday"), None, "advisory", "GE511"),
], ids=["calibrated", "none", "unreadable", "dev-only", "new-blob", "new-model", "below-tnr",
        "tpr-unmeasured", "91-days", "90-days", "bad-date"])
def test_status(record: dict[str, Any] | None, problem: str | None, state: str,
                code: str | None) -> None:
    st = status("q.tone", True, "b" * 40, JUDGE, record, problem, NOW)
    assert (st.state, st.code) == (state, code), st.reason


def test_a_grader_that_never_asks_is_na() -> None:
    st = status("q.exact", False, "b" * 40, JUDGE, None, None, NOW)
    assert st.state == "n/a" and not st.advisory


def test_labels_rows_become_the_graders_arguments() -> None:
    data = (b'{"id": 1, "input": "hi", "output": "hello", "label": "PASS"}\n\n'
            b'{"id": "g", "input": ["a", "b"], "expected": "x", "label": false}\n'
            b'{"id": "r", "run": {"final_answer": "y", "tool_calls": [{"name": "t"}]}, '
            b'"label": true}\n'
            b'{"id": "u", "input": "no label"}\n')
    labels = read_labels(data, "l.jsonl")
    assert labels.unlabelled == 1
    one, golden, run = labels.items
    assert (one.id, one.label, one.case["user"], one.run["final_answer"]) == \
        ("1", True, ["hi"], "hello")
    assert golden.case == {"id": "g", "user": ["a", "b"], "expect": [], "expected": "x"}
    assert golden.run["final_answer"] == "x" and golden.label is False
    assert run.run["tool_calls"] == [{"name": "t"}] and run.run["error"] is None


def test_labels_not_utf8_is_one_line_with_position() -> None:
    with pytest.raises(LabelsError, match=r"^l.jsonl:2:9: not UTF-8"):
        read_labels(b'{"id": 1, "label": "pass"}\n{"id": "\xff"}\n', "l.jsonl")


def test_sealed_uses_match_blob_and_model() -> None:
    rec = {"sealed": [{"grader_blob": "b", "judge_model": "m", "date": "d"}]}
    assert already_sealed(rec, "b", "m") == {"grader_blob": "b", "judge_model": "m", "date": "d"}
    assert already_sealed(rec, "b", "other") is None
    assert already_sealed(rec, "c", "m") is None
    assert already_sealed(None, "b", "m") is None
