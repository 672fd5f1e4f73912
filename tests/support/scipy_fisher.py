"""scipy's two-sided Fisher p-value of every table of ``n`` trials a side, in one pass.

``scipy.stats.fisher_exact`` costs ~0.7 ms a table (a dozen scalar calls into its
hypergeometric distribution, each checking its arguments); the power reference of
``tests/diff/test_power.py`` asks it about ~12,500 tables. This module takes the same
steps as scipy 1.17's 2x2 two-sided branch (its mode, its 1e-14 tie tolerance, its
binary search for the other tail, cdf + sf) on the same scipy primitives
(``hypergeom.pmf / cdf / sf``, elementwise ufuncs), evaluated once for every
(total passes, count) of a size: the p-values are scipy's own to the last bit, which
``test_the_vectorised_reference_is_scipys_fisher_exact`` checks table by table against
``fisher_exact`` itself. It is a reference for the tests, independent of
``gitevals.diff.stats``: nothing of gitevals is imported here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy.stats import hypergeom

_GAMMA = 1 + 1e-14  # scipy's relative tolerance for "as probable as the observed table"


def _search(a: Callable[[int], float], d: float, lo: int, hi: int) -> int:
    """scipy's ``_binary_search_for_binom_tst``: i in lo..hi with a(i) <= d < a(i + 1)."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        midval = a(mid)
        if midval < d:
            lo = mid + 1
        elif midval > d:
            hi = mid - 1
        else:
            return mid
    return lo if a(lo) <= d else lo - 1


@functools.cache
def fisher_pvalues(n: int) -> np.ndarray:
    """``p[xa, xb]`` = ``fisher_exact([[xa, n - xa], [xb, n - xb]]).pvalue`` (two-sided)
    for every 0 <= xa, xb <= n, computed once a process (read-only: do not write it)."""
    big = 2 * n
    ks = np.arange(-1, big + 1)  # -1: the cdf below the support (0), as scipy's scalar call
    totals = np.arange(big + 1)
    grid = (ks[None, :], big, n, totals[:, None])
    pmf, cdf, sf = hypergeom.pmf(*grid), hypergeom.cdf(*grid), hypergeom.sf(*grid)
    out = np.ones((n + 1, n + 1))
    for xa in range(n + 1):
        for xb in range(n + 1):
            out[xa, xb] = _two_sided(xa, xa + xb, n, pmf, cdf, sf)
    out.setflags(write=False)
    return out


def _two_sided(x: int, t: int, n: int, pmf: np.ndarray, cdf: np.ndarray,
               sf: np.ndarray) -> float:
    """scipy's two-sided branch for the table with ``x`` at [0, 0] and ``t`` passes in
    all (rows of ``n``); ``pmf[t, k + 1]`` is P[X = k] given ``t`` (likewise cdf, sf)."""
    if t in (0, 2 * n):  # a column of zeros: p is 1 (and the odds ratio NaN)
        return 1.0
    row_pmf, row_cdf, row_sf = pmf[t], cdf[t], sf[t]

    def p_at(k: int) -> float:
        return float(row_pmf[k + 1])

    mode = int((t + 1) * (n + 1) / (2 * n + 2))
    pexact, pmode = p_at(x), p_at(mode)
    if abs(pexact - pmode) / max(pexact, pmode) <= 1e-14:
        return 1.0
    if x < mode:
        plower = float(row_cdf[x + 1])
        if p_at(t) > pexact * _GAMMA:
            return plower
        guess = _search(lambda k: -p_at(k), -pexact * _GAMMA, mode, t)
        return min(plower + float(row_sf[guess + 1]), 1.0)
    pupper = float(row_sf[x])  # sf(x - 1)
    if p_at(0) > pexact * _GAMMA:
        return pupper
    guess = _search(p_at, pexact * _GAMMA, 0, mode)
    return min(pupper + float(row_cdf[guess + 1]), 1.0)
