"""The statistics kernel (gitevals.stats) against statsmodels, scipy and enumeration."""

from __future__ import annotations

import ast
import gc
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.special
import scipy.stats
from hypothesis import example, given, settings
from hypothesis import strategies as st
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.multitest import multipletests

from gitevals.diff.power import _arcsine_mde, power, scenario_mde
from gitevals.diff.suite import assess
from gitevals.diff.verdicts import Tally, compare_tallies
from gitevals.stats import equivalence, multiplicity, paired, student
from gitevals.stats import power as suite_power

P_VALUES = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=40)
STATSMODELS = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm"}


def test_the_kernel_imports_nothing_from_the_rest_of_gitevals() -> None:
    for path in Path("gitevals/stats").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith("gitevals") or name.startswith("gitevals.stats"), \
                    f"{path} imports {name}"


@pytest.mark.parametrize("method", ["bh", "by", "holm"])
@settings(max_examples=30, deadline=None)  # the by-definition tests below check 100 more
@given(ps=P_VALUES)
def test_adjusted_p_equals_statsmodels(method: str, ps: list[float]) -> None:
    ours = multiplicity.adjust(ps, method)
    # statsmodels' holm ends with gc.collect(): a full pass over every object of the pytest
    # process (0.1-1 s a call). Frozen, that pass sees only the call's own objects.
    gc.freeze()
    try:
        theirs = multipletests(ps, alpha=0.05, method=STATSMODELS[method])[1]
    finally:
        gc.unfreeze()
    assert ours == pytest.approx(list(theirs), abs=1e-12)


def _bh_by_definition(ps: list[float]) -> list[float]:
    """BH's q straight from its definition: min over every p_j >= p_i of m p_j / rank_j
    (ties share the largest rank)."""
    m = len(ps)
    rank = {j: sum(x <= ps[j] for x in ps) for j in range(m)}
    return [min(1.0, min(m * ps[j] / rank[j] for j in range(m) if ps[j] >= ps[i]))
            for i in range(m)]


def _holm_by_definition(ps: list[float]) -> list[float]:
    """Holm's q from its definition: max over every p_j <= p_i of (m - rank_j + 1) p_j,
    with rank the position among the sorted p (ties: the first position)."""
    m = len(ps)
    rank = {j: sum(x < ps[j] for x in ps) + 1 for j in range(m)}
    return [min(1.0, max((m - rank[j] + 1) * ps[j] for j in range(m) if ps[j] <= ps[i]))
            for i in range(m)]


@settings(max_examples=100, deadline=None)
@given(ps=st.lists(st.sampled_from([0.001, 0.01, 0.02, 0.04, 0.2, 0.5, 1.0]), min_size=1,
                   max_size=8))
def test_adjusted_p_equals_the_definitions_with_ties(ps: list[float]) -> None:
    assert multiplicity.bh(ps) == pytest.approx(_bh_by_definition(ps), abs=1e-12)
    assert multiplicity.holm(ps) == pytest.approx(_holm_by_definition(ps), abs=1e-12)


def test_family_shares_alpha_and_none_changes_nothing() -> None:
    assert multiplicity.family([0.01, 0.3], "none") == (0.01, 0.3)
    assert multiplicity.family([0.01, 0.3], "fwer", share=2) == (0.04, 0.6)
    assert multiplicity.family([0.01, 0.3], "fdr", share=2) == (0.04, 0.6)
    assert multiplicity.method_of("fdr", dependent=True) == "by"
    with pytest.raises(ValueError, match="between 0 and 1"):
        multiplicity.adjust([1.5], "bh")


def _scipy_two_sided(t: float, df: int) -> float:
    """P[|T| >= |t|] from scipy's regularized incomplete beta, on the side that keeps its
    digits: ``t.sf`` goes through ``df / (df + t^2)``, which rounds to 1 for a tiny ``t``
    (it gives p = 1.0 exactly at t = 2e-9, df = 1, where p = 1 - 1.3e-9), so near p = 1
    the reference is ``1 - I_y(1/2, df/2)`` with ``y = t^2 / (df + t^2)``."""
    y = t * t / (df + t * t)
    if y < 0.5:
        return float(1.0 - scipy.special.betainc(0.5, df / 2, y))
    return float(scipy.special.betainc(df / 2, 0.5, df / (df + t * t)))


