"""The judge-corrected rate (``gitevals.stats.judge_correction``): the Rogan–Gladen
estimator against hand-computed values, its bootstrap interval against scipy's Beta
quantiles where the calibration is exact, and a small seeded coverage simulation
(the larger one is ``benchmarks/bench_judge_correction.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from gitevals.stats import judge_correction as jc
from gitevals.stats.judge_correction import Calibration, corrected, rogan_gladen


@pytest.mark.parametrize(("p", "tpr", "tnr", "want"), [
    (0.3, 0.9, 0.8, 0.1 / 0.7),      # (0.3 + 0.8 - 1) / (0.9 + 0.8 - 1)
    (0.5, 0.95, 0.9, 0.4 / 0.85),
    (0.62, 1.0, 1.0, 0.62),          # a perfect judge changes nothing
    (0.1, 0.9, 0.8, 0.0),            # below the false-positive floor: clipped to 0
    (0.95, 0.9, 0.9, 1.0),           # above the ceiling TPR: clipped to 1
    (0.5, 0.5, 0.5, None),           # TPR + TNR = 1: a coin, nothing to recover
    (0.5, 0.3, 0.4, None),           # worse than chance: undefined, never inverted
], ids=["typical", "good-judge", "perfect", "clip-low", "clip-high", "chance", "inverted"])
def test_rogan_gladen_against_hand_computed_values(
        p: float, tpr: float, tnr: float, want: float | None) -> None:
    got = rogan_gladen(p, tpr, tnr)
    assert got == (None if want is None else pytest.approx(want))


@settings(max_examples=60, deadline=None)
@given(theta=st.floats(0, 1), tpr=st.floats(0.55, 1), tnr=st.floats(0.55, 1))
def test_rogan_gladen_inverts_what_the_judge_would_observe(
        theta: float, tpr: float, tnr: float) -> None:
    observed = theta * tpr + (1 - theta) * (1 - tnr)
    assert rogan_gladen(observed, tpr, tnr) == pytest.approx(theta, abs=1e-9)


def test_an_exact_calibration_leaves_the_jeffreys_interval_of_the_trials() -> None:
    """With TPR and TNR known to within 1e-6 (a million items each, all right), the
    interval is the trials' own: the Jeffreys Beta(x + 1/2, n - x + 1/2) quantiles."""
    big = 1_000_000
    got = corrected(13, 40, Calibration(big, big, big, big))
    want = stats.beta.ppf([0.025, 0.975], 13.5, 27.5)
    assert got.rate == pytest.approx(13 / 40, abs=1e-5)
    assert [got.low, got.high] == pytest.approx(list(want), abs=0.01)


def test_the_calibrations_uncertainty_widens_the_interval() -> None:
    """The same rates measured on 30 items instead of 30,000: a wider interval."""
    small = corrected(300, 500, Calibration(27, 30, 27, 30))
    large = corrected(300, 500, Calibration(27_000, 30_000, 27_000, 30_000))
    assert small.rate == pytest.approx(large.rate)
    assert small.rate == pytest.approx((0.6 + 0.9 - 1) / 0.8)
    assert small.low is not None and small.high is not None
    assert large.low is not None and large.high is not None
    assert small.high - small.low > 2 * (large.high - large.low)


def test_the_interval_is_seeded_and_holds_its_estimate() -> None:
    cal = Calibration(63, 73, 21, 26)
    first = corrected(6, 20, cal)
    jc.interval.cache_clear()
    again = corrected(6, 20, cal)
    assert (first.low, first.high) == (again.low, again.high)
    assert first.low is not None and first.high is not None and first.rate is not None
    assert first.low <= first.rate <= first.high
    assert first.low >= 0.0 and first.high <= 1.0


def test_a_judge_no_better_than_chance_has_no_corrected_rate_and_says_why() -> None:
    got = corrected(12, 20, Calibration(11, 20, 9, 20))  # TPR 0.55 + TNR 0.45 = 1
    assert (got.rate, got.low, got.high) == (None, None, None)
    assert got.undefined is not None and "no better than chance" in got.undefined
    doc = got.as_json()
    assert doc["corrected_rate"] is None and doc["corrected_ci"] is None
    assert doc["correction"] == {
        "method": "rogan-gladen", "tpr": 0.55, "tnr": 0.45, "n_pos": 20, "n_neg": 20,
        "tp": 11, "tn": 9, "level": 0.95, "draws": jc.DRAWS, "seed": jc.SEED,
        "undefined": got.undefined}


