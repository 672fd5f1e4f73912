"""Exact tests on two pass counts: is "x1 of n1" vs "x2 of n2" beyond trial noise?

Pure Python, exact integer arithmetic where it matters (no scipy). Two tests:

- ``fisher_exact``: conditions on the total number of passes (hypergeometric).
- ``boschloo_exact``: unconditional; uses Fisher's one-sided p as its statistic and
  takes the supremum over the unknown common pass rate, which makes it uniformly
  more powerful than Fisher's while still holding its size (scipy's definition:
  two-sided = twice the smaller one-sided p, clipped to 1).

``diff`` calls ``two_sided(test, a_pass, a_n, b_pass, b_n)``.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from math import comb

#: Tests by the name ``--test`` takes.
TESTS = ("boschloo", "fisher")
DEFAULT_TEST = "boschloo"
DEFAULT_ALPHA = 0.05

_GRID = 256  # points of the nuisance-parameter grid before local refinement


def _check(x1: int, n1: int, x2: int, n2: int) -> None:
    if not (0 <= x1 <= n1 and 0 <= x2 <= n2):
        raise ValueError(f"pass counts out of range: {x1}/{n1}, {x2}/{n2}")


def fisher_exact(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided Fisher p for passes ``x1`` of ``n1`` against ``x2`` of ``n2``.

    Sums the probabilities of every table with the same margins that is no more
    likely than the observed one; integer weights make the comparison exact.
    """
    _check(x1, n1, x2, n2)
    total = x1 + x2
    lo, hi = max(0, total - n2), min(n1, total)
    weights = [comb(n1, k) * comb(n2, total - k) for k in range(lo, hi + 1)]
    observed = weights[x1 - lo]
    p = Fraction(sum(w for w in weights if w <= observed), comb(n1 + n2, total))
    return min(1.0, float(p))


@lru_cache(maxsize=256)
def _fisher_less_table(n1: int, n2: int) -> dict[tuple[int, int], Fraction]:
    """Fisher's one-sided p (P[X1 <= x1 | margins]) for every table with these sizes."""
    out: dict[tuple[int, int], Fraction] = {}
    for total in range(n1 + n2 + 1):
        lo, hi = max(0, total - n2), min(n1, total)
        denom = comb(n1 + n2, total)
        running = 0
        for k in range(lo, hi + 1):
            running += comb(n1, k) * comb(n2, total - k)
            out[(k, total - k)] = Fraction(running, denom)
    return out


def _region_poly(n1: int, n2: int, x1: int, x2: int) -> list[float]:
    """Coefficients c_s so that P_pi(region) = sum c_s pi^s (1-pi)^(N-s).

    The region is every table whose one-sided statistic is at most the observed one.
    """
    stats = _fisher_less_table(n1, n2)
    bound = stats[(x1, x2)]
    coeffs = [0] * (n1 + n2 + 1)
    for (k1, k2), value in stats.items():
        if value <= bound:
            coeffs[k1 + k2] += comb(n1, k1) * comb(n2, k2)
    return [float(c) for c in coeffs]


def _poly_at(coeffs: list[float], pi: float) -> float:
    n = len(coeffs) - 1
    q = 1.0 - pi
    return sum(c * pi**s * q ** (n - s) for s, c in enumerate(coeffs) if c)


def _sup(coeffs: list[float]) -> float:
    """max over pi in [0, 1]: a grid, then golden-section search around the best point."""
    grid = [i / _GRID for i in range(_GRID + 1)]
    values = [_poly_at(coeffs, p) for p in grid]
    best = max(range(len(grid)), key=values.__getitem__)
    lo, hi = grid[max(0, best - 1)], grid[min(_GRID, best + 1)]
    ratio = 0.6180339887498949
    for _ in range(40):
        m1, m2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if _poly_at(coeffs, m1) < _poly_at(coeffs, m2):
            lo = m1
        else:
            hi = m2
    return max(values[best], _poly_at(coeffs, (lo + hi) / 2))


@lru_cache(maxsize=4096)
def boschloo_less(x1: int, n1: int, x2: int, n2: int) -> float:
    """One-sided Boschloo p for "the first group passes less often than the second"."""
    _check(x1, n1, x2, n2)
    return min(1.0, _sup(_region_poly(n1, n2, x1, x2)))


def boschloo_exact(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided Boschloo p: twice the smaller one-sided p, at most 1."""
    _check(x1, n1, x2, n2)
    less = boschloo_less(x1, n1, x2, n2)
    greater = boschloo_less(x2, n2, x1, n1)
    return min(1.0, 2 * min(less, greater))


_BY_NAME: dict[str, Callable[[int, int, int, int], float]] = {
    "boschloo": boschloo_exact,
    "fisher": fisher_exact,
}


def two_sided(test: str, x1: int, n1: int, x2: int, n2: int) -> float:
    """p of ``test`` (boschloo, fisher) for ``x1/n1`` vs ``x2/n2`` (1.0 if a side ran none)."""
    if n1 == 0 or n2 == 0:
        return 1.0
    try:
        fn = _BY_NAME[test]
    except KeyError:
        raise ValueError(f"unknown test {test!r}: use one of {', '.join(TESTS)}") from None
    return fn(x1, n1, x2, n2)
