"""What a suite can see: the minimum detectable suite-wide effect (pure).

A suite-wide drop ``delta`` moves the paired test's statistic to about ``delta / se``;
the two-sided test at ``level`` calls it with probability ``power`` when

    delta >= (t_(1 - level / 2, df) + t_(power, df)) * se,

the textbook minimum detectable effect with the test's own t reference. ``se`` is the
suite's standard error: measured by ``diff`` (``paired.robust_se``, cluster-robust), or
predicted by ``plan`` from each scenario's rate and trials (``predicted_se``: trial noise
alone, which a real suite's correlated clusters can only widen). The per-scenario
counterpart is exact and lives with the exact power (``gitevals.diff.power.scenario_mde``).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import sqrt
from statistics import NormalDist

from gitevals.stats import student

DEFAULT_POWER = 0.8


def suite_mde(se: float, df: int, level: float, goal: float = DEFAULT_POWER,
              noise_se: float = 0.0) -> float | None:
    """The smallest suite-wide change (a fraction) called with ``goal`` power; None when
    no test can be made (fewer than 2 clusters). ``diff``'s call needs both its tests:
    the cluster-robust t (``se``, t on ``df``) and the trial-noise z (``noise_se``,
    normal), so the larger of their two effects is the one that binds."""
    if df < 1:
        return None
    normal = NormalDist()
    return max((student.quantile(1.0 - level / 2.0, df) + student.quantile(goal, df)) * se,
               (normal.inv_cdf(1.0 - level / 2.0) + normal.inv_cdf(goal)) * noise_se)


def predicted_se(rates: Sequence[float], trials_a: Sequence[int],
                 trials_b: Sequence[int]) -> float:
    """The suite's standard error if each scenario kept its rate and trials were the only
    noise: sqrt(sum p (1 - p) (1 / n_a + 1 / n_b)) / N."""
    n = len(rates)
    if n == 0:
        return 0.0
    var = sum(r * (1.0 - r) * (1.0 / a + 1.0 / b)
              for r, a, b in zip(rates, trials_a, trials_b, strict=True))
    return sqrt(var) / n


def suite_trials(rates: Sequence[float], clusters: int, drop: float, level: float,
                 goal: float = DEFAULT_POWER, most: int = 100_000) -> int | None:
    """The fewest trials a side (the same for every scenario) for which the suite test
    calls a suite-wide ``drop`` with ``goal`` power, from trial noise alone (clusters
    whose scenarios move together need more); None when it needs more than ``most``."""
    n = len(rates)
    if n == 0 or clusters < 2 or drop <= 0:
        return None
    spread = sum(r * (1.0 - r) for r in rates)
    if spread == 0.0:
        return 1
    z = student.quantile(1.0 - level / 2.0, clusters - 1) + student.quantile(goal, clusters - 1)
    need = 2.0 * spread * z * z / (n * n * drop * drop)
    trials = max(1, int(need) + (need > int(need)))
    return trials if trials <= most else None
