"""Exact tests on pass counts: known values, size under the null, power, noise simulations,
agreement with scipy and with exact rational arithmetic, properties and speed at large n."""

from __future__ import annotations

import random
import time
from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.diff import stats
from gitevals.diff.stats import TESTS, boschloo_exact, boschloo_less, fisher_exact, two_sided

ALPHA = 0.05


@pytest.mark.parametrize(("counts", "expected"), [
    ((10, 10, 2, 10), 90 / 125970),          # [[10,0],[2,8]]: the two extreme tables
    ((8, 10, 1, 6), 0.03496503496503497),    # scipy docs: fisher_exact([[8, 2], [1, 5]])
    ((3, 5, 2, 5), 1.0),
    ((0, 5, 0, 5), 1.0),
    ((5, 5, 0, 5), 2 / 252),
], ids=["10of10-vs-2of10", "scipy-doc", "3of5-vs-2of5", "all-fail", "5of5-vs-0of5"])
def test_fisher_known_values(counts: tuple[int, int, int, int], expected: float) -> None:
    assert fisher_exact(*counts) == pytest.approx(expected, rel=1e-12)


def test_boschloo_matches_scipy_documented_example() -> None:
    # scipy.stats.boschloo_exact([[74, 31], [43, 32]], alternative="greater").pvalue = 0.0355
    # (scipy samples 32 points of the nuisance parameter; a finer search can only find more)
    assert boschloo_less(31, 63, 74, 117) == pytest.approx(0.0355, abs=2e-4)
    assert boschloo_less(31, 63, 74, 117) >= 0.0355
    assert boschloo_exact(74, 117, 31, 63) == pytest.approx(2 * boschloo_less(31, 63, 74, 117))


@pytest.mark.parametrize("counts", [(10, 10, 2, 10), (9, 10, 3, 10), (18, 20, 6, 20),
                                    (4, 7, 1, 9), (3, 5, 2, 5)])
def test_boschloo_at_least_as_powerful_as_fisher(counts: tuple[int, int, int, int]) -> None:
    assert boschloo_exact(*counts) <= fisher_exact(*counts) + 1e-12


@pytest.mark.parametrize("test", TESTS)
def test_symmetric_and_bounded(test: str) -> None:
    for x1, n1, x2, n2 in [(7, 10, 2, 10), (0, 3, 3, 3), (1, 1, 0, 1), (4, 9, 4, 9)]:
        p = two_sided(test, x1, n1, x2, n2)
        assert 0 < p <= 1
        assert p == pytest.approx(two_sided(test, x2, n2, x1, n1), rel=1e-9)


@pytest.mark.parametrize("test", TESTS)
def test_the_two_examples_of_the_design(test: str) -> None:
    assert two_sided(test, 3, 5, 2, 5) >= ALPHA     # 3/5 -> 2/5 is noise
    assert two_sided(test, 10, 10, 2, 10) < ALPHA   # 10/10 -> 2/10 is not


def test_empty_side_and_bad_input() -> None:
    assert two_sided("fisher", 0, 0, 3, 5) == 1.0
    with pytest.raises(ValueError, match="out of range"):
        fisher_exact(6, 5, 0, 5)
    with pytest.raises(ValueError, match="unknown test"):
        two_sided("chi2", 1, 2, 1, 2)


def _binom(n: int, p: float) -> list[float]:
    return [comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]


@pytest.mark.parametrize("test", TESTS)
def test_exact_size_never_exceeds_alpha(test: str) -> None:
    """P(called "regressed beyond noise") when nothing changed, computed exactly, any pass rate."""
    n = 10
    for rate in [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95]:
        pa = pb = _binom(n, rate)
        called = sum(pa[x1] * pb[x2] for x1 in range(n + 1) for x2 in range(x1)
                     if two_sided(test, x1, n, x2, n) < ALPHA)
        assert called <= ALPHA / 2 + 1e-6, (rate, called)


def _simulate(rng: random.Random, rate_a: float, rate_b: float, trials: int) -> tuple[int, int]:
    a = sum(rng.random() < rate_a for _ in range(trials))
    b = sum(rng.random() < rate_b for _ in range(trials))
    return a, b


def _called(test: str, a: int, b: int, trials: int) -> bool:
    return b < a and two_sided(test, a, trials, b, trials) < ALPHA


@pytest.mark.parametrize("test", TESTS)
def test_noise_unchanged_rate_rarely_called(test: str) -> None:
    """100 scenarios, 10 trials a side, same true rate: at most 5 % called regressed."""
    rng = random.Random(20261129)
    rates = [rng.choice([0.3, 0.5, 0.7, 0.8, 0.9]) for _ in range(100)]
    calls = sum(_called(test, *_simulate(rng, r, r, 10), 10) for r in rates)
    assert calls <= 5


