"""The gate's arithmetic (pure): Newcombe's interval against his published examples, and
the status of a slice against the drift budget."""

from __future__ import annotations

from typing import Any

import pytest

from gitevals.goldens.drift import Budget
from gitevals.goldens.gate import Refused, difference, gate


@pytest.mark.parametrize(("x0", "n0", "x1", "n1", "low", "high"), [
    (48, 80, 56, 70, 0.0524, 0.3339),     # Newcombe (1998), Table II, example (a)
    (3, 10, 9, 10, 0.1705, 0.8090),       # example (c)
    (0, 10, 10, 10, 0.6075, 1.0),         # the interval stays inside [-1, 1]
], ids=["56-70-vs-48-80", "9-10-vs-3-10", "0-to-all"])
def test_newcombe_hybrid_score_interval(x0: int, n0: int, x1: int, n1: int, low: float,
                                        high: float) -> None:
    d, lo, hi = difference(x0, n0, x1, n1)
    assert d == pytest.approx(x1 / n1 - x0 / n0)
    assert (lo, hi) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def _baseline(slices: list[tuple[str, int, int]], files: dict[str, str]) -> Any:
    return {"format": "gitevals-baseline/1", "model": "base", "run_id": "r", "rev": "HEAD",
            "commit": "a" * 40, "tree": "b" * 40, "target": None, "target_env": None,
            "graders": {"x": "g.f"}, "files": files, "budget": None,
            "slices": [{"kind": "bucket", "name": n, "grader": "g.f", "passed": p, "total": t,
                        "errors": 0, "rate": p / t} for n, p, t in slices]}


def _run(slices: list[tuple[str, int, int]], files: dict[str, str],
         budget: dict[str, float] | None = None) -> Any:
    return {"run_id": "r2", "commit": "c" * 40,
            "goldens": {"graders": {"x": "g.f"}, "buckets": None, "budget": budget,
                        "files": files, "items": [],
                        "slices": [{"kind": "bucket", "name": n, "grader": "g.f", "passed": p,
                                    "total": t, "errors": 0} for n, p, t in slices]}}


FILES = {"evals/goldens.jsonl": "1" * 40}
BUDGET = {"noise_tolerance_pts": 2, "hard_fail_threshold_pts": 10}


@pytest.mark.parametrize(("now", "status", "passed"), [
    (50, "unchanged", True), (51, "unchanged", True), (53, "improved", True),
    (45, "dropped", True), (40, "dropped", True), (39, "dropped", True),
    (30, "hard_fail", False), (0, "hard_fail", False),
], ids=["same", "within-noise", "up", "down", "down-at-threshold",
        "beyond-the-threshold-within-noise", "beyond", "zero"])
def test_status_against_the_budget(now: int, status: str, passed: bool) -> None:
    result = gate(_baseline([("x", 50, 100)], FILES), _run([("x", now, 100)], FILES, BUDGET),
                  "b.json")
    (row,) = result.slices
    assert (row.status, result.passed) == (status, passed)
    assert result.budget == Budget(2.0, 10.0) and result.budget_source == "run"


def test_without_a_drift_suite_the_seed_budget_applies() -> None:
    result = gate(_baseline([("x", 50, 100)], FILES), _run([("x", 34, 100)], FILES), "b.json")
    assert result.budget_source == "default" and result.slices[0].status == "hard_fail"


def test_a_hard_fail_must_be_beyond_noise_under_the_control() -> None:
    """50/100 -> 39/100 is 11 points down, past a 10-point threshold, but one-sided
    p ~ 0.08: not shown to have dropped. Many buckets are a family: a drop that would
    fail alone (p ~ 0.012) does not among 20 buckets under Holm or BH."""
    one = gate(_baseline([("x", 50, 100)], FILES), _run([("x", 39, 100)], FILES, BUDGET),
               "b.json")
    assert one.slices[0].status == "dropped" and one.passed
    assert one.slices[0].q is not None and one.slices[0].q > 0.05
    names = [f"b{i:02d}" for i in range(20)]
    base = _baseline([(n, 50, 100) for n in names], FILES)
    now = [(n, 34 if n == "b00" else 50, 100) for n in names]
    alone = gate(_baseline([("b00", 50, 100)], FILES), _run([("b00", 34, 100)], FILES,
                                                                BUDGET), "b.json")
    assert alone.slices[0].status == "hard_fail" and not alone.passed
    for control in ("fdr", "fwer"):
        many = gate(base, _run(now, FILES, BUDGET), "b.json", control)
        assert many.slices[0].status == "dropped" and many.passed, control
    uncontrolled = gate(base, _run(now, FILES, BUDGET), "b.json", "none")
    assert uncontrolled.slices[0].status == "hard_fail"


def test_a_slice_the_run_lacks_fails_the_gate() -> None:
    result = gate(_baseline([("x", 5, 10), ("y", 5, 10)], FILES), _run([("x", 9, 10)], FILES),
                  "b.json")
    assert [s.status for s in result.slices] == ["improved", "missing"] and not result.passed


def test_other_graders_are_another_measuring_stick() -> None:
    other = {**FILES, "evals/graders/g.py": "2" * 40}
    with pytest.raises(Refused) as info:
        gate(_baseline([("x", 5, 10)], FILES), _run([("x", 5, 10)], other), "b.json")
    assert ("evals/graders/g.py was absent for the baseline and is 222222222222 for this run"
            in str(info.value))
