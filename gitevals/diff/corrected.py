"""Each side's judge-corrected pass rate beside a diff's rows (pure).

The noise test is left on the raw counts on purpose: with the same calibrated judge on
both sides, the corrected rate is an increasing affine function of the judge's PASS
rate, so "the true rates are equal" and "the PASS rates are equal" are the same null
hypothesis and the exact test of the raw counts is already the test of the corrected
rates. The correction changes how large a move reads, never whether it is beyond noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from gitevals.calibration.corrected import corrections, slice_corrections
from gitevals.diff.buckets import SliceRow
from gitevals.diff.suite import SuiteCorrected, SuiteResult, pairs_of
from gitevals.diff.verdicts import VerdictRow
from gitevals.run.artifact import Run
from gitevals.stats import paired
from gitevals.stats.judge_correction import corrected_change


def corrected_rows(rows: Iterable[VerdictRow], run_a: Run | None, run_b: Run | None
                   ) -> tuple[VerdictRow, ...]:
    """``rows`` with the corrected rate of each side where that side qualifies."""
    ca, cb = corrections(run_a), corrections(run_b)
    if not ca and not cb:
        return tuple(rows)
    return tuple(replace(r, corrected_a=ca.get((r.case, r.scenario)),
                         corrected_b=cb.get((r.case, r.scenario))) for r in rows)


def corrected_slices(rows: Iterable[SliceRow], run_a: Run | None, run_b: Run | None
                     ) -> tuple[SliceRow, ...]:
    """Goldens slice rows with the corrected rate of each side where that side qualifies."""
    ca, cb = slice_corrections(run_a), slice_corrections(run_b)
    if not ca and not cb:
        return tuple(rows)
    return tuple(replace(r, corrected_a=ca.get((r.kind, r.name)),
                         corrected_b=cb.get((r.kind, r.name))) for r in rows)


def corrected_suite(suite: SuiteResult, rows: Sequence[VerdictRow],
                    clusters: Mapping[str, str]) -> SuiteResult:
    """``suite`` with its change corrected for the calibrated judge, over the scenarios
    whose both sides that one judge alone decided (the rows' ``corrected_a`` and
    ``corrected_b``): their paired mean and interval, divided by the judge's Youden
    index with the calibration's uncertainty (``judge_correction.corrected_change``).
    The call stays on the raw counts (this module's docstring says why)."""
    both = [r for r in rows if r.sequential is None and r.corrected_a is not None
            and r.corrected_b is not None and r.corrected_a.rate is not None
            and r.corrected_b.rate is not None]
    if not both:
        return suite
    cals = {c.calibration for r in both for c in (r.corrected_a, r.corrected_b)
            if c is not None}
    if len(cals) > 1:
        return replace(suite, corrected_why=f"{len(cals)} different judge calibrations "
                       "decided the corrected scenarios: no one correction applies")
    (cal,) = cals
    raw = paired.compare(pairs_of(both, clusters), suite.alpha)
    if raw is None:
        return replace(suite, corrected_why=f"the {len(both)} judge-decided scenario"
                       f"{'s' * (len(both) != 1)} form fewer than 2 clusters: no interval")
    got = corrected_change(raw.estimate, (raw.high - raw.low) / 2, 1 - suite.alpha, cal)
    if got is None:
        return replace(suite, corrected_why="TPR + TNR <= 1: the judge does no better "
                       "than chance, so no change can be recovered")
    est, low, high = (round(100 * x, 6) for x in got)
    return replace(suite, corrected=SuiteCorrected(est, (low, high),
                                                   round(100 * raw.estimate, 6), len(both),
                                                   cal))
