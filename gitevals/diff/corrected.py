"""Each side's judge-corrected pass rate beside a diff's rows (pure).

The noise test is left on the raw counts on purpose: with the same calibrated judge on
both sides, the corrected rate is an increasing affine function of the judge's PASS
rate, so "the true rates are equal" and "the PASS rates are equal" are the same null
hypothesis and the exact test of the raw counts is already the test of the corrected
rates. The correction changes how large a move reads, never whether it is beyond noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gitevals.calibration.corrected import corrections, slice_corrections
from gitevals.diff.buckets import SliceRow
from gitevals.diff.verdicts import VerdictRow
from gitevals.run.artifact import Run


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
