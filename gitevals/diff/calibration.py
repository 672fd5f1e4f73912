"""Which judge graders were advisory in the runs a diff compares (pure): said in the
diff's notes, so a verdict that did not move because a judge's failures were not counted
is read as such."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.run.artifact import Run


def advisory_notes(run_a: Run | None, run_b: Run | None) -> list[str]:
    """One line per advisory grader per side: ``B: grader q.tone is advisory ...``."""
    out = []
    for label, run in (("A", run_a), ("B", run_b)):
        if run is None:
            continue
        for name, c in sorted(run.get("judge_calibration", {}).items()):
            if c["status"] == "advisory":
                out.append(f"{label}: grader {name} is advisory, its failures shown but not "
                           f"counted in the verdicts ({c['reason']})")
    return out
