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
certain, so the call needs a second test as well: the same estimate against the
standard error that trial noise alone implies (each scenario's pooled rate,
independent trials: the two-proportion z-test on the sum of the tables, with the
normal reference, since that error is estimated from every trial, not from G
clusters). The suite's p is the larger of the two p values and its interval the wider
of the two intervals, so the call and the interval agree, and the test is at least as
cautious as each test alone: valid wherever the cluster-robust t is, and never bolder
than the z-test when nothing changed.
``docs/statistics.md`` says why this test and what it assumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import erfc, sqrt
from statistics import NormalDist

from gitevals.stats import student

#: The standard normal (its quantile for the noise test's interval).
_NORMAL = NormalDist()

METHOD = ("paired mean of per-scenario differences: cluster-robust t (CR1, G - 1 df) and the "
          "trial-noise z test, the larger p")


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
    se: float  # the larger of se_cluster and se_noise (what TOST and the MDE use)
    df: int
    low: float
    high: float
    p: float
    scenarios: int
    clusters: int
    level: float  # the interval is 1 - level, the call is p < level
    se_cluster: float = 0.0  # CR1, read with t on df degrees of freedom
    se_noise: float = 0.0    # trial noise alone, read with the normal


def _parts(pairs: Sequence[Pair]) -> tuple[float, float, float]:
    """The mean difference, its CR1 variance (0 with one cluster) and its variance from
    trial noise alone."""
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
    return est, cr1, sum(p.noise for p in pairs) / (n * n)


def robust_se(pairs: Sequence[Pair]) -> float:
    """The standard error of the mean difference: cluster-robust (CR1), floored by trial
    noise alone (the conservative error TOST and the MDE use)."""
    _, cr1, noise = _parts(pairs)
    return sqrt(max(cr1, noise))


def _normal_two_sided(z: float) -> float:
    """P[|Z| >= |z|] for a standard normal Z (erfc keeps the far tail's digits)."""
    return min(1.0, erfc(abs(z) / sqrt(2.0)))


def compare(pairs: Sequence[Pair], level: float) -> Suite | None:
    """The paired test and its 1 - ``level`` interval; None with fewer than 2 clusters
    (no spread between clusters to measure)."""
    if not pairs or any(p.a_trials <= 0 or p.b_trials <= 0 for p in pairs):
        return None
    clusters = len({p.cluster for p in pairs})
    if clusters < 2:
        return None
    est, cr1, noise = _parts(pairs)
    se_c, se_n = sqrt(cr1), sqrt(noise)
    df, n = clusters - 1, len(pairs)
    if se_n == 0.0:  # every trial of both sides passed, or every one failed
        return Suite(est, 0.0, df, est, est, 1.0, n, clusters, level)
    p_noise = _normal_two_sided(est / se_n)
    # all clusters moved exactly alike: no spread, the noise test alone decides
    p_cluster = student.two_sided(est / se_c, df) if se_c > 0.0 else 0.0
    half = max(student.quantile(1.0 - level / 2.0, df) * se_c,
               _NORMAL.inv_cdf(1.0 - level / 2.0) * se_n)
    return Suite(est, max(se_c, se_n), df, est - half, est + half, max(p_cluster, p_noise),
                 n, clusters, level, se_c, se_n)