@settings(max_examples=80, deadline=None)
@given(t=st.floats(-60, 60), df=st.integers(1, 400))
@example(t=2.028749780151906e-09, df=1)  # t.sf's rounding: p = 1.0 where it is 1 - 1.3e-9
@example(t=-2.028749780151906e-09, df=1)
@example(t=60.0, df=1)
@example(t=-60.0, df=400)
def test_student_t_equals_scipy(t: float, df: int) -> None:
    p = _scipy_two_sided(t, df)
    assert student.two_sided(t, df) == pytest.approx(p, rel=1e-9, abs=1e-15)
    assert student.upper(t, df) == pytest.approx(p / 2 if t >= 0 else 1 - p / 2,
                                                  rel=1e-9, abs=1e-15)
    # away from p = 1, where it keeps its digits, scipy's own t distribution agrees too
    if t * t >= df / 1000:
        assert student.two_sided(t, df) == pytest.approx(2 * scipy.stats.t.sf(abs(t), df),
                                                         rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("df", [1, 2, 5, 30, 999])
@pytest.mark.parametrize("q", [1e-7, 0.0125, 0.2, 0.8, 0.975])
def test_student_quantile_equals_scipy(q: float, df: int) -> None:
    assert student.quantile(q, df) == pytest.approx(scipy.stats.t.ppf(q, df), rel=1e-9)


@st.composite
def _counts(draw: st.DrawFn) -> tuple[int, int, int, int, str]:
    """(passes a, trials a, passes b, trials b, cluster): the trials first, then passes
    within them. Drawn in one composite rather than by ``flatmap``, which builds and
    checks new strategies for every pair (most of these tests' cost); same draws."""
    trials_a, trials_b = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    return (draw(st.integers(0, trials_a)), trials_a, draw(st.integers(0, trials_b)),
            trials_b, draw(st.sampled_from("abcdefg")))


COUNTS = _counts()


def _pairs(raw: list[tuple[int, int, int, int, str]]) -> list[paired.Pair]:
    return [paired.Pair(*r) for r in raw]


@settings(max_examples=80, deadline=None)
@given(raw=st.lists(COUNTS, min_size=3, max_size=40))
def test_paired_suite_equals_statsmodels_cluster_robust_ols(
        raw: list[tuple[int, int, int, int, str]]) -> None:
    pairs = _pairs(raw)
    result = paired.compare(pairs, 0.05)
    clusters = sorted({p.cluster for p in pairs})
    if len(clusters) < 2:
        assert result is None
        return
    assert result is not None
    d = np.array([p.difference for p in pairs])
    groups = np.array([clusters.index(p.cluster) for p in pairs])
    fit = OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                      use_t=True)
    floor = math.sqrt(sum(p.noise for p in pairs)) / len(pairs)
    assert result.estimate == pytest.approx(fit.params[0], abs=1e-12)
    assert result.se == pytest.approx(max(fit.bse[0], floor), rel=1e-9, abs=1e-15)
    assert result.df == len(clusters) - 1 == fit.df_resid_inference
    if fit.bse[0] > floor * (1 + 1e-9):  # the cluster-robust error decides: all of it agrees
        assert result.p == pytest.approx(fit.pvalues[0], rel=1e-7, abs=1e-14)
        low, high = fit.conf_int(0.05)[0]
        assert (result.low, result.high) == pytest.approx((low, high), rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(raw=st.lists(COUNTS, min_size=3, max_size=40))
def test_the_suite_p_is_the_larger_of_the_cluster_t_and_the_noise_z(
        raw: list[tuple[int, int, int, int, str]]) -> None:
    """The call needs both tests: CR1 with t on G - 1 df (statsmodels) and the estimate
    against trial noise alone with the normal reference (its error comes from every
    trial, not from G clusters); the interval is the wider one, so it agrees with p."""
    pairs = _pairs(raw)
    result = paired.compare(pairs, 0.05)
    clusters = sorted({p.cluster for p in pairs})
    floor = math.sqrt(sum(p.noise for p in pairs)) / len(pairs)
    if len(clusters) < 2 or floor == 0.0:
        return
    assert result is not None
    d = np.array([p.difference for p in pairs])
    groups = np.array([clusters.index(p.cluster) for p in pairs])
    fit = OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                      use_t=True)
    p_z = 2 * scipy.stats.norm.sf(abs(d.mean()) / floor)
    p_t = fit.pvalues[0] if fit.bse[0] > 1e-12 else 0.0
    assert result.p == pytest.approx(max(p_t, p_z), rel=1e-7, abs=1e-12)
    half = max(scipy.stats.t.ppf(0.975, len(clusters) - 1) * fit.bse[0],
               scipy.stats.norm.ppf(0.975) * floor)
    assert result.high - result.low == pytest.approx(2 * half, rel=1e-9, abs=1e-12)
    if abs(result.p - 0.05) > 1e-6:
        assert (result.p < 0.05) == (not result.low <= 0.0 <= result.high)


