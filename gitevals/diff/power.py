"""Exact power of ``diff``'s test, and the trials a side it needs to see a drop (pure).

``diff`` calls a scenario "regressed" when B passed less often than A and the two-sided
exact test (``gitevals.diff.stats``) gives p < alpha. With ``n`` trials a side, A passing
at rate ``p_a`` and B at ``p_b = p_a - drop``, the chance of that call is

    power = sum over x_a of Binomial(x_a; n, p_a) * P[x_b <= c(x_a)],  x_b ~ Binomial(n, p_b)

where ``c(x_a)`` is the most passes of B that the test still calls regressed against
``x_a`` (-1 when none). Nothing is approximated: ``c`` comes from the test itself, one
table at a time. The test's region is monotone (more passes of A, or fewer of B, never
make p larger), so ``c`` only grows with ``x_a``: one walk over ``x_a`` finds every
``c`` with about two p-values per ``x_a``. Values of ``x_a`` whose binomial mass is
below 1e-12 are left out (their whole weight bounds the error).

The trials needed are the smallest ``n`` whose power reaches the goal. Exact power is
not monotone in ``n`` (it saw-tooths with the lattice of tables), so the search brackets
the first ``n`` that reaches the goal by bisection, then looks back over the previous
``_BACK`` sizes for a smaller one that also does.
"""

from __future__ import annotations

from functools import lru_cache
from math import asin, ceil, comb, exp, lgamma, log, sin, sqrt
from statistics import NormalDist

from gitevals.diff import stats
from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST, two_sided

DEFAULT_DROP = 0.20
DEFAULT_POWER = 0.8
#: The rate assumed for a scenario that has no run at the revision (the stated prior):
#: 0.5 is where a pass rate varies most, so it asks for the most trials.
DEFAULT_PRIOR = 0.5
MAX_PLANNED = 1000
_MASS = 1e-12
_BACK = 12


def _pmf(n: int, p: float) -> list[float]:
    if p <= 0.0:
        return [1.0] + [0.0] * n
    if p >= 1.0:
        return [0.0] * n + [1.0]
    lp, lq = log(p), log(1 - p)
    base = lgamma(n + 1)
    return [exp(base - lgamma(k + 1) - lgamma(n - k + 1) + k * lp + (n - k) * lq)
            for k in range(n + 1)]


def _exact_pmf(n: int, p: float) -> list[float]:
    if n <= 60:
        return [comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]
    return _pmf(n, p)


@lru_cache(maxsize=4096)
def cutoffs(n: int, test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA,
            lo: int = 0, hi: int = -1, n_b: int = -1,
            b_window: tuple[int, int] | None = None) -> tuple[int, ...]:
    """``c(x_a)`` for x_a = lo .. hi (hi -1: n) with ``n`` trials of A and ``n_b`` of B
    (-1: n): the most passes of B that ``diff`` still calls regressed (-1: none).

    With ``b_window`` (first, last), only B's passes in that window are classified: a
    cutoff above it reads as ``last``, one below it as -1 (for sums whose weight
    outside the window is negligible)."""
    hi = n if hi < 0 else hi
    n_b = n if n_b < 0 else n_b
    if test == "boschloo":
        return _boschloo_cutoffs(n, n_b, alpha, lo, hi, b_window or (0, n_b))
    out, c = [], -1
    for xa in range(lo, hi + 1):
        while c + 1 <= n_b and _called(test, alpha, xa, n, c + 1, n_b):
            c += 1
        out.append(c)
    return tuple(out)


def _window(pmf: list[float]) -> tuple[int, int]:
    """The first and last counts whose probability is above ``_MASS``."""
    keep = [k for k, w in enumerate(pmf) if w > _MASS]
    return keep[0], keep[-1]


def _called(test: str, alpha: float, xa: int, n: int, xb: int, n_b: int) -> bool:
    """Does ``diff`` call B regressed at ``xb`` of ``n_b`` against ``xa`` of ``n``?"""
    return xb * n < xa * n_b and two_sided(test, xa, n, xb, n_b) < alpha


def _boschloo_cutoffs(n: int, n_b: int, alpha: float, lo: int, hi: int,
                      b_window: tuple[int, int], batch: bool | None = None) -> tuple[int, ...]:
    """Boschloo's region is a threshold on Fisher's one-sided p (its statistic): its
    p-value is the sup over the common rate of P[statistic <= observed], which grows
    with the observed statistic. So sort the tables by statistic and bisect for the last
    one whose p is below alpha / 2: about log2(tables) exact tests instead of one or
    two per x_a. (Only tables where B passed less often can be called regressed.)"""
    half = alpha / 2
    tables = _by_statistic(n, n_b, lo, hi, b_window, batch)
    first, last = 0, len(tables)  # tables[:first] are called; tables[last:] are not
    while first < last:
        mid = (first + last) // 2
        _, xa, xb = tables[mid]
        if stats.less_extreme(xb, n_b, xa, n, enough=half) < half:
            first = mid + 1
        else:
            last = mid
    cut = {xa: -1 for xa in range(lo, hi + 1)}
    for _, xa, xb in tables[:first]:
        cut[xa] = max(cut[xa], xb)
    return tuple(cut[xa] for xa in range(lo, hi + 1))


