"""Which rates a calibrated judge decided (``gitevals.calibration.corrected``): a scenario
only when one calibrated judge grader alone decided every trial, a goldens slice only
when its calibrated grader decided every item. Table-driven over artifact-shaped values."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitevals.calibration.corrected import calibrations, corrections, slice_corrections
from gitevals.stats.judge_correction import Calibration, corrected

CAL = {"status": "calibrated", "reason": "measured", "code": None,
       "tpr": {"hits": 63, "of": 73}, "tnr": {"hits": 21, "of": 26}}
JUDGE = {"grader": {"name": "judged.tone"}}


def _outcome(index: int, passed: bool, error: str | None = None,
             advisory: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "kind": "k", "passed": passed, "message": "",
                           "error": {"kind": error, "message": ""} if error else None,
                           "score": None}
    if advisory:
        out["advisory"] = True
    return out


def _trial(judge_pass: bool, other: bool = True) -> dict[str, Any]:
    return {"trial": 0, "error": None, "graders": [], "transcript": {},
            "assertions": [_outcome(0, other), _outcome(1, judge_pass)],
            "passed": judge_pass and other}


def _run(expect: list[dict[str, Any]] | None = None, results: list[dict[str, Any]] | None = None,
         calibration: dict[str, Any] | None = None) -> dict[str, Any]:
    results = results if results is not None else [_trial(i < 3) for i in range(10)]
    passes = sum(r["passed"] for r in results)
    scenario = {"id": "s", "user": [], "expect": expect or [{"no_error": True}, JUDGE],
                "trials": len(results), "timeout": 5, "results": results,
                "verdict": {"verdict": "flaky", "passes": passes, "trials": len(results)}}
    return {"cases": [{"name": "c", "path": "c.yaml", "blob": None, "scenarios": [scenario]}],
            "judge_calibration": {"judged.tone": calibration if calibration is not None
                                  else CAL}}


def _with(run: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``run`` with the trial-0 field at ``path`` (``error`` or ``a1.error``...) set."""
    out = copy.deepcopy(run)
    trial = out["cases"][0]["scenarios"][0]["results"][0]
    if path == "error":
        trial["error"] = value
    else:
        trial["assertions"][int(path[1])][path.split(".")[1]] = value
    return out


def test_a_scenario_one_calibrated_judge_decided_is_corrected() -> None:
    got = corrections(_run())
    assert got == {("c", "s"): corrected(3, 10, Calibration(63, 73, 21, 26))}


@pytest.mark.parametrize("run", [
    _with(_run(), "error", {"kind": "target_crash", "message": "x"}),
    _with(_run(), "a1.error", {"kind": "judge_unparseable", "message": "x"}),
    _run(results=[_trial(True, other=i != 4) for i in range(10)]),
    _run(expect=[{"no_error": True}, {"grader": {"name": "judged.tone", "pass_below": 0.5}}]),
    _run(expect=[JUDGE, JUDGE]),
    _run(calibration={"status": "advisory", "reason": "GE510", "code": "GE510"}),
    _run(calibration={"status": "calibrated", "reason": "old run", "code": None}),
    _run(calibration={**CAL, "tnr": {"hits": 30, "of": 26}}),
    _run(calibration={**CAL, "tpr": {"hits": True, "of": 73}}),
    _run(expect=[{"no_error": True}, {"grader": {"name": "checks.exact"}}]),
    _run(results=[]),
], ids=["trial-error", "judge-error", "other-assertion-failed", "pass-below",
        "two-judge-assertions", "advisory", "no-counts", "forged-counts", "bool-count",
        "deterministic-grader", "not-run"])
def test_anything_else_decided_a_trial_and_nothing_is_shown(run: dict[str, Any]) -> None:
    assert corrections(run) == {}


def test_a_forged_verdict_or_slice_count_is_never_believed() -> None:
    run = _run()
    run["cases"][0]["scenarios"][0]["verdict"]["passes"] = 99  # more than its 10 trials
    assert corrections(run) == {("c", "s"): corrected(3, 10, Calibration(63, 73, 21, 26))}
    assert slice_corrections(_slices(
        {"kind": "bucket", "name": "tone", "grader": "judged.tone", "passed": 30,
         "total": 20, "errors": 0})) == {}


def test_an_advisory_judge_beside_the_calibrated_one_is_not_counted_so_still_qualifies(
        ) -> None:
    run = _run()
    for trial in run["cases"][0]["scenarios"][0]["results"]:
        trial["assertions"][0] = _outcome(0, False, advisory=True)
    assert list(corrections(run)) == [("c", "s")]


def test_a_task_entry_is_never_corrected() -> None:
    run = _run()
    run["cases"][0]["task"] = {}
    assert corrections(run) == {}


def _slices(*rates: dict[str, Any]) -> dict[str, Any]:
    return {"judge_calibration": {"judged.tone": CAL}, "cases": [],
            "goldens": {"slices": list(rates)}}


def test_a_goldens_slice_is_corrected_only_when_its_calibrated_grader_decided_every_item(
        ) -> None:
    run = _slices({"kind": "bucket", "name": "tone", "grader": "judged.tone", "passed": 6,
                   "total": 20, "errors": 0},
                  {"kind": "bucket", "name": "lost", "grader": "judged.tone", "passed": 6,
                   "total": 20, "errors": 1},
                  {"kind": "bucket", "name": "fmt", "grader": "checks.exact", "passed": 6,
                   "total": 20, "errors": 0},
                  {"kind": "domain", "name": "mixed", "grader": None, "passed": 6,
                   "total": 20, "errors": 0})
    assert slice_corrections(run) == {
        ("bucket", "tone"): corrected(6, 20, Calibration(63, 73, 21, 26))}


def test_calibrations_reads_counts_only_from_calibrated_entries() -> None:
    run = {"judge_calibration": {"a.x": CAL, "b.y": {**CAL, "status": "advisory"}}}
    assert calibrations(run) == {"a.x": Calibration(63, 73, 21, 26)}
    assert calibrations(None) == {}


def test_the_cell_every_table_shows() -> None:
    from gitevals.calibration.corrected import cell

    got = corrected(6, 20, Calibration(63, 73, 21, 26))
    assert got.rate is not None and got.low is not None and got.high is not None
    assert cell(got) == f"{got.rate:.2f} [{got.low:.2f}, {got.high:.2f}]"
    assert cell(corrected(12, 20, Calibration(11, 20, 9, 20))) == "undefined (TPR + TNR <= 1)"