@pytest.mark.parametrize(("test", "floor"), [("boschloo", 90), ("fisher", 90)])
def test_true_drop_is_called(test: str, floor: int) -> None:
    """0.9 -> 0.3 with 20 trials a side: called on at least 90 % of 100 scenarios."""
    rng = random.Random(7)
    calls = sum(_called(test, *_simulate(rng, 0.9, 0.3, 20), 20) for _ in range(100))
    assert calls >= floor


# ---------------------------------------------------------------- against scipy

SCIPY_TABLE = [
    ((3, 5, 2, 5), "small"),
    ((10, 10, 2, 10), "small-design"),
    ((7, 12, 2, 9), "small-unequal"),
    ((1, 1, 0, 1), "one-trial"),
    ((20, 40, 100, 150), "skewed-sizes"),
    ((1, 3, 40, 60), "skewed-tiny-side"),
    ((5, 200, 0, 7), "skewed-rare"),
    ((10, 10, 10, 10), "all-pass"),
    ((0, 30, 0, 30), "all-fail"),
    ((25, 25, 0, 25), "all-vs-none"),
    ((50, 50, 48, 50), "near-ceiling"),
    ((15, 20, 15, 20), "equal"),
    ((40, 80, 40, 80), "equal-80"),
    ((0, 50, 5, 50), "near-floor"),
    ((80, 100, 70, 100), "n100"),
    ((150, 200, 130, 200), "n200"),
    ((240, 250, 230, 250), "n250-high"),
    ((30, 250, 45, 250), "n250-low"),
]


