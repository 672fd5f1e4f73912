"""``report.history``: Wilson intervals against scipy, and series built from tallies."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from gitevals.diff.stats import two_sided
from gitevals.diff.verdicts import Tally
from gitevals.report.history import Commit, build, select, wilson

TABLE = [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (7, 13), (1, 100), (50, 100),
         (999, 1000), (4321, 5000)]


@pytest.mark.parametrize(("passes", "trials"), TABLE, ids=[f"{k}of{n}" for k, n in TABLE])
def test_wilson_agrees_with_scipy(passes: int, trials: int) -> None:
    ci = binomtest(passes, trials).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson(passes, trials)
    assert low == pytest.approx(ci.low, abs=1e-12)
    assert high == pytest.approx(ci.high, abs=1e-12)
    assert 0.0 <= low <= passes / trials <= high <= 1.0


def test_no_trial_is_the_whole_range() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


def commit(n: int) -> Commit:
    return Commit(f"{n:040x}", f"change {n}")


def tally(passes: int, trials: int) -> Tally:
    verdict = "pass" if passes == trials else "fail" if passes == 0 else "flaky"
    return Tally(verdict, passes, trials)


A, B = ("tone", "capital"), ("tone", "wordy")


def test_points_compare_with_the_previous_readable_run() -> None:
    history = build([
        (commit(1), {A: tally(10, 10), B: tally(3, 5)}),
        (commit(2), None),  # its run could not be read: no points, not compared
        (commit(3), {A: tally(2, 10)}),
        (commit(4), {A: tally(2, 10), B: tally(2, 5)}),
    ])
    assert history.scenarios == (A, B)
    a, b = history.points
    assert [p.change if p else None for p in a] == ["new", None, "regressed", "unchanged"]
    assert a[2] is not None and a[2].regressed
    assert a[2].p == two_sided("boschloo", 10, 10, 2, 10)
    assert [p.change if p else None for p in b] == ["new", None, None, "new"]
    assert history.regressions() == 1
    assert select(history, "tone/wordy").scenarios == (B,)
    assert select(history, "tone").scenarios == (A, B)
    assert select(history, "other").scenarios == ()


def test_a_move_within_noise_is_not_a_regression() -> None:
    history = build([(commit(1), {A: tally(3, 5)}), (commit(2), {A: tally(2, 5)})])
    point = history.points[0][1]
    assert point is not None and point.change == "regressed" and not point.regressed


def test_label_is_the_tags_else_the_short_sha() -> None:
    assert Commit("a" * 40, "s", ("v1", "v1.0")).label == "v1, v1.0"
    assert Commit("a" * 40, "s").label == "a" * 12


def test_a_move_is_decided_under_diffs_control_not_alone() -> None:
    """30 scenarios, one falls 9/10 -> 4/10 (two-sided p below 0.05 alone): the history
    marks it as diff would, under the control, and marks it alone only under none."""
    keys = [(f"c{i // 5:02d}", f"s{i:02d}") for i in range(30)]
    before = {k: tally(9, 10) for k in keys}
    after = {**before, keys[0]: tally(4, 10)}
    assert two_sided("boschloo", 9, 10, 4, 10) < 0.05
    runs = [(commit(1), before), (commit(2), after)]
    for control, marked in (("fdr", False), ("fwer", False), ("none", True)):
        history = build(runs, control=control)
        point = history.points[history.scenarios.index(keys[0])][1]
        assert point is not None and point.change == "regressed"
        assert point.regressed is marked, control
        assert point.q is not None and (point.q >= point.p if point.p is not None else False)
        assert history.control == control
    suites = build(runs).suites
    assert suites[0] is None and suites[1] is not None and suites[1].scenarios == 30


def test_underpowered_is_judged_at_the_level_the_control_holds_a_row_to() -> None:
    """70 trials a side from 0.9 see a 20-point drop at 0.05 alone, not at the level a
    lone drop faces among 40 scenarios under the control (0.05 / 40 two-sided)."""
    from gitevals.diff.power import underpowered
    from gitevals.diff.suite import assess, lone_level
    from gitevals.diff.verdicts import compare_tallies

    keys = [(f"c{i // 5:02d}", f"s{i:02d}") for i in range(40)]
    a = {k: Tally("flaky", 63, 70) for k in keys}
    b = {**a, keys[0]: Tally("flaky", 60, 70)}
    assert not underpowered(70, 0.9) and underpowered(70, 0.9, alpha=0.05 / 40)
    assert lone_level("fdr", 0.05, 2, 40) == pytest.approx(0.05 / 40)
    raw = compare_tallies(a, b)
    assert not any(r.underpowered for r in raw)  # at raw alpha
    rows, _ = assess(raw, {}, "fdr", 0.05, mde=False)
    assert all(r.underpowered for r in rows)
    rows, _ = assess(raw, {}, "none", 0.05, mde=False)
    assert not any(r.underpowered for r in rows)
