"""Student's t distribution: two-sided tail, one-sided tail and quantile (pure floats).

The tail is the regularized incomplete beta ``I_x(df / 2, 1 / 2)`` at
``x = df / (df + t^2)``, evaluated by its continued fraction (modified Lentz), which
converges in a few dozen steps for every ``x`` once the symmetry
``I_x(a, b) = 1 - I_(1-x)(b, a)`` puts ``x`` on the fast side. Equal to
``scipy.stats.t`` to 1e-12 (``tests/stats/test_stats_kernel.py``).
"""

from __future__ import annotations

from functools import lru_cache
from math import exp, inf, isfinite, lgamma, log

_EPS = 1e-15
_TINY = 1e-300


def _fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta (Numerical Recipes' betacf form)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def beta_inc(a: float, b: float, x: float, y: float | None = None) -> float:
    """Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1; ``y`` is
    1 - x when the caller has it without cancellation."""
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _fraction(a, b, x) / a
    return 1.0 - front * _fraction(b, a, y) / b


def two_sided(t: float, df: float) -> float:
    """P[|T| >= |t|] for T ~ t(df)."""
    if not isfinite(t):
        return 0.0
    return min(1.0, beta_inc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t)))


def upper(t: float, df: float) -> float:
    """P[T >= t] for T ~ t(df)."""
    if t == inf:
        return 0.0
    if t == -inf:
        return 1.0
    half = two_sided(t, df) / 2.0
    return half if t >= 0 else 1.0 - half


@lru_cache(maxsize=1024)
def quantile(q: float, df: float) -> float:
    """The t with P[T <= t] = q (0 < q < 1), by bisection on the tail (to 1e-12 relative;
    cached: a diff asks for the same few levels and degrees of freedom again and again)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"a quantile's level must be between 0 and 1, not {q!r}")
    if q == 0.5:
        return 0.0
    tail = min(q, 1.0 - q)
    lo, hi = 0.0, 1.0
    while upper(hi, df) > tail:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if upper(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    t = (lo + hi) / 2.0
    return t if q > 0.5 else -t
