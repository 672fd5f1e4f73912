"""Two one-sided tests (TOST): "no drop larger than X points", said with confidence.

A test that fails to find a drop says nothing about whether there was one: "not
significant" is never "no change". Equivalence turns the question round. With a margin
``m`` (a fraction), the suite's change ``delta`` is tested twice, one-sided:

- H0: delta <= -m (a drop of m or more) against delta > -m, p_lower;
- H0: delta >= +m (a rise of m or more) against delta < +m, p_upper.

``p_lower < level`` says **no drop larger than m** (non-inferiority: what a release gate
needs); both below ``level`` say the change is within +-m (equivalence). Each p uses the
paired test's estimate, standard error and t reference (``gitevals.stats.paired``), so
the error rate of the "no drop" claim is at most ``level`` when the true drop is ``m``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitevals.stats import student


@dataclass(frozen=True)
class Equivalence:
    margin: float
    p_lower: float  # H0: a drop of margin or more
    p_upper: float  # H0: a rise of margin or more
    level: float

    @property
    def no_drop(self) -> bool:
        """A drop larger than the margin is ruled out at ``level``."""
        return self.p_lower < self.level

    @property
    def equivalent(self) -> bool:
        """Both a drop and a rise larger than the margin are ruled out."""
        return max(self.p_lower, self.p_upper) < self.level


def tost(estimate: float, se: float, df: int, margin: float, level: float) -> Equivalence:
    """The two one-sided tests of ``estimate`` (standard error ``se``, t with ``df``)."""
    if margin <= 0:
        raise ValueError(f"an equivalence margin must be above 0, not {margin!r}")
    if se == 0.0:  # nothing varied: the estimate is exact
        return Equivalence(margin, 0.0 if estimate > -margin else 1.0,
                           0.0 if estimate < margin else 1.0, level)
    return Equivalence(margin, student.upper((estimate + margin) / se, df),
                       1.0 - student.upper((estimate - margin) / se, df), level)
