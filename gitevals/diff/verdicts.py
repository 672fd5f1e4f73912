"""Verdicts of the runs pinned to two revisions, side by side, with the noise test (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from gitevals.diff.graders import GraderUse
from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST, two_sided
from gitevals.run.artifact import Run, scenarios


@dataclass(frozen=True)
class Tally:
    """One side's verdict of one scenario: ``passes`` of ``trials``."""

    verdict: str
    passes: int
    trials: int

    def __str__(self) -> str:
        return f"{self.verdict} {self.passes}/{self.trials}"


@dataclass(frozen=True)
class VerdictRow:
    case: str
    scenario: str
    a: Tally | None
    b: Tally | None
    change: str  # regressed | improved | unchanged | new | gone | not_run
    p: float | None = None
    beyond_noise: bool = False
    a_rescored: Tally | None = None
    graders_changed: tuple[str, ...] = ()  # graders it uses (on B) whose code changed


def mark_grader_users(rows: Iterable[VerdictRow], users: Iterable[GraderUse]
                      ) -> tuple[VerdictRow, ...]:
    """``rows`` with the changed graders each scenario uses, so a move can be read against them."""
    by_key: dict[tuple[str, str], list[str]] = {}
    for u in users:
        by_key.setdefault((u.case, u.scenario), []).append(u.grader)
    return tuple(replace(r, graders_changed=tuple(sorted(by_key.get((r.case, r.scenario), []))))
                 for r in rows)


def tallies(run: Run | None) -> dict[tuple[str, str], Tally]:
    """``(case, scenario) -> Tally`` from a run's stored verdicts."""
    if run is None:
        return {}
    return {(case["name"], s["id"]): Tally(s["verdict"]["verdict"], s["verdict"]["passes"],
                                           s["verdict"]["trials"])
            for case, s in scenarios(run)}


def _direction(a: Tally, b: Tally) -> str:
    if a.trials == 0 or b.trials == 0:
        return "not_run"
    ra, rb = a.passes * b.trials, b.passes * a.trials  # rates compared without floats
    return "regressed" if rb < ra else "improved" if rb > ra else "unchanged"


def compare_verdicts(run_a: Run | None, run_b: Run | None, rescored_a: Run | None = None,
                     test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA
                     ) -> tuple[VerdictRow, ...]:
    """Per scenario: A, B, the change, and whether it is beyond noise (p < ``alpha``)."""
    tr = tallies(rescored_a) if rescored_a is not None else {}
    return compare_tallies(tallies(run_a), tallies(run_b), tr, test, alpha)


def compare_tallies(ta: dict[tuple[str, str], Tally], tb: dict[tuple[str, str], Tally],
                    tr: dict[tuple[str, str], Tally] | None = None,
                    test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA
                    ) -> tuple[VerdictRow, ...]:
    """``compare_verdicts`` on tallies already taken (``tallies``): what the history of
    many runs (``report.history``) compares, one pair of runs at a time."""
    tr = tr or {}
    rows = []
    for key in sorted(set(ta) | set(tb)):
        a, b = ta.get(key), tb.get(key)
        if a is None or b is None:
            change, p = ("new" if a is None else "gone"), None
        else:
            change = _direction(a, b)
            p = (two_sided(test, a.passes, a.trials, b.passes, b.trials)
                 if change in ("regressed", "improved") else None)
        beyond = p is not None and p < alpha
        rows.append(VerdictRow(key[0], key[1], a, b, change, p, beyond, tr.get(key)))
    return tuple(rows)