#: Tables from which the statistics are computed in one numpy pass: below, the pure
#: per-table loop costs less than importing numpy.
_BATCH = 400


def _by_statistic(n: int, n_b: int, lo: int, hi: int, b_window: tuple[int, int],
                  batch: bool | None = None) -> list[tuple[float, int, int]]:
    """(log_stat, x_a, x_b) of every table B could be called regressed at, sorted.

    Past ``_BATCH`` tables (``batch`` forces either way) the statistics come from
    ``_log_stats`` (numpy: 2-3x faster sample sizes for ``plan``); they agree with
    ``stats.log_stat`` to ~1e-12 of their value, and the region found from them is the
    same (``tests/diff/test_power.py`` checks both ways' cutoffs)."""
    pairs = [(xa, xb) for xa in range(lo, hi + 1)
             for xb in range(b_window[0], b_window[1] + 1) if xb * n < xa * n_b]
    if batch is False or (batch is None and len(pairs) <= _BATCH):
        return sorted((stats.log_stat(xb, n_b, xa, n), xa, xb) for xa, xb in pairs)
    keys = _log_stats(n, n_b, [xa for xa, _ in pairs], [xb for _, xb in pairs])
    return sorted(zip(keys, (xa for xa, _ in pairs), (xb for _, xb in pairs), strict=True))


def _log_stats(n: int, n_b: int, xas: list[int], xbs: list[int]) -> list[float]:
    """``stats.log_stat(xb, n_b, xa, n)`` for each pair, in one numpy pass: log
    P[X_B <= x_b | x_a + x_b passes] from every hypergeometric pmf of the totals seen
    (log-factorials from ``lgamma``), summed from below where the cdf is at most 1/2 and
    as log1p(-upper tail) above it, as ``log_stat`` does (its float path, no integers:
    only the order of the tables is used, and ties share their p-value)."""
    import numpy as np

    big_n = n + n_b
    lf = np.array([lgamma(k + 1) for k in range(big_n + 1)])
    xa_arr, xb_arr = np.array(xas), np.array(xbs)
    totals = np.unique(xa_arr + xb_arr)
    k = np.arange(n_b + 1)
    rest = totals[:, None] - k[None, :]  # A's passes at each (total, B's passes)
    ok = (rest >= 0) & (rest <= n)
    safe = np.clip(rest, 0, n)
    log_h = (lf[n_b] - lf[k] - lf[n_b - k])[None, :] + lf[n] - lf[safe] - lf[n - safe] \
        - (lf[big_n] - lf[totals] - lf[big_n - totals])[:, None]
    log_h = np.where(ok, log_h, -np.inf)
    with np.errstate(divide="ignore"):
        lower = np.logaddexp.accumulate(log_h, axis=1)
        upper = np.logaddexp.accumulate(log_h[:, ::-1], axis=1)[:, ::-1]  # P[X_B >= k]
        above = np.concatenate([upper[:, 1:], np.full((len(totals), 1), -np.inf)], axis=1)
        from_top = np.log1p(-np.minimum(np.exp(above), 1.0))
    row = np.searchsorted(totals, xa_arr + xb_arr)
    low, high = lower[row, xb_arr], from_top[row, xb_arr]
    top = np.minimum(n_b, xa_arr + xb_arr)
    out = np.where(xb_arr >= top, 0.0, np.where(low <= log(0.5), low, high))
    return [float(v) for v in out]


def power(n: int, rate: float, drop: float, test: str = DEFAULT_TEST,
          alpha: float = DEFAULT_ALPHA) -> float:
    """P[diff calls "regressed"] with ``n`` trials a side, A at ``rate``, B at rate - drop."""
    pb = rate - drop
    if n <= 0 or pb < 0 or drop <= 0:
        return 0.0
    pa_pmf, pb_pmf = _exact_pmf(n, rate), _exact_pmf(n, pb)
    lo, hi = _window(pa_pmf)
    cdf_b, acc = [], 0.0
    for w in pb_pmf:
        acc += w
        cdf_b.append(min(acc, 1.0))
    total = 0.0
    cut = cutoffs(n, test, alpha, lo, hi, n, _window(pb_pmf))
    for xa, c in zip(range(lo, hi + 1), cut, strict=True):
        if c >= 0:
            total += pa_pmf[xa] * cdf_b[c]
    return min(total, 1.0)


def _normal_guess(rate: float, drop: float, alpha: float, goal: float) -> int:
    z = NormalDist().inv_cdf
    pb, bar = rate - drop, rate - drop / 2
    spread = (z(1 - alpha / 2) * sqrt(2 * bar * (1 - bar))
              + z(goal) * sqrt(rate * (1 - rate) + pb * (1 - pb)))
    return max(2, int((spread / drop) ** 2) + 1)


