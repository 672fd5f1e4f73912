"""Exact tests on two pass counts: is "x1 of n1" vs "x2 of n2" beyond trial noise?

Pure Python (no scipy, no numpy). Two tests:

- ``fisher_exact``: conditions on the total number of passes (hypergeometric).
- ``boschloo_exact``: unconditional; uses Fisher's one-sided p as its statistic and
  takes the supremum over the unknown common pass rate, which makes it uniformly
  more powerful than Fisher's while still holding its size (scipy's definition:
  two-sided = twice the smaller one-sided p, clipped to 1).

``diff`` calls ``two_sided(test, a_pass, a_n, b_pass, b_n)``. Both tests are exact at
every size (there is no switch to an approximation): Boschloo's costs O(n1 + n2) float
steps, Fisher's O(sqrt(n)). ``benchmarks/bench_stats.py`` measures them against scipy:
about 0.6 ms a scenario at 10 trials a side, 2.5 ms at 100, 8 ms at 1,000 and 40 ms
at 10,000 (scipy: 20x to 2,400x slower up to 1,000, out of reach beyond); p agrees
with scipy's to 1.1e-13 on the test table.

How Boschloo's test stays exact and linear. Write t = k1 + k2 for a table's total
passes and F_t(k) = P[X1 <= k | t] for the hypergeometric cdf: the statistic of table
(k1, k2) is F_t(k1). It increases with k1 at fixed t, so the rejection region
{F_t(k1) <= F_t0(x1)} is, for every t, the prefix k1 <= c_t, and

    P_pi(region) = sum_t Binomial(t; n1 + n2, pi) * w_t,   w_t = F_t(c_t).

Sequential sampling gives c_t <= c_(t+1) <= c_t + 1 and the exact recurrences
F_(t+1)(k) = F_t(k) - h_t(k) (n1 - k) / (n1 + n2 - t) and h_t(k+1) / h_t(k) = a ratio of
small integers (h the pmf), so one walk over t finds every c_t and w_t (``_walk``), with
no large integers and no overflow; its floats stay within ~1e-14 (relative) of the
rationals at 10,000 a side. A statistic above 1/2 would round towards 1, so that walk
runs on the region's complement seen from the fails, {F'_t'(n1 - k1 - 1) < 1 - F_t0(x1)},
whose numbers are small. Which tables are in the region is decided exactly: a float
closer than ``_BAND`` to the statistic is settled in integers, and the two systematic
ties of equal sizes are known without arithmetic (the mirror table (n - k2, n - k1),
and F_t((t - 1) / 2) = 1/2 at every odd t). pmf anchors use Loader's saddle-point form
(as R's dhyper), accurate to a few ulps where lgamma differences lose 1e-11.

The sup over pi is taken, as scipy does, by search: a 64-point grid uniform in
arcsin(sqrt(pi)) (where the binomial's spread is the same everywhere), then
golden-section search around the best 4 grid maxima. Each evaluation sums the binomial
terms within ``_SPREAD`` standard deviations of its mode (the rest weighs below 1e-14).
Checked against a 4,000-point grid on random tables up to 1,000 a side: equal to
1e-13. A p below ~1e-280 is reported as 0.0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import accumulate, repeat
from math import asin, comb, exp, floor, fsum, inf, log, log1p, sin, sqrt, tau
from operator import mul

#: Tests by the name ``--test`` takes.
TESTS = ("boschloo", "fisher")
DEFAULT_TEST = "boschloo"
DEFAULT_ALPHA = 0.05

_BAND = 1e-11     # float comparisons this close (relative) are redone in integers
_TINY = 1e-280    # statistics below this give p < 1e-280: reported as 0.0
_GRID = 64        # nuisance-parameter grid points (uniform in arcsin(sqrt(pi)))
_REFINE = 4       # grid maxima refined by golden-section search
_SPREAD = 8.0     # binomial terms summed: mode +- _SPREAD sd (+ 8)
_GOLDEN = 0.6180339887498949
_ITER = 26        # golden-section steps: the bracket shrinks to 4e-6 of two grid cells


def _check(x1: int, n1: int, x2: int, n2: int) -> None:
    if not (0 <= x1 <= n1 and 0 <= x2 <= n2):
        raise ValueError(f"pass counts out of range: {x1}/{n1}, {x2}/{n2}")


# ---------------------------------------------------------------- hypergeometric

#: log(n!) - log(sqrt(2 pi n) (n / e)^n) for n = 0 .. 15 (computed to 50 digits with
#: ``decimal``); larger n use its asymptotic series.
_STIRLERR = (0.0, 0.08106146679532726, 0.0413406959554093, 0.02767792568499834,
             0.020790672103765093, 0.016644691189821193, 0.013876128823070748,
             0.01189670994589177, 0.010411265261972096, 0.009255462182712733,
             0.00833056343336287, 0.007573675487951841, 0.00694284010720953,
             0.006408994188004207, 0.0059513701127588475, 0.005554733551962801)
_LOG_2PI = log(tau)


def _stirlerr(n: int) -> float:
    if n < len(_STIRLERR):
        return _STIRLERR[n]
    nn = float(n) * n
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / n


def _bd0(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x without cancellation (Loader 2000)."""
    if abs(x - mean) >= 0.1 * (x + mean):
        return x * log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    total, term, v2 = (x - mean) * v, 2 * x * v, v * v
    for j in range(3, 200, 2):
        term *= v2
        nxt = total + term / j
        if nxt == total:
            break
        total = nxt
    return total


