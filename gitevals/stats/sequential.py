"""A group-sequential design for "did B regress against A?" with A's trials already run.

The base side (``x_a`` passes of ``n_a`` trials, the runs pinned to the revision a
sequential run is ``--against``) is fixed before B's first trial. B's trials come in
rounds; after round k (``m_k`` trials in all) the design looks at B's passes ``s`` and

- calls **regressed** when the pooled z statistic for "B passes less often" reaches the
  efficacy bound ``c_k = C * (m_k / N) ** (shape - 1/2)`` (``shape`` 0 is O'Brien-Fleming,
  1/2 Pocock; a Wang-Tsiatis family),
- calls the drop **ruled out** (futility) when a one-sided upper confidence bound on the
  drop ``p_a - p_b`` falls below ``drop`` (the size of regression that matters),
- else runs another round, up to ``N`` trials.

Guarantee: the constant ``C`` is the smallest whose **exact** probability of ever calling
"regressed" when B is no worse than A (``p_b = p_a = p``) is at most ``alpha / 2`` for
every ``p`` -- the sum over every ``x_a`` and every path of B's passes, computed by
dynamic programming, maximized over ``p`` on a grid in arcsin(sqrt(p)) refined by
golden-section search (as ``gitevals.diff.stats`` does for Boschloo's test). ``alpha / 2``
on this one side is what ``diff``'s two-sided test at ``alpha`` spends on "regressed".
The futility rule never calls "regressed", so it can only lower that probability
(a non-binding futility rule): the guarantee holds whether or not a scenario stops for
futility. It costs power instead, which ``benchmarks/bench_sequential.py`` measures.

Everything here is a pure function of the design's numbers: ``diff`` recomputes the
same bounds from the numbers a sequential run records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import asin, ceil, comb, sin, sqrt
from statistics import NormalDist

DEFAULT_LOOKS = 5
DEFAULT_SHAPE = 0.0
#: One-sided level of the futility bound at each look (not an error rate: futility never
#: calls "regressed"; a lower level stops less often for futility and keeps more power).
DEFAULT_FUTILITY = 0.025
_GRID = 48
_ITER = 20
_GOLDEN = 0.6180339887498949


@dataclass(frozen=True)
class Design:
    """The numbers that fix a sequential comparison: recorded in the artifact, read by diff."""

    base_trials: int          # n_a: the base side's trials
    max_trials: int           # N: B's trials at most
    looks: int = DEFAULT_LOOKS
    alpha: float = 0.05       # diff's two-sided level; "regressed" spends alpha / 2
    drop: float = 0.20        # the drop (a rate) whose exclusion stops for futility
    shape: float = DEFAULT_SHAPE
    futility: float = DEFAULT_FUTILITY

    def schedule(self) -> tuple[int, ...]:
        """B's trials in all at each look: ``ceil(k N / K)``, distinct, ending at N."""
        n, k = self.max_trials, max(1, min(self.looks, self.max_trials))
        return tuple(sorted({ceil(i * n / k) for i in range(1, k + 1)}))

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> Design:
        """The design ``as_dict`` wrote (a ValueError names what does not fit)."""
        def number(name: str) -> float:
            value = doc.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"the design's {name!r} is not a number")
            return float(value)

        return cls(base_trials=int(number("base_trials")), max_trials=int(number("max_trials")),
                   looks=int(number("looks")), alpha=number("alpha"), drop=number("drop"),
                   shape=number("shape"), futility=number("futility"))

    def as_dict(self) -> dict[str, float | int | str]:
        return {"method": "group-sequential, pooled z, Wang-Tsiatis bounds, exact size",
                "base_trials": self.base_trials, "max_trials": self.max_trials,
                "looks": self.looks, "alpha": self.alpha, "drop": self.drop,
                "shape": self.shape, "futility": self.futility}


def _z(xa: int, na: int, s: int, m: int) -> float:
    """Pooled z for "B passes less often than A" (positive when B is worse)."""
    pooled = (xa + s) / (na + m)
    var = pooled * (1 - pooled) * (1 / na + 1 / m)
    if var <= 0:
        return 0.0
    return (xa / na - s / m) / sqrt(var)


def _efficacy(design: Design, scale: float) -> list[list[int]]:
    """``e[k][x_a]``: the most passes of B at look k that call "regressed" (-1: none)."""
    n, na, shape = design.max_trials, design.base_trials, design.shape
    out = []
    for m in design.schedule():
        c = scale * (m / n) ** (shape - 0.5)
        row = []
        for xa in range(na + 1):
            s = -1
            while s + 1 <= m and _z(xa, na, s + 1, m) >= c:
                s += 1
            row.append(s)
        out.append(row)
    return out


