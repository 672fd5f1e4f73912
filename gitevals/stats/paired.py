"""The paired suite-level comparison: is the suite as a whole worse on B than on A?

Each scenario that both revisions ran is a pair: ``d_i = rate_B - rate_A``. The suite's
change is the mean of the ``d_i`` (every scenario weighs the same, as in the table).
Scenarios share clusters (a case's scenarios, or cases that declare one ``cluster:``):
50 paraphrases of one question move together, so they must count as about one
question. The standard error is therefore **cluster-robust** (CR1: the spread of the
clusters' sums around their share of the mean, times G / (G - 1)) and the reference
distribution is Student's t with G - 1 degrees of freedom -- what
``statsmodels``' OLS on a constant with ``cov_type="cluster"`` and ``use_t`` gives.

A handful of clusters that happen to move alike would have a tiny spread and look
certain; the standard error is never taken below the one that trial noise alone
implies (each scenario's pooled rate, independent trials: the two-proportion
z-test's), so the test is at least as cautious as a z-test on the sum of the tables.
``docs/statistics.md`` says why this test and what it assumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import sqrt

from gitevals.stats import student

METHOD = "paired mean of per-scenario differences, cluster-robust t (CR1, G - 1 df)"


@dataclass(frozen=True)
class Pair:
    """One scenario both sides ran: passes of trials on A and on B, and its cluster."""

    a_passes: int
    a_trials: int
    b_passes: int
    b_trials: int
    cluster: str

    @property
    def difference(self) -> float:
        return self.b_passes / self.b_trials - self.a_passes / self.a_trials

    @property
    def noise(self) -> float:
        """Var(d) if A and B passed at the same (pooled) rate: trial noise alone."""
        n = self.a_trials + self.b_trials
        rate = (self.a_passes + self.b_passes) / n
        return rate * (1.0 - rate) * (1.0 / self.a_trials + 1.0 / self.b_trials)


@dataclass(frozen=True)
class Suite:
    """The suite's paired comparison (fractions, not points)."""

    estimate: float
    se: float
    df: int
    low: float
    high: float
    p: float
    scenarios: int
    clusters: int
    level: float  # the interval is 1 - level, the call is p < level


def robust_se(pairs: Sequence[Pair]) -> float:
    """The standard error of the mean difference: cluster-robust (CR1), floored by trial
    noise alone."""
    n = len(pairs)
    est = sum(p.difference for p in pairs) / n
    sums: dict[str, list[float]] = {}
    for p in pairs:
        acc = sums.setdefault(p.cluster, [0.0, 0.0])
        acc[0] += p.difference
        acc[1] += 1.0
    g = len(sums)
    spread = sum((s - k * est) ** 2 for s, k in sums.values())
    cr1 = g / (g - 1) * spread / (n * n) if g > 1 else 0.0
    floor = sum(p.noise for p in pairs) / (n * n)
    return sqrt(max(cr1, floor))


def compare(pairs: Sequence[Pair], level: float) -> Suite | None:
    """The paired test and its 1 - ``level`` interval; None with fewer than 2 clusters
    (no spread between clusters to measure)."""
    if not pairs or any(p.a_trials <= 0 or p.b_trials <= 0 for p in pairs):
        return None
    clusters = len({p.cluster for p in pairs})
    if clusters < 2:
        return None
    n = len(pairs)
    est = sum(p.difference for p in pairs) / n
    se = robust_se(pairs)
    df = clusters - 1
    if se == 0.0:  # every trial of both sides passed, or every one failed
        return Suite(est, 0.0, df, est, est, 1.0, n, clusters, level)
    p = student.two_sided(est / se, df)
    half = student.quantile(1.0 - level / 2.0, df) * se
    return Suite(est, se, df, est - half, est + half, p, n, clusters, level)