def _log_binom(k: int, n: int, p: float) -> float:
    """log of the binomial pmf, accurate to a few ulps (Loader's saddle-point form)."""
    q = 1 - p
    if k == 0:
        return -_bd0(n, n * q) - n * p if p < 0.1 else n * log(q)
    if k == n:
        return -_bd0(n, n * p) - n * q if q < 0.1 else n * log(p)
    lc = _stirlerr(n) - _stirlerr(k) - _stirlerr(n - k) - _bd0(k, n * p) - _bd0(n - k, n * q)
    return lc - 0.5 * (_LOG_2PI + log(k) + log1p(-k / n))


def _log_pmf(k: int, n1: int, n2: int, t: int) -> float:
    """log P[X1 = k] when t passes fall among n1 + n2 trials (k in the support).

    As R's dhyper: a ratio of three binomial pmfs at p = t / (n1 + n2), each accurate
    to a few ulps, so the result is too (lgamma differences would lose 1e-11 at 10^4).
    """
    big_n = n1 + n2
    if t in (0, big_n):
        return 0.0
    p = t / big_n
    return _log_binom(k, n1, p) + _log_binom(t - k, n2, p) - _log_binom(t, big_n, p)


def _step_up(k: int, n1: int, n2: int, t: int) -> float:
    """pmf(k + 1) / pmf(k) at fixed t."""
    return (n1 - k) * (t - k) / ((k + 1) * (n2 - t + k + 1))


def _tail_sum(start: float, ratios: Iterable[float]) -> float:
    """start * (1 + r1 + r1 r2 + ...), stopping once terms are below 1e-18 of the sum."""
    total = term = start
    for r in ratios:
        term *= r
        total += term
        if term < 1e-18 * total:
            break
    return total


def _log_cdf(x: int, n1: int, n2: int, t: int) -> float:
    """log P[X1 <= x | t], summed from the shorter side of the mode."""
    lo, hi = max(0, t - n2), min(n1, t)
    if x >= hi:
        return 0.0
    mode = (t + 1) * (n1 + 1) // (n1 + n2 + 2)
    if x <= mode:  # terms fall going down: pmf(k - 1) / pmf(k)
        down = (1 / _step_up(k - 1, n1, n2, t) for k in range(x, lo, -1))
        return _log_pmf(x, n1, n2, t) + log(_tail_sum(1.0, down))
    up = (_step_up(k, n1, n2, t) for k in range(x + 1, hi))
    upper = exp(_log_pmf(x + 1, n1, n2, t)) * _tail_sum(1.0, up)
    return log1p(-min(upper, 1.0))


def _exact_cdf_num(x: int, n1: int, n2: int, t: int) -> int:
    """P[X1 <= x | t] * comb(n1 + n2, t), an integer (for deciding ties exactly)."""
    lo, hi = max(0, t - n2), min(n1, t)
    if x - lo > hi - x:  # fewer terms above x: take the complement
        return comb(n1 + n2, t) - _exact_upper_num(x + 1, n1, n2, t)
    term, total = comb(n1, lo) * comb(n2, t - lo), 0
    for j in range(lo, x + 1):
        total += term
        term = term * (n1 - j) * (t - j) // ((j + 1) * (n2 - t + j + 1))
    return total


