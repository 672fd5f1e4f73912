"""Verdicts of the runs pinned to two revisions, side by side, with the noise test (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from gitevals.diff.graders import GraderUse
from gitevals.diff.power import underpowered
from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST, two_sided
from gitevals.run.artifact import Run, scenario_ms, scenarios
from gitevals.stats.judge_correction import Corrected


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
    #: B is a sequential run (``run --against``): how its design settled the scenario
    sequential: str | None = None
    #: the trials a side cannot detect a 20-point drop from A's rate (``gitevals plan``)
    underpowered: bool = False
    #: p adjusted for the family of scenarios (``gitevals.diff.suite``): beyond noise
    #: when below alpha; equal to p without a control
    q: float | None = None
    #: each side's pass rate corrected for its calibrated judge (``diff.corrected``)
    corrected_a: Corrected | None = None
    corrected_b: Corrected | None = None
    #: how long each side's trials of the scenario took, summed (``artifact.scenario_ms``)
    ms_a: int | None = None
    ms_b: int | None = None


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


def clusters(*runs: Run | None) -> dict[str, str]:
    """Case -> the ``cluster`` it declared, as the runs recorded it (the later run's
    word wins); a case that declared none is its own cluster."""
    out: dict[str, str] = {}
    for run in runs:
        for case in run["cases"] if run is not None else ():
            name = case.get("cluster")
            if isinstance(name, str) and name:
                out[case["name"]] = name
    return out


def _direction(a: Tally, b: Tally) -> str:
    if a.trials == 0 or b.trials == 0:
        return "not_run"
    ra, rb = a.passes * b.trials, b.passes * a.trials  # rates compared without floats
    return "regressed" if rb < ra else "improved" if rb > ra else "unchanged"


def compare_verdicts(run_a: Run | None, run_b: Run | None, rescored_a: Run | None = None,
                     test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA,
                     powered: bool = True) -> tuple[VerdictRow, ...]:
    """Per scenario: A, B, the change, and whether it is beyond noise (p < ``alpha``);
    ``powered``: mark rows underpowered at ``alpha`` (False when the caller marks them at
    its control's level, as ``diff.suite.assess`` does: the exact power is not free)."""
    tr = tallies(rescored_a) if rescored_a is not None else {}
    rows = timed(compare_tallies(tallies(run_a), tallies(run_b), tr, test, alpha, powered),
                 run_a, run_b)
    if run_b is None or "sequential" not in run_b:
        return rows
    out = []
    for row in rows:
        seq = sequential_of(run_a, run_b, (row.case, row.scenario))
        if seq is not None:
            # A stopped-early sample is read with its own design's bounds, never the
            # fixed-n test (docs/statistics.md).
            called, why = seq
            row = replace(row, p=None, beyond_noise=called, sequential=why,
                          underpowered=False)
        out.append(row)
    return tuple(out)


def durations(run: Run | None) -> dict[tuple[str, str], int]:
    """``(case, scenario) -> milliseconds`` its trials took (none for a scenario not run)."""
    if run is None:
        return {}
    return {(case["name"], s["id"]): scenario_ms(s) for case, s in scenarios(run)
            if s.get("results")}


def timed(rows: tuple[VerdictRow, ...], run_a: Run | None, run_b: Run | None
          ) -> tuple[VerdictRow, ...]:
    """``rows`` with each side's duration, as its run recorded it."""
    da, db = durations(run_a), durations(run_b)
    return tuple(replace(r, ms_a=da.get((r.case, r.scenario)), ms_b=db.get((r.case, r.scenario)))
                 for r in rows)


def compare_tallies(ta: dict[tuple[str, str], Tally], tb: dict[tuple[str, str], Tally],
                    tr: dict[tuple[str, str], Tally] | None = None,
                    test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA,
                    powered: bool = True) -> tuple[VerdictRow, ...]:
    """``compare_verdicts`` on tallies already taken (``tallies``): what the history of
    many runs (``report.history``) compares, one pair of runs at a time. Without
    ``powered`` no row says whether it is underpowered: the history never shows it, and
    the exact power sums were most of ``log``'s time."""
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
        row = VerdictRow(key[0], key[1], a, b, change, p, beyond, tr.get(key))
        if powered and a is not None and b is not None and a.trials and b.trials:
            row = replace(row, underpowered=underpowered(
                min(a.trials, b.trials), a.passes / a.trials, test=test, alpha=alpha))
        rows.append(row)
    return tuple(rows)


def sequential_of(run_a: Run | None, run_b: Run | None, key: tuple[str, str]
                  ) -> tuple[bool, str] | None:
    """For a scenario of a sequential run B: (called regressed?, how it was settled), from
    B's recorded looks re-read with the design's bounds; None when B is not sequential.

    Only a comparison with the run B was compared against is a sequential one: against
    any other A, nothing is called (the fixed-n test does not hold for a sample that
    stopped early) and the phrase says which revision to compare with."""
    if run_b is None or "sequential" not in run_b:
        return None
    from gitevals.stats.sequential import Design, decide

    record = next((s.get("sequential") for c, s in scenarios(run_b)
                   if (c["name"], s["id"]) == key), None)
    if record is None or "design" not in record or "base" not in record:
        return None
    against = run_b["sequential"]["against"]
    if run_a is None or run_a["commit"] != against:
        return False, f"sequential run against {against[:12]}: diff it with that revision"
    try:
        design = Design.from_dict(record["design"])
    except ValueError as exc:
        return False, f"sequential design unreadable ({exc}): nothing called"
    base = record["base"]["passes"]
    schedule = design.schedule()
    for index, look in enumerate(record["looks"]):
        if index >= len(schedule) or look["trials"] != schedule[index]:
            return False, f"sequential look {index + 1} is incomplete: nothing called"
        call = decide(design, base, index, look["passes"])
        where = f"look {index + 1} of {len(schedule)}, {look['trials']} trials"
        if call == "regressed":
            return True, f"regressed at {where} (sequential bound)"
        if call == "ruled_out":
            return False, f"a {design.drop * 100:g}-point drop ruled out at {where}"
        if call == "no_regression":
            # "not called", never "no regression": the row's change column may well say
            # regressed (B passed less often), and not significant is not unchanged
            return False, (f"within noise: not called at the last look ({look['trials']} "
                           "trials, sequential bound)")
    return False, "sequential run stopped before its design settled it: nothing called"