def _binom_pmf(n: int, p: float) -> list[float]:
    if p <= 0.0:
        return [1.0] + [0.0] * n
    if p >= 1.0:
        return [0.0] * n + [1.0]
    q = 1 - p
    return [comb(n, k) * p ** k * q ** (n - k) for k in range(n + 1)]


def _crossing(design: Design, bounds: list[list[int]], p: float) -> float:
    """P[B's passes ever reach the efficacy bound] when both sides pass at rate ``p``."""
    import numpy as np

    na, n = design.base_trials, design.max_trials
    schedule = design.schedule()
    base = np.array(_binom_pmf(na, p))
    # state[x_a, s]: probability of (x_a, s) with no crossing so far, weighted by P[x_a]
    state = np.zeros((na + 1, n + 1))
    state[:, 0] = base
    crossed = 0.0
    cols = np.arange(n + 1)
    prev = 0
    for k, m in enumerate(schedule):
        step = _binom_pmf(m - prev, p)
        new = np.zeros_like(state)
        for j, w in enumerate(step):
            if w:
                new[:, j:] += state[:, : n + 1 - j] * w
        state = new
        e = np.array(bounds[k])
        hit = cols[None, :] <= e[:, None]
        crossed += float(state[hit].sum())
        state[hit] = 0.0
        prev = m
    return crossed


def _sup(design: Design, bounds: list[list[int]]) -> float:
    """max over p of the crossing probability: a grid in arcsin(sqrt(p)), then refinement."""
    step = asin(1.0) / _GRID
    thetas = [i * step for i in range(1, _GRID)]
    values = [_crossing(design, bounds, sin(t) ** 2) for t in thetas]
    best = max(range(len(values)), key=values.__getitem__)
    lo, hi = thetas[best] - step, thetas[best] + step
    m1, m2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    v1, v2 = _crossing(design, bounds, sin(m1) ** 2), _crossing(design, bounds, sin(m2) ** 2)
    for _ in range(_ITER):
        if v1 < v2:
            lo, m1, v1 = m1, m2, v2
            m2 = lo + _GOLDEN * (hi - lo)
            v2 = _crossing(design, bounds, sin(m2) ** 2)
        else:
            hi, m2, v2 = m2, m1, v1
            m1 = hi - _GOLDEN * (hi - lo)
            v1 = _crossing(design, bounds, sin(m1) ** 2)
    return max(values[best], v1, v2)


def size(design: Design) -> float:
    """The design's exact (grid-maximized) probability of a false "regressed" call."""
    return _sup(design, efficacy_bounds(design))


@lru_cache(maxsize=64)
def _calibrated(design: Design) -> tuple[tuple[int, ...], ...]:
    target = design.alpha / 2
    lo, hi = 0.5, 12.0  # scales: hi calls nothing, lo calls far too much
    best = _efficacy(design, hi)
    for _ in range(40):
        mid = (lo + hi) / 2
        bounds = _efficacy(design, mid)
        if _sup(design, bounds) <= target:
            hi, best = mid, bounds
        else:
            lo = mid
        if hi - lo < 1e-4:
            break
    return tuple(tuple(row) for row in best)


def efficacy_bounds(design: Design) -> list[list[int]]:
    """``e[k][x_a]``: B's passes at look k at or below which the call is "regressed"."""
    return [list(row) for row in _calibrated(design)]


def futility_bounds(design: Design) -> list[list[int]]:
    """``f[k][x_a]``: B's passes at look k at or above which a drop of ``drop`` is ruled out
    (``m_k + 1``: never). The last look has none: the run ends there anyway."""
    z = NormalDist().inv_cdf(1 - design.futility)
    na, out = design.base_trials, []
    for m in design.schedule()[:-1]:
        row = []
        for xa in range(na + 1):
            s = m + 1
            while s - 1 >= 0 and _drop_upper(xa, na, s - 1, m, z) < design.drop:
                s -= 1
            row.append(s)
        out.append(row)
    return out


def _drop_upper(xa: int, na: int, s: int, m: int, z: float) -> float:
    """Upper confidence bound on p_a - p_b (Agresti-Caffo: one pass and one fail added)."""
    pa, pb = (xa + 1) / (na + 2), (s + 1) / (m + 2)
    return pa - pb + z * sqrt(pa * (1 - pa) / (na + 2) + pb * (1 - pb) / (m + 2))


@dataclass(frozen=True)
class Look:
    trials: int
    passes: int
    call: str  # regressed | ruled_out | continue | no_regression (the last look, not called)


def decide(design: Design, base_passes: int, look: int, passes: int) -> str:
    """The call at look index ``look`` (0-based) with ``passes`` of B's trials at that look."""
    if passes <= efficacy_bounds(design)[look][base_passes]:
        return "regressed"
    if look == len(design.schedule()) - 1:
        return "no_regression"
    if passes >= futility_bounds(design)[look][base_passes]:
        return "ruled_out"
    return "continue"