def _exact_upper_num(x: int, n1: int, n2: int, t: int) -> int:
    """P[X1 >= x | t] * comb(n1 + n2, t)."""
    hi = min(n1, t)
    term, total = comb(n1, hi) * comb(n2, t - hi), 0
    for j in range(hi, x - 1, -1):
        total += term
        term = term * j * (n2 - t + j) // ((n1 - j + 1) * (t - j + 1))
    return total


def _lower_tail(x: int, n1: int, n2: int, t: int) -> float:
    """P[X1 <= x | t] for x at or below the mode (terms fall going down)."""
    down = (1 / _step_up(k - 1, n1, n2, t) for k in range(x, max(0, t - n2), -1))
    return exp(_log_pmf(x, n1, n2, t)) * _tail_sum(1.0, down)


def _upper_tail(x: int, n1: int, n2: int, t: int) -> float:
    """P[X1 >= x | t] for x at or above the mode (terms fall going up)."""
    up = (_step_up(k, n1, n2, t) for k in range(x, min(n1, t)))
    return exp(_log_pmf(x, n1, n2, t)) * _tail_sum(1.0, up)


# ---------------------------------------------------------------- Fisher


def _pmf_le(k: int, x: int, n1: int, n2: int, t: int) -> bool:
    """pmf(k) <= pmf(x), exactly (floats first, integers when they are too close)."""
    if n1 == n2 and k == t - x:
        return True  # the mirror image (x2, x1) is exactly as likely
    diff = _log_pmf(k, n1, n2, t) - _log_pmf(x, n1, n2, t)
    if abs(diff) > _BAND:
        return diff < 0
    return comb(n1, k) * comb(n2, t - k) <= comb(n1, x) * comb(n2, t - x)


