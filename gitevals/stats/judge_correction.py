"""A pass rate corrected for the errors of the judge that decided it (Rogan–Gladen).

A judge grader with true positive rate TPR and true negative rate TNR, asked about
items that truly pass at rate ``theta``, says PASS at rate
``p = theta * TPR + (1 - theta) * (1 - TNR)``. Solved for ``theta``:

    theta = (p + TNR - 1) / (TPR + TNR - 1)

(Rogan & Gladen 1978), clipped to [0, 1]; undefined when ``TPR + TNR <= 1``, where the
judge's PASS carries no information about the truth (or inverts it).

The interval carries both uncertainties: the trials (``passes`` of ``trials``) and the
calibration (TPR from ``tp`` of ``n_pos`` items labelled pass, TNR from ``tn`` of
``n_neg`` labelled fail). It is a seeded parametric bootstrap over the three Jeffreys
posteriors (``Beta(x + 1/2, n - x + 1/2)``), so it is deterministic for the same
counts and, unlike a binomial resample, never collapses to a point when a judge was
right on every calibration item (70 of 70 is not TPR 1 exactly). A draw whose
``TPR + TNR <= 1`` has no estimate: it is put below every value for the lower bound and
above every value for the upper one, which can only widen the interval.
``docs/statistics.md`` ("Judge-corrected rates") gives the coverage measured by
``benchmarks/bench_judge_correction.py``.

Pure: counts in, numbers out; imports nothing else of gitevals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

#: Bootstrap draws per interval, and the seed that makes the interval a function of the
#: counts (the same run shows the same interval every time, on every machine).
DRAWS = 4000
SEED = 20261201
#: The interval's two-sided level.
LEVEL = 0.95
#: The largest count accepted (a forged artifact cannot make the bootstrap allocate more).
MAX_COUNT = 10_000_000
METHOD = "rogan-gladen"


@dataclass(frozen=True)
class Calibration:
    """A judge's calibration as counts: ``tp`` of ``n_pos`` items labelled pass judged
    PASS, ``tn`` of ``n_neg`` labelled fail judged FAIL."""

    tp: int
    n_pos: int
    tn: int
    n_neg: int

    @property
    def tpr(self) -> float:
        return self.tp / self.n_pos

    @property
    def tnr(self) -> float:
        return self.tn / self.n_neg


def usable(cal: Calibration) -> str | None:
    """Why ``cal`` cannot correct anything (one phrase), or None when it can."""
    for hits, of, label in ((cal.tp, cal.n_pos, "TPR"), (cal.tn, cal.n_neg, "TNR")):
        if not 0 <= hits <= of or not 0 < of <= MAX_COUNT:
            return f"its {label} counts ({hits} of {of}) are not a measurement"
    return None


def rogan_gladen(p_obs: float, tpr: float, tnr: float) -> float | None:
    """The true rate behind an observed PASS rate, clipped to [0, 1]; None when
    ``tpr + tnr <= 1`` (the judge does no better than chance)."""
    youden = tpr + tnr - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (p_obs + tnr - 1) / youden))


@dataclass(frozen=True)
class Corrected:
    """A judge-corrected pass rate: ``rate`` with its ``low``..``high`` interval, or all
    three None and ``undefined`` saying why. ``raw`` is ``passes / trials``."""

    passes: int
    trials: int
    calibration: Calibration
    rate: float | None
    low: float | None
    high: float | None
    undefined: str | None = None

    @property
    def raw(self) -> float:
        return self.passes / self.trials

    def as_json(self) -> dict[str, object]:
        """The JSON fields every report shows: ``corrected_rate``, ``corrected_ci`` and
        ``correction`` (the method and the calibration counts it used)."""
        c = self.calibration
        correction: dict[str, object] = {
            "method": METHOD, "tpr": c.tpr, "tnr": c.tnr, "n_pos": c.n_pos, "n_neg": c.n_neg,
            "tp": c.tp, "tn": c.tn, "level": LEVEL, "draws": DRAWS, "seed": SEED,
            "undefined": self.undefined}
        ci = [self.low, self.high] if self.low is not None else None
        return {"corrected_rate": self.rate, "corrected_ci": ci, "correction": correction}


def corrected(passes: int, trials: int, cal: Calibration) -> Corrected:
    """The judge-corrected rate of ``passes`` of ``trials`` (each decided by the judge of
    ``cal``) with its bootstrap interval. ``ValueError`` for counts that are not counts."""
    if not 0 <= passes <= trials or not 0 < trials <= MAX_COUNT:
        raise ValueError(f"{passes} of {trials} is not a pass count")
    why = usable(cal)
    if why is not None:
        raise ValueError(why)
    rate = rogan_gladen(passes / trials, cal.tpr, cal.tnr)
    if rate is None:
        return Corrected(passes, trials, cal, None, None, None,
                         f"TPR {cal.tpr:.2f} + TNR {cal.tnr:.2f} <= 1: the judge does no "
                         "better than chance, so no rate can be recovered")
    low, high = interval(passes, trials, cal.tp, cal.n_pos, cal.tn, cal.n_neg)
    # the percentile interval of a clipped estimate can miss the estimate itself at an
    # edge; the reported interval always holds the point it is shown with
    return Corrected(passes, trials, cal, rate, min(low, rate), max(high, rate))


@lru_cache(maxsize=4096)
def interval(passes: int, trials: int, tp: int, n_pos: int, tn: int, n_neg: int
             ) -> tuple[float, float]:
    """The seeded bootstrap ``LEVEL`` interval of the corrected rate (cached: the
    scenarios of one suite share a calibration and often their counts)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    q = rng.beta(passes + 0.5, trials - passes + 0.5, DRAWS)
    tpr = rng.beta(tp + 0.5, n_pos - tp + 0.5, DRAWS)
    tnr = rng.beta(tn + 0.5, n_neg - tn + 0.5, DRAWS)
    youden = tpr + tnr - 1
    ok = youden > 0
    theta = np.clip((q[ok] + tnr[ok] - 1) / youden[ok], 0.0, 1.0)
    return _percentiles(sorted(theta.tolist()), DRAWS - int(ok.sum()))