@lru_cache(maxsize=1024)
def trials_needed(rate: float, drop: float = DEFAULT_DROP, goal: float = DEFAULT_POWER,
                  test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA) -> int | None:
    """Smallest trials a side whose exact power reaches ``goal``; None when the drop is
    impossible (below a rate of 0) or needs more than ``MAX_PLANNED`` trials."""
    if drop <= 0 or rate - drop < -1e-12:
        return None
    rate = min(max(rate, 0.0), 1.0)
    guess = _normal_guess(rate, drop, alpha, goal)
    if guess > MAX_PLANNED * 1.25:  # far beyond what a planner should spend exact sums on
        return None
    lo, hi = 1, max(2, guess)  # power(1) < goal: one trial a side is never beyond noise
    if power(hi, rate, drop, test, alpha) >= goal:
        low = max(1, int(hi * 0.8))
        if power(low, rate, drop, test, alpha) < goal:
            lo = low
        else:
            hi = low
    else:
        while power(hi, rate, drop, test, alpha) < goal:
            if hi >= MAX_PLANNED:
                return None
            lo, hi = hi, min(MAX_PLANNED, int(hi * 1.25) + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(mid, rate, drop, test, alpha) >= goal:
            hi = mid
        else:
            lo = mid
    best = hi
    for n in range(hi - 1, max(1, hi - _BACK) - 1, -1):
        if power(n, rate, drop, test, alpha) >= goal:
            best = n
    return best


@lru_cache(maxsize=8192)
def underpowered(trials: int, rate: float, drop: float = DEFAULT_DROP,
                 goal: float = DEFAULT_POWER, test: str = DEFAULT_TEST,
                 alpha: float = DEFAULT_ALPHA) -> bool:
    """Can ``trials`` a side NOT detect a drop of ``drop`` from ``rate`` with ``goal`` power?

    False when the drop cannot happen (``rate < drop``). Sizes of four times the normal
    approximation's need or more are taken as enough without the exact sum (their exact
    power is above 0.99 for every rate and a drop of 5 points or more)."""
    if trials <= 0:
        return True
    if rate - drop < -1e-12 or drop <= 0:
        return False
    if trials >= 4 * _normal_guess(min(rate, 1.0), drop, alpha, goal):
        return False
    return power(trials, rate, drop, test, alpha) < goal


#: Trials a side up to which ``scenario_mde`` sums the exact power.
EXACT_MDE = 50


def _arcsine_mde(trials: int, rate: float, level: float, goal: float) -> float | None:
    """2 asin(sqrt(r)) - 2 asin(sqrt(r - d)) = (z_(1 - level/2) + z_goal) sqrt(2 / n),
    solved for d and rounded up to a whole point."""
    z = NormalDist().inv_cdf
    h = 2 * asin(sqrt(rate)) - (z(1 - level / 2) + z(goal)) * sqrt(2 / trials)
    if h <= 0:
        return None
    return ceil(100 * (rate - sin(h / 2) ** 2) - 1e-9) / 100


def _power_at(cut: tuple[int, ...], lo: int, pa_pmf: list[float], n: int, pb: float) -> float:
    """power() from cutoffs already found for A's window ``lo ..``: the sum alone."""
    cdf_b, acc = [], 0.0
    for w in _exact_pmf(n, pb):
        acc += w
        cdf_b.append(min(acc, 1.0))
    return min(1.0, sum(pa_pmf[xa] * cdf_b[c] for xa, c in enumerate(cut, start=lo) if c >= 0))


@lru_cache(maxsize=1024)
def scenario_mde(trials: int, rate: float, level: float, goal: float = DEFAULT_POWER,
                 test: str = DEFAULT_TEST) -> float | None:
    """The smallest drop (a fraction, whole points) from ``rate`` that ``trials`` a side
    call "regressed" with ``goal`` power at ``level``: what one scenario must lose on its
    own to be seen. None when even a drop to 0 is not.

    Up to ``EXACT_MDE`` trials it is exact: the test's cutoffs do not depend on B's
    rate, so they are found once (over A's likely counts and every count of B) and each
    drop costs one sum (as ``power``). Beyond, where the exact sums cost seconds, the
    normal approximation on the arcsine scale (Cohen's h), which is within a point or
    two of the exact answer there (``tests/stats/test_stats_kernel.py``)."""
    top = round(rate * 100)
    if trials <= 0 or top < 1:
        return None
    if trials > EXACT_MDE:
        return _arcsine_mde(trials, rate, level, goal)
    pa_pmf = _exact_pmf(trials, rate)
    lo, hi = _window(pa_pmf)
    cut = cutoffs(trials, test, level, lo, hi, trials)

    def enough(points: int) -> bool:
        return _power_at(cut, lo, pa_pmf, trials, max(0.0, rate - points / 100)) >= goal

    if not enough(top):
        return None
    low, high = 0, top  # not enough at low, enough at high (power grows with the drop)
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high / 100