def test_the_noise_floor_is_read_with_the_normal_not_t_of_few_clusters() -> None:
    # 4 clusters that moved alike: CR1 is smaller than trial noise, which decides; its
    # error is estimated from 240 trials, not from 4 clusters, so the normal applies
    pairs = [paired.Pair(24, 30, 18, 30, c) for c in "abcd"]
    pairs[0] = paired.Pair(24, 30, 17, 30, "a")
    result = paired.compare(pairs, 0.05)
    assert result is not None and result.se_noise > result.se_cluster
    z = result.estimate / result.se_noise
    assert result.p == pytest.approx(2 * scipy.stats.norm.sf(abs(z)), rel=1e-9)
    assert result.p < 2 * scipy.stats.t.sf(abs(z), 3)


@settings(max_examples=50, deadline=None)
@given(raw=st.lists(COUNTS, min_size=3, max_size=30))
def test_singleton_clusters_are_the_one_sample_t_test(
        raw: list[tuple[int, int, int, int, str]]) -> None:
    pairs = [paired.Pair(a, na, b, nb, str(i)) for i, (a, na, b, nb, _) in enumerate(raw)]
    result = paired.compare(pairs, 0.05)
    assert result is not None
    d = [p.difference for p in pairs]
    floor = math.sqrt(sum(p.noise for p in pairs)) / len(pairs)
    sd = float(np.std(d, ddof=1)) / math.sqrt(len(d))
    if sd > floor * (1 + 1e-9):
        assert result.p == pytest.approx(scipy.stats.ttest_1samp(d, 0.0).pvalue, rel=1e-7)


def test_the_floor_keeps_a_few_alike_clusters_from_looking_certain() -> None:
    # two scenarios both 3/4 -> 2/4: no spread at all, yet well within trial noise
    pairs = [paired.Pair(3, 4, 2, 4, "x"), paired.Pair(3, 4, 2, 4, "y")]
    result = paired.compare(pairs, 0.05)
    assert result is not None and result.se > 0 and result.p > 0.3