@pytest.mark.parametrize("counts", [c for c, _ in SCIPY_TABLE], ids=[i for _, i in SCIPY_TABLE])
def test_matches_scipy(counts: tuple[int, int, int, int]) -> None:
    """Max abs difference over this table: 1.1e-13 (scipy samples 64 nuisance points)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    x1, n1, x2, n2 = counts
    table = [[x1, x2], [n1 - x1, n2 - x2]]  # columns are the two runs, as scipy's model wants
    assert fisher_exact(*counts) == pytest.approx(
        scipy_stats.fisher_exact(table).pvalue, rel=1e-9, abs=1e-15)
    less, greater = (scipy_stats.boschloo_exact(table, alternative=side, n=64).pvalue
                     for side in ("less", "greater"))  # two-sided = min(1, 2 min(less, greater))
    assert boschloo_less(*counts) == pytest.approx(less, rel=1e-10, abs=1e-12)
    assert boschloo_exact(*counts) == pytest.approx(min(1, 2 * min(less, greater)),
                                                    rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("counts", [(5000, 10000, 4800, 10000), (9990, 10000, 9970, 10000),
                                    (30, 10000, 60, 10000), (3000, 10000, 2500, 7000),
                                    (9000, 10000, 2000, 10000)],
                         ids=["mid", "ceiling", "floor", "unequal", "far-apart"])
def test_fisher_matches_scipy_at_10000(counts: tuple[int, int, int, int]) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    x1, n1, x2, n2 = counts
    expected = scipy_stats.fisher_exact([[x1, x2], [n1 - x1, n2 - x2]]).pvalue
    assert fisher_exact(*counts) == pytest.approx(expected, rel=1e-9, abs=1e-300)


# ---------------------------------------------------------------- against exact rationals


def _exact_weights(x1: int, n1: int, x2: int, n2: int) -> list[Fraction]:
    """P[region | t] for every total t, with the region decided in exact rationals."""
    big_n = n1 + n2

    def cdf(k: int, t: int) -> Fraction:
        lo = max(0, t - n2)
        return Fraction(sum(comb(n1, j) * comb(n2, t - j) for j in range(lo, k + 1)),
                        comb(big_n, t))

    stat = cdf(x1, x1 + x2)
    return [sum((Fraction(comb(n1, k) * comb(n2, t - k), comb(big_n, t))
                 for k in range(max(0, t - n2), min(n1, t) + 1) if cdf(k, t) <= stat),
                Fraction(0)) for t in range(big_n + 1)]


def _exact_fisher(x1: int, n1: int, x2: int, n2: int) -> Fraction:
    t = x1 + x2
    weights = [comb(n1, k) * comb(n2, t - k) for k in range(max(0, t - n2), min(n1, t) + 1)]
    observed = comb(n1, x1) * comb(n2, x2)
    return Fraction(sum(w for w in weights if w <= observed), comb(n1 + n2, t))


@pytest.mark.parametrize("sizes", [(1, 1), (3, 5), (6, 6), (8, 3), (10, 10), (13, 7)],
                         ids=["1x1", "3x5", "6x6", "8x3", "10x10", "13x7"])
def test_region_is_exact_for_every_table(sizes: tuple[int, int]) -> None:
    """Every table of these sizes: the float walk's regions equal the rational ones.

    Equal sizes tie every table with its mirror image (n - k2, n - k1), and statistics
    above 1/2 take the complement path: both are covered here.
    """
    n1, n2 = sizes
    for x1 in range(n1 + 1):
        for x2 in range(n2 + 1):
            if x1 >= min(n1, x1 + x2):
                continue  # statistic 1: p = 1 without a walk
            got = stats._region_weights(x1, n1, x2, n2)
            want = _exact_weights(x1, n1, x2, n2)
            assert max(abs(g - float(e)) for g, e in zip(got, want, strict=True)) < 1e-13, (x1, x2)
            assert fisher_exact(x1, n1, x2, n2) == pytest.approx(
                float(_exact_fisher(x1, n1, x2, n2)), rel=1e-12)


# ---------------------------------------------------------------- properties at larger n

counts = st.integers(1, 3000).flatmap(lambda n1: st.integers(1, 3000).flatmap(
    lambda n2: st.tuples(st.integers(0, n1), st.just(n1), st.integers(0, n2), st.just(n2))))


@settings(max_examples=20, deadline=None)
@given(counts, st.sampled_from(TESTS))
def test_bounded_and_symmetric(c: tuple[int, int, int, int], test: str) -> None:
    x1, n1, x2, n2 = c
    p = two_sided(test, x1, n1, x2, n2)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(two_sided(test, x2, n2, x1, n1), rel=1e-9, abs=1e-300)


@settings(max_examples=15, deadline=None)
@given(counts)
def test_one_sided_monotone_and_below_its_statistic(c: tuple[int, int, int, int]) -> None:
    """A more extreme table has a nested region, so p can only fall; and Boschloo's p
    never exceeds its statistic (Fisher's one-sided p)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    x1, n1, x2, n2 = c
    p = boschloo_less(x1, n1, x2, n2)
    fisher_less = scipy_stats.hypergeom.cdf(x1, n1 + n2, n1, x1 + x2)
    assert p <= fisher_less * (1 + 1e-9) + 1e-300
    if x1 > 0:
        assert boschloo_less(x1 - 1, n1, x2, n2) <= p * (1 + 1e-9) + 1e-300
    if x2 < n2:
        assert boschloo_less(x1, n1, x2 + 1, n2) <= p * (1 + 1e-9) + 1e-300


# ---------------------------------------------------------------- large n, and speed


@pytest.mark.parametrize(("counts", "expected"), [
    ((416, 520, 364, 520), 0.000220944),      # overflowed before (issue 8)
    ((10000, 10000, 0, 10000), 0.0),          # p below 1e-280: reported as 0
    ((10000, 10000, 10000, 10000), 1.0),
    ((5000, 10000, 5000, 10000), 0.994485),
    ((5000, 10000, 4800, 10000), 0.00475189),
    ((900, 1000, 200, 1000), 2.67521e-241),   # one side's statistic rounds to 1 in floats
], ids=["520", "10000-all-vs-none", "10000-all-pass", "10000-equal", "10000-mid", "1000-far"])
def test_large_counts(counts: tuple[int, int, int, int], expected: float) -> None:
    assert boschloo_exact(*counts) == pytest.approx(expected, rel=1e-5)


def _cpu(fn: object, *args: int) -> float:
    start = time.process_time()
    assert callable(fn)
    fn(*args)
    return time.process_time() - start


def test_fast_at_10000_trials() -> None:
    """Budget: one scenario at 10,000 trials a side well under 1 s (about 0.04 s of CPU
    on the reference machine; benchmarks/bench_stats.py has the full table)."""
    boschloo_exact.cache_clear()
    boschloo_less.cache_clear()
    assert _cpu(boschloo_exact, 7000, 10000, 6890, 10000) < 0.5
    # equal sizes and an odd total: every odd total ties at exactly 1/2 (decided without
    # integers; took minutes when each tie went to exact arithmetic)
    assert _cpu(boschloo_exact, 6467, 10000, 6468, 10000) < 0.5
    assert _cpu(fisher_exact, 7000, 10000, 6890, 10000) < 0.05


def test_fast_at_100_trials() -> None:
    """Budget: the common case, n <= 100, in milliseconds (20 scenarios < 0.2 s of CPU)."""
    boschloo_exact.cache_clear()
    boschloo_less.cache_clear()
    rng = random.Random(8)
    start = time.process_time()
    for _ in range(20):
        boschloo_exact(rng.randint(0, 100), 100, rng.randint(0, 100), 100)
    assert time.process_time() - start < 0.2
