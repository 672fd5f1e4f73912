"""Goldens pass rates of two runs, slice by slice, with the exact test per slice (pure).

A slice is a bucket of the goldens or a drift slice (``gitevals.run.goldens``). Each
is compared on its own -- a bucket that dropped is never hidden by another that rose --
with the same two-sided exact test the verdicts use (``gitevals.diff.stats``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST, two_sided
from gitevals.run.artifact import Run
from gitevals.stats.judge_correction import Corrected


@dataclass(frozen=True)
class SliceRow:
    """One slice: ``passed/total`` on A and on B, the change and the exact test's p."""

    kind: str
    name: str
    a: tuple[int, int] | None
    b: tuple[int, int] | None
    change: str  # regressed | improved | unchanged | new | gone | not_run
    p: float | None = None
    beyond_noise: bool = False
    q: float | None = None  # p adjusted for the family of slices (``control_slices``)
    #: each side's pass rate corrected for its calibrated judge (``diff.corrected``)
    corrected_a: Corrected | None = None
    corrected_b: Corrected | None = None


def counts(run: Run | None) -> dict[tuple[str, str], tuple[int, int]]:
    """``(kind, name) -> (passed, total)`` of a run's goldens slices."""
    part = run.get("goldens") if run is not None else None
    if part is None:
        return {}
    return {(s["kind"], s["name"]): (s["passed"], s["total"]) for s in part["slices"]}


def _direction(a: tuple[int, int], b: tuple[int, int]) -> str:
    if a[1] == 0 or b[1] == 0:
        return "not_run"
    ra, rb = a[0] * b[1], b[0] * a[1]
    return "regressed" if rb < ra else "improved" if rb > ra else "unchanged"


def compare_slices(run_a: Run | None, run_b: Run | None, test: str = DEFAULT_TEST,
                   alpha: float = DEFAULT_ALPHA) -> tuple[SliceRow, ...]:
    """Every slice of either run, A beside B, in the runs' slice order (buckets first)."""
    ca, cb = counts(run_a), counts(run_b)
    order = list(ca) + [k for k in cb if k not in ca]
    rows = []
    for key in order:
        a, b = ca.get(key), cb.get(key)
        p = None
        if a is None or b is None:
            change = "new" if a is None else "gone"
        else:
            change = _direction(a, b)
            if change in ("regressed", "improved"):
                p = two_sided(test, a[0], a[1], b[0], b[1])
        rows.append(SliceRow(key[0], key[1], a, b, change, p, p is not None and p < alpha))
    return tuple(rows)


def control_slices(rows: tuple[SliceRow, ...], control: str, alpha: float, share: int = 1
                   ) -> tuple[SliceRow, ...]:
    """``rows`` with ``q`` (adjusted under ``control``, times ``share``) and beyond noise
    when ``q < alpha``: the family is every slice both runs measured (p 1 when it did
    not move). Buckets hold different goldens, so their tests are independent."""
    from gitevals.stats.multiplicity import family

    index = [i for i, r in enumerate(rows) if r.a is not None and r.b is not None
             and r.a[1] > 0 and r.b[1] > 0]
    qs = family([_or_one(rows[i].p) for i in index], control, share)
    out = list(rows)
    for i, q in zip(index, qs, strict=True):
        r = rows[i]
        out[i] = replace(r, q=q if r.p is not None else None,
                         beyond_noise=r.p is not None and q < alpha)
    return tuple(out)


def _or_one(p: float | None) -> float:
    """A row that did not move has no test: in the family it counts as p = 1."""
    return 1.0 if p is None else p