@pytest.mark.parametrize(("rate", "control"), [(0.5, "fdr"), (0.8, "fdr"), (0.3, "fwer")])
def test_an_unchanged_small_suite_exits_1_at_most_alpha_by_enumeration(
        rate: float, control: str) -> None:
    """Every outcome of 3 scenarios (3 cases) x 3 trials a side at the same rate on both
    sides: the exact probability that the whole decision calls a regression (the suite
    or any scenario, under the control) stays below alpha."""
    n, alpha = 3, 0.05
    pmf = [math.comb(n, k) * rate ** k * (1 - rate) ** (n - k) for k in range(n + 1)]
    outcomes = list(itertools.product(range(n + 1), repeat=2))
    false = 0.0
    for combo in itertools.product(outcomes, repeat=3):
        weight = math.prod(pmf[a] * pmf[b] for a, b in combo)
        ta = {(f"c{i}", "s"): Tally("", a, n) for i, (a, _) in enumerate(combo)}
        tb = {(f"c{i}", "s"): Tally("", b, n) for i, (_, b) in enumerate(combo)}
        rows, suite = assess(compare_tallies(ta, tb, alpha=alpha), {}, control, alpha,
                             mde=False)
        if suite.regressed or any(r.change == "regressed" and r.beyond_noise for r in rows):
            false += weight
    assert false <= alpha


def test_tost_agrees_with_the_one_sided_interval() -> None:
    for est, se, df, margin in [(-0.01, 0.01, 30, 0.05), (-0.04, 0.01, 30, 0.05),
                                (0.0, 0.03, 5, 0.05), (0.02, 0.005, 99, 0.03)]:
        e = equivalence.tost(est, se, df, margin, 0.05)
        lower = est - student.quantile(0.95, df) * se
        upper = est + student.quantile(0.95, df) * se
        assert e.no_drop == (lower > -margin)
        assert e.equivalent == (lower > -margin and upper < margin)
        assert e.p_lower == pytest.approx(scipy.stats.t.sf((est + margin) / se, df))


def test_suite_mde_is_the_drop_found_with_80_percent_power() -> None:
    se, df, level = 0.015, 99, 0.025
    mde = suite_power.suite_mde(se, df, level)
    assert mde is not None
    crit = scipy.stats.t.ppf(1 - level / 2, df)
    # the power of the two-sided t test against a drop of mde (noncentral t)
    found = scipy.stats.nct.cdf(-crit, df, -mde / se)
    assert found == pytest.approx(0.8, abs=0.01)
    assert suite_power.suite_mde(se, 0, level) is None
    # the noise test binds when trial noise is the larger error: normal quantiles on it
    noise = 0.03
    both = suite_power.suite_mde(se, df, level, noise_se=noise)
    z = scipy.stats.norm.ppf(1 - level / 2) + scipy.stats.norm.ppf(0.8)
    assert both == pytest.approx(z * noise, rel=1e-9)


@pytest.mark.parametrize(("trials", "rate", "level"),
                         [(10, 0.9, 0.05), (30, 0.9, 0.00025), (40, 0.5, 0.001)])
def test_scenario_mde_is_the_smallest_whole_point_drop_with_the_power(
        trials: int, rate: float, level: float) -> None:
    mde = scenario_mde(trials, rate, level)
    assert mde is not None
    assert power(trials, rate, mde, alpha=level) >= 0.8
    assert power(trials, rate, round(mde - 0.01, 2), alpha=level) < 0.8


@pytest.mark.parametrize(("rate", "level"), [(0.5, 0.05), (0.7, 0.00025), (0.9, 0.001)])
def test_beyond_exact_sizes_the_arcsine_mde_is_within_two_points(rate: float,
                                                                  level: float) -> None:
    exact = None
    for points in range(1, 100):
        if power(80, rate, points / 100, alpha=level) >= 0.8:
            exact = points / 100
            break
    approx = _arcsine_mde(80, rate, level, 0.8)
    assert exact is not None and approx is not None
    assert abs(approx - exact) <= 0.02


def test_suite_trials_is_the_fewest_that_reach_the_power() -> None:
    rates = [0.5, 0.7, 0.9] * 30
    n = suite_power.suite_trials(rates, 18, 0.05, 0.05)
    assert n is not None and n > 1

    def mde(trials: int) -> float:
        se = suite_power.predicted_se(rates, [trials] * 90, [trials] * 90)
        found = suite_power.suite_mde(se, 17, 0.05)
        assert found is not None
        return found

    assert mde(n) <= 0.05 < mde(n - 1)
    assert suite_power.suite_trials(rates, 1, 0.05, 0.05) is None