def _percentiles(values: list[float], undefined: int, level: float = LEVEL,
                 bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """The ``level`` percentile bounds of ``values`` plus ``undefined`` draws counted as
    below every value (for the lower bound) and above every value (for the upper); an
    undefined bound is the edge of ``bounds``."""
    total = len(values) + undefined
    tail = (1 - level) / 2
    lo_at = math.floor(tail * total)  # order statistics, 0-based
    hi_at = math.ceil((1 - tail) * total) - 1
    low = values[lo_at - undefined] if lo_at >= undefined else bounds[0]
    high = values[hi_at] if hi_at < len(values) else bounds[1]
    return low, high


def corrected_change(estimate: float, half: float, confidence: float, cal: Calibration
                     ) -> tuple[float, float, float] | None:
    """A suite's mean change in PASS rate corrected for the judge that decided every
    trial of it: ``(change, low, high)`` as fractions, or None when ``TPR + TNR <= 1``.

    With one judge on both sides, ``theta_B - theta_A = (p_B - p_A) / (TPR + TNR - 1)``
    for every scenario, so the mean change divides by the same Youden index. The
    interval carries both uncertainties, as ``interval`` does: the raw change drawn from
    the normal whose ``confidence`` interval is ``estimate +- half`` (the suite test's
    own), the Youden index from the Jeffreys posteriors of TPR and TNR; a draw with no
    information (``TPR + TNR <= 1``) widens both ends. Seeded, clipped to [-1, 1]."""
    import numpy as np

    youden = cal.tpr + cal.tnr - 1
    if youden <= 0:
        return None
    rng = np.random.default_rng(SEED)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    change = estimate + (half / z) * rng.standard_normal(DRAWS)
    tpr = rng.beta(cal.tp + 0.5, cal.n_pos - cal.tp + 0.5, DRAWS)
    tnr = rng.beta(cal.tn + 0.5, cal.n_neg - cal.tn + 0.5, DRAWS)
    drawn = tpr + tnr - 1
    ok = drawn > 0
    theta = np.clip(change[ok] / drawn[ok], -1.0, 1.0)
    low, high = _percentiles(sorted(theta.tolist()), DRAWS - int(ok.sum()), confidence,
                             (-1.0, 1.0))
    point = max(-1.0, min(1.0, estimate / youden))
    return point, min(low, point), max(high, point)
