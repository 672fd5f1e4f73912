"""Exact tests on pass counts: known values, size under the null, power, noise simulations."""

from __future__ import annotations

import random
from math import comb

import pytest

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


def test_matches_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    for x1, n1, x2, n2 in [(10, 10, 2, 10), (7, 12, 2, 9), (3, 5, 2, 5), (15, 20, 8, 20),
                           (18, 20, 6, 20), (1, 10, 10, 10)]:
        table = [[x1, x2], [n1 - x1, n2 - x2]]
        assert fisher_exact(x1, n1, x2, n2) == pytest.approx(
            stats.fisher_exact(table).pvalue, rel=1e-9)
        assert boschloo_exact(x1, n1, x2, n2) == pytest.approx(
            stats.boschloo_exact(table, n=1024).pvalue, rel=1e-6)