@pytest.mark.parametrize(("passes", "trials", "cal"), [
    (5, 4, Calibration(9, 10, 9, 10)),
    (0, 0, Calibration(9, 10, 9, 10)),
    (-1, 4, Calibration(9, 10, 9, 10)),
    (2, 4, Calibration(11, 10, 9, 10)),
    (2, 4, Calibration(9, 10, 0, 0)),
    (2, jc.MAX_COUNT + 1, Calibration(9, 10, 9, 10)),
], ids=["passes-over-trials", "no-trials", "negative", "hits-over-of", "no-negatives",
        "too-many"])
def test_counts_that_are_not_counts_are_refused(passes: int, trials: int,
                                                cal: Calibration) -> None:
    with pytest.raises(ValueError):
        corrected(passes, trials, cal)


@pytest.mark.parametrize(("values", "undefined", "want"), [
    ([i / 100 for i in range(100)], 0, (0.02, 0.97)),
    # 40 draws without an estimate, of 100: the lower tail (2.5 draws) and the upper
    # tail lie among them, so the interval is the whole of [0, 1]
    ([i / 60 for i in range(60)], 40, (0.0, 1.0)),
    # 2 of 100 without: the lower bound (the 3rd draw from the bottom) is the lowest
    # value, the upper one (the 98th) the highest value there is
    ([i / 98 for i in range(98)], 2, (0.0, 97 / 98)),
    ([i / 1000 for i in range(998)], 2, (0.023, 0.974)),
], ids=["plain", "mostly-undefined", "few-undefined-small", "few-undefined"])
def test_draws_without_an_estimate_only_widen_the_interval(
        values: list[float], undefined: int, want: tuple[float, float]) -> None:
    assert jc._percentiles(values, undefined) == pytest.approx(want)


def _coverage(rng: np.random.Generator, reps: int, theta: float, n: int, tpr: float,
              tnr: float, n_pos: int, n_neg: int) -> tuple[float, float]:
    """(bootstrap coverage, coverage of the interval that takes TPR/TNR as exact)."""
    p = theta * tpr + (1 - theta) * (1 - tnr)
    ours = naive = 0
    for _ in range(reps):
        tp, tn = int(rng.binomial(n_pos, tpr)), int(rng.binomial(n_neg, tnr))
        k = int(rng.binomial(n, p))
        got = corrected(k, n, Calibration(tp, n_pos, tn, n_neg))
        ours += got.low is not None and got.high is not None and got.low <= theta <= got.high
        lo, hi = stats.beta.ppf([0.025, 0.975], k + 0.5, n - k + 0.5)
        ends = [rogan_gladen(x, tp / n_pos, tn / n_neg) for x in (lo, hi)]
        naive += ends[0] is not None and ends[1] is not None and ends[0] <= theta <= ends[1]
    return ours / reps, naive / reps


def test_coverage_is_near_nominal_where_ignoring_the_calibration_is_not() -> None:
    """A small calibration (25 + 25 items) and many trials: most of the uncertainty is the
    calibration's. Seeded; 300 repetitions (the benchmark runs thousands)."""
    ours, naive = _coverage(np.random.default_rng(7), 300, theta=0.6, n=200, tpr=0.9,
                            tnr=0.9, n_pos=25, n_neg=25)
    assert ours >= 0.92, ours
    assert naive <= 0.80, naive


def test_a_suites_change_divides_by_the_youden_index_with_its_uncertainty() -> None:
    """The suite's corrected change is the raw paired change over TPR + TNR - 1; with a
    calibration so large it is nearly exact, the interval is the raw one scaled alike;
    with a small one it is wider; a judge no better than chance recovers nothing."""
    from gitevals.stats.judge_correction import corrected_change

    exact = Calibration(900_000, 1_000_000, 800_000, 1_000_000)  # Youden 0.7
    got = corrected_change(-0.07, 0.03, 0.95, exact)
    assert got is not None
    est, low, high = got
    assert est == pytest.approx(-0.1)
    assert (low, high) == pytest.approx((-0.10 / 0.7, -0.04 / 0.7), abs=0.003)
    small = corrected_change(-0.07, 0.03, 0.95, Calibration(18, 20, 16, 20))
    assert small is not None and small[0] == pytest.approx(-0.1)
    assert small[2] - small[1] > (high - low) * 1.1  # the calibration's own uncertainty
    assert corrected_change(-0.07, 0.03, 0.95, Calibration(10, 20, 10, 20)) is None
    clipped = corrected_change(-0.9, 0.05, 0.95, exact)  # -0.9 / 0.7: past -100 points
    assert clipped is not None and clipped[0] == clipped[1] == -1.0