def _first_le(lo: int, hi: int, pred: Callable[[int], bool]) -> int:
    """Smallest k in [lo, hi] with pred(k), pred monotone (False... True); hi + 1 if none."""
    hi += 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def fisher_exact(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided Fisher p for passes ``x1`` of ``n1`` against ``x2`` of ``n2``.

    Sums the probabilities of every table with the same margins that is no more
    likely than the observed one. The pmf is unimodal, so those tables are the
    observed one's own tail plus the far tail from where the pmf falls to the
    observed level (found by bisection, ties decided in integers).
    """
    _check(x1, n1, x2, n2)
    t = x1 + x2
    lo, hi = max(0, t - n2), min(n1, t)
    mode = (t + 1) * (n1 + 1) // (n1 + n2 + 2)
    if x1 <= mode:
        far = _first_le(max(mode, x1 + 1), hi, lambda k: _pmf_le(k, x1, n1, n2, t))
        p = _lower_tail(x1, n1, n2, t) + (_upper_tail(far, n1, n2, t) if far <= hi else 0.0)
    else:
        near = _first_le(lo, mode, lambda k: not _pmf_le(k, x1, n1, n2, t))
        p = _upper_tail(x1, n1, n2, t) + (_lower_tail(near - 1, n1, n2, t) if near > lo else 0.0)
    return min(1.0, p)


# ---------------------------------------------------------------- Boschloo


class _Region:
    """Tables (k, t - k) with F_t(k) <= F_t0(x) (or < with ``strict``), decided exactly."""

    def __init__(self, x: int, t0: int, n1: int, n2: int, strict: bool = False) -> None:
        self.x, self.t0, self.n1, self.n2, self.strict = x, t0, n1, n2, strict
        self.stat = exp(_log_cdf(x, n1, n2, t0))
        self.below, self.above = self.stat * (1 - _BAND), self.stat * (1 + _BAND)
        self._num: int | None = None

    def holds(self, cdf: float, k: int, t: int) -> bool:
        """Is table (k, t - k), whose cdf is about ``cdf``, in the region?"""
        if cdf < self.below:
            return True
        return cdf <= self.above and self._exact(k, t)

    def _exact(self, k: int, t: int) -> bool:
        n1, n2, t0, big_n = self.n1, self.n2, self.t0, self.n1 + self.n2
        if (k, t) == (self.x, t0) or (n1 == n2 and (k, t) == (self.x + n1 - t0, big_n - t0)):
            return not self.strict  # the observed table or its mirror (n - k2, n - k1): a tie
        if n1 == n2 and 2 * self.x + 1 == t0 and 2 * k + 1 == t:
            return not self.strict  # both exactly 1/2: exchangeable groups, an odd total
        if self._num is None:
            self._num = _exact_cdf_num(self.x, n1, n2, t0)
        left, right = _exact_cdf_num(k, n1, n2, t) * comb(big_n, t0), self._num * comb(big_n, t)
        return left < right or (left == right and not self.strict)


def _walk(region: _Region, beyond: bool = False) -> list[float]:
    """P[X1 <= c_t | t] for t = 0 .. n1 + n2, c_t the region's last k at t (+ 1 if beyond)."""
    n1, n2 = region.n1, region.n2
    big_n = n1 + n2
    out = [0.0] * (big_n + 1)
    c, f, hc, hn = -1, 0.0, 0.0, 1.0  # cutoff c_t, F_t(c), pmf at c and at c + 1
    below, above = region.below, region.above  # inlined: this loop runs n1 + n2 times
    for t in range(big_n + 1):
        hi = t if t < n1 else n1
        while c + 1 < hi and (f + hn < below
                              or (f + hn <= above and region.holds(f + hn, c + 1, t))):
            c, f, hc = c + 1, f + hn, hn
            hn *= (n1 - c) * (t - c) / ((c + 1) * (n2 - t + c + 1))  # pmf(c + 1) / pmf(c)
        out[t] = f + hn if beyond else f
        if t == big_n:
            break
        grow = (t + 1) / (big_n - t)
        if c + 1 < t + 1 - n2:  # empty, and the support's low end passes c + 1
            c += 1
            hn *= (n1 - c) / (c + 1) * grow  # a step along the diagonal
        else:
            f -= hc * (n1 - c) / (big_n - t)  # one more pass falls: sequential sampling
            hc *= (n2 - t + c) / (t + 1 - c) * grow
            hn *= (n2 - t + c + 1) / (t - c) * grow
            if c < t + 1 - n2:  # the region is empty at t + 1
                f = hc = 0.0
            elif f < 0.0:  # rounding in the subtraction
                f = 0.0
        if hn < _TINY:
            hn = exp(_log_pmf(c + 1, n1, n2, t + 1))
    return out


def _low_end(n1: int, n2: int) -> list[float]:
    """P[X1 = lo_t | t] for t = 0 .. n1 + n2, lo_t = max(0, t - n2) the support's low end.

    comb(n2, t) / comb(N, t) up to t = n2, then comb(n1, m) / comb(N, m) for m = N - t
    fails: both fall monotonically from 1, so running products lose nothing that matters.
    """
    big_n = n1 + n2
    head = accumulate(((n2 - t) / (big_n - t) for t in range(n2)), mul, initial=1.0)
    tail = list(accumulate(((n1 - m) / (big_n - m) for m in range(n1)), mul, initial=1.0))
    return [*head, *reversed(tail[:-1])]


def _region_weights(x1: int, n1: int, x2: int, n2: int) -> list[float]:
    """w_t = P[(k1, k2) in the region of x1 | k1 + k2 = t], t = 0 .. n1 + n2.

    The region is {F_t(k1) <= F_t0(x1)}. When that statistic is above 1/2 its
    floats would round to 1; the walk then runs on the complement seen from the
    fails, {F'_t'(n1 - k1 - 1) < 1 - F_t0(x1)}, which is small and accurate.
    """
    t0, big_n = x1 + x2, n1 + n2
    region = _Region(x1, t0, n1, n2)
    if region.stat <= 0.5:
        return _walk(region)
    mirror = _Region(n1 - x1 - 1, big_n - t0, n1, n2, strict=True)
    # below 1e-280 the complement's own tables weigh nothing: only the first one beyond
    # them counts, within 1e-280 * (n1 + n2)^2 of the support's low end
    complement = _walk(mirror, beyond=True) if mirror.stat >= _TINY else _low_end(n1, n2)
    return [1.0 - v for v in reversed(complement)]


@lru_cache(maxsize=16)
def _ratios(big_n: int) -> tuple[list[float], list[float]]:
    """binom(t + 1) / binom(t) and binom(t - 1) / binom(t), without the pi factor."""
    up = [(big_n - t) / (t + 1) for t in range(big_n)]
    down = [0.0] + [t / (big_n - t + 1) for t in range(1, big_n + 1)]
    return up, down


def _mixture(w: list[float], pi: float) -> float:
    """sum_t Binomial(t; N, pi) w_t, over the terms within _SPREAD sd of the mode."""
    big_n = len(w) - 1
    if pi <= 0.0 or pi >= 1.0:
        return w[0] if pi <= 0.0 else w[big_n]
    m = min(big_n, floor((big_n + 1) * pi))
    half = int(_SPREAD * sqrt(big_n * pi * (1 - pi))) + 8
    a, b = max(0, m - half), min(big_n, m + half)
    rho = pi / (1 - pi)
    at_mode = exp(_log_binom(m, big_n, pi))
    up, down = _ratios(big_n)
    right = accumulate(map(mul, up[m:b], repeat(rho)), mul, initial=at_mode)
    left = accumulate(map(mul, down[m:a:-1], repeat(1 / rho)), mul, initial=at_mode)
    total: float = (sum(map(mul, right, w[m:b + 1]))
                    + sum(map(mul, left, map(w.__getitem__, range(m, a - 1, -1)))))
    return total - at_mode * w[m]


def _golden(w: list[float], lo: float, hi: float) -> float:
    """max of _mixture at pi = sin(theta)^2 for theta in [lo, hi], golden-section search."""
    def value(theta: float) -> float:
        return _mixture(w, sin(theta) ** 2)
    m1, m2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    v1, v2 = value(m1), value(m2)
    for _ in range(_ITER):
        if v1 < v2:
            lo, m1, v1 = m1, m2, v2
            m2 = lo + _GOLDEN * (hi - lo)
            v2 = value(m2)
        else:
            hi, m2, v2 = m2, m1, v1
            m1 = hi - _GOLDEN * (hi - lo)
            v1 = value(m1)
    return max(v1, v2)


def _sup(w: list[float], enough: float = inf) -> float:
    """sup over pi of _mixture: a grid in arcsin(sqrt(pi)), then its best maxima refined.

    Returns early with any lower bound that reaches ``enough``: the mean of ``w`` (the
    average of _mixture over a uniform pi), then the grid's maximum.
    """
    mean = fsum(w) / len(w)
    if mean >= enough:
        return mean
    step = asin(1.0) / _GRID
    values = [_mixture(w, sin(i * step) ** 2) for i in range(_GRID + 1)]
    if max(values) >= enough:
        return max(values)
    peaks = [i for i in range(1, _GRID) if values[i - 1] <= values[i] >= values[i + 1]]
    peaks = sorted(peaks, key=values.__getitem__, reverse=True)[:_REFINE]
    return max([*values, *(_golden(w, (i - 1) * step, (i + 1) * step) for i in peaks)])


def less_extreme(x1: int, n1: int, x2: int, n2: int, enough: float = inf) -> float:
    """One-sided Boschloo p, or any value of at least ``enough`` below it."""
    _check(x1, n1, x2, n2)
    if log_stat(x1, n1, x2, n2) < log(_TINY):
        return 0.0  # below 1e-280 (Boschloo's p is at most its statistic)
    if x1 >= min(n1, x1 + x2):
        return 1.0  # the statistic is 1: every table is in the region
    return min(1.0, _sup(_region_weights(x1, n1, x2, n2), enough))


def log_stat(x1: int, n1: int, x2: int, n2: int) -> float:
    """log of Fisher's one-sided p, P[X1 <= x1 | x1 + x2 passes]."""
    return _log_cdf(x1, n1, n2, x1 + x2)


@lru_cache(maxsize=4096)
def boschloo_less(x1: int, n1: int, x2: int, n2: int) -> float:
    """One-sided Boschloo p for "the first group passes less often than the second"."""
    return less_extreme(x1, n1, x2, n2)


@lru_cache(maxsize=4096)
def boschloo_exact(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided Boschloo p: twice the smaller one-sided p, at most 1.

    The side with the smaller statistic goes first; the other side's search stops as
    soon as it is known not to be smaller.
    """
    _check(x1, n1, x2, n2)
    first, second = sorted([(x1, n1, x2, n2), (x2, n2, x1, n1)], key=lambda s: log_stat(*s))
    p = boschloo_less(*first)
    return min(1.0, 2 * min(p, less_extreme(*second, enough=p)))


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


def one_sided_less(test: str, x1: int, n1: int, x2: int, n2: int) -> float:
    """p of ``test`` for "the first group passes less often than the second", one-sided:
    Boschloo's one-sided p, or Fisher's P[X1 <= x1 | the total passes] (1.0 if a side
    ran none). For a moved row, ``two_sided`` already computed and cached the side that
    moved (Boschloo), so this is free there."""
    if n1 == 0 or n2 == 0:
        return 1.0
    if test == "boschloo":
        return boschloo_less(x1, n1, x2, n2)
    if test == "fisher":
        _check(x1, n1, x2, n2)
        return min(1.0, exp(log_stat(x1, n1, x2, n2)))
    raise ValueError(f"unknown test {test!r}: use one of {', '.join(TESTS)}")
