"""The gate's verdict in text, json and Markdown: one row per slice, never a blend."""

from __future__ import annotations

import json

from gitevals.goldens.gate import GateResult, SliceGate
from gitevals.text import md_inert, visible

HEADER = ("slice", "baseline", "run", "delta pts", "95% interval", "q", "status")


def _count(t: tuple[int, int] | None) -> str:
    if t is None:
        return "-"
    return f"{t[0]}/{t[1]} {100 * t[0] / t[1]:.1f}%" if t[1] else f"{t[0]}/{t[1]}"


def _cells(s: SliceGate, hard_fail: float) -> tuple[str, ...]:
    delta = "-" if s.delta is None else f"{s.delta:+.1f}"
    interval = "-" if s.low is None or s.high is None else f"[{s.low:+.1f}, {s.high:+.1f}]"
    status = s.status.replace("_", " ")
    q = "-" if s.q is None else f"{s.q:.4f}" if s.q >= 0.0001 else f"{s.q:.1e}"
    if s.status == "dropped" and s.delta is not None and s.delta < -hard_fail:
        status += " (beyond the threshold, within noise: not shown to have dropped)"
    if s.status == "rerun_noise":
        status = "noise (within the re-run variation)"
    return (f"{s.kind} {s.name}", _count(s.base), _count(s.now), delta, interval, q,
            f"{status} (advisory, not counted)" if s.advisory is not None else status)



def headline(r: GateResult) -> str:
    """``gate: PASSED ...`` or ``gate: FAILED: ...`` naming every failing slice (never an
    advisory one: its grader's verdicts are not counted)."""
    bad = r.failing
    aside = len(r.advisory)
    left_out = f"{aside} advisory slice{'s' * (aside != 1)} not counted" if aside else ""
    if not bad:
        moved = sum(s.status == "dropped" and s.advisory is None for s in r.slices)
        seeded = sum(s.status == "rerun_noise" and s.advisory is None for s in r.slices)
        notes = [n for n in (f"{moved} dropped within the budget" if moved else "",
                             f"{seeded} dropped within the re-run variation: noise"
                             if seeded else "", left_out) if n]
        extra = f" ({'; '.join(notes)})" if notes else ""
        return f"gate: PASSED against baseline {r.model}{extra}"
    what = ", ".join(f"{s.kind} {s.name} "
                     + (f"{s.delta:+.1f} pts" if s.delta is not None else
                        "not in the baseline" if s.status == "uncovered" else "not measured")
                     for s in bad)
    return (f"gate: FAILED against baseline {r.model}: {what} (a drop beyond "
            f"{r.budget.hard_fail:g} pts in any slice fails, whatever else improved"
            f"{'; ' + left_out if left_out else ''})")


def advisory_lines(r: GateResult) -> list[str]:
    """One line per advisory slice: its pass rate is shown, never counted, and why."""
    return [f"advisory, not counted: {s.kind} {s.name}: {s.advisory}" for s in r.advisory]


def _budget_line(r: GateResult) -> str:
    where = ("drift-suite.yaml of the run" if r.budget_source == "run"
             else "defaults: the run had no drift-suite.yaml")
    rerun = (f", a drop within the re-run variation of {r.budget.rerun_max:g} pts "
             "(rerun_seed_variation_pts) is noise" if r.budget.rerun_max else "")
    return (f"budget: unchanged within {r.budget.noise:g} pts{rerun}, hard fail beyond a "
            f"{r.budget.hard_fail:g} pt drop that is also beyond noise ({where}); baseline "
            f"commit {r.baseline_commit[:12]}, run commit {r.run_commit[:12]}")


def noise_line(r: GateResult) -> str:
    """How "beyond noise" was decided across the slices."""
    from gitevals.stats.multiplicity import describe

    counted = sum(s.q is not None for s in r.slices)
    return (f"noise: one-sided Boschloo test per slice (the run passes less often) under "
            f"{describe(r.control, r.alpha, counted, what='counted slices')}; beyond noise "
            f"when q < {r.alpha:g}")


#: The column of the run's rate corrected for a calibrated judge (only when a slice has one).
CORRECTED = "judge-corrected run"


def _header(r: GateResult) -> tuple[str, ...]:
    return (*HEADER, CORRECTED) if _fixed(r) else HEADER


def _fixed(r: GateResult) -> bool:
    return any(s.corrected is not None for s in r.slices)


def _row(r: GateResult, s: SliceGate) -> tuple[str, ...]:
    """A slice's cells, with its corrected rate when the table has that column."""
    from gitevals.calibration.corrected import cell

    if not _fixed(r):
        return _cells(s, r.budget.hard_fail)
    return (*_cells(s, r.budget.hard_fail), cell(s.corrected) if s.corrected is not None else "-")


def corrected_note(r: GateResult) -> list[str]:
    """What the corrected column is, once, when the table has it."""
    if not _fixed(r):
        return []
    return [f"{CORRECTED}: the run's pass rate corrected for the errors of the slice's "
            "calibrated judge grader (Rogan-Gladen, 95% interval with the calibration's "
            "uncertainty; docs/statistics.md); shown, the gate decides on the counts"]


def text(r: GateResult) -> str:
    head = _header(r)
    rows = [head, *(tuple(visible(c) for c in _row(r, s)) for s in r.slices)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [visible(headline(r)), visible(_budget_line(r)), visible(noise_line(r))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    lines += [visible(line) for line in advisory_lines(r) + corrected_note(r)]
    return "\n".join(lines) + "\n"


def markdown(r: GateResult) -> str:
    lines = [f"**{md_inert(headline(r))}**", "", md_inert(_budget_line(r)), "",
             md_inert(noise_line(r)), "",
             "| " + " | ".join(_header(r)) + " |", "|" + "---|" * len(_header(r))]
    lines += ["| " + " | ".join(md_inert(c) for c in _row(r, s)) + " |" for s in r.slices]
    notes = advisory_lines(r) + corrected_note(r)
    lines += ["", *(f"- {md_inert(line)}" for line in notes)] if notes else []
    return "\n".join(lines) + "\n"


def as_json(r: GateResult) -> str:
    doc = {"format": "gitevals-gate/1", "passed": r.passed, "model": r.model,
           "baseline_commit": r.baseline_commit, "run_commit": r.run_commit,
           "budget": {**r.budget.as_dict(), "source": r.budget_source},
           "slices": [{"kind": s.kind, "name": s.name, "baseline": list(s.base),
                       "run": list(s.now) if s.now else None, "delta_pts": s.delta,
                       "interval_pts": [s.low, s.high] if s.low is not None else None,
                       "status": s.status, "advisory": s.advisory, "p": s.p, "q": s.q,
                       **(s.corrected.as_json() if s.corrected is not None else {})}
                      for s in r.slices],
           "control": r.control, "alpha": r.alpha}
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


REPORTERS = {"text": text, "json": as_json, "markdown": markdown}
