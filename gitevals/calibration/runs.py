"""A finished run, told which of its judge graders are calibrated (those of its cases and
of its goldens buckets): the statuses go into the artifact (``judge_calibration``) and the
run is re-scored by them (``scoring.rescore``), so an advisory grader's failures are marked
and never fail a trial or a verdict (nor, for a bucket, the goldens gate)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from gitevals.git.trees import Tree
from gitevals.run.artifact import GraderCalibration, Run, grader_calls, scenarios
from gitevals.settings import Settings

if TYPE_CHECKING:
    from gitevals.calibration.status import Status


def attach(run: Run, tree: Tree, settings: Settings, now: datetime) -> Run:
    """``run`` with the calibration of every grader it named (in a case or for a goldens
    bucket) that asks the judge (read
    from ``tree``, the revision it ran, at ``now``), re-scored by it."""
    from gitevals.run.scoring import rescore

    return rescore({**run, "judge_calibration": run_calibration(run, tree, settings, now)})


def run_calibration(run: Run, tree: Tree, settings: Settings, now: datetime
                    ) -> dict[str, GraderCalibration]:
    """The ``judge_calibration`` of ``run``: each grader it named that asks the judge,
    decided at ``tree`` and ``now``; all advisory (GE517) when the judge's own answers
    show it was not the pinned model (``unpinned``). What ``attach`` records, and what
    ``run.build`` records as it builds a run's artifact."""
    names = {name for _, s in scenarios(run) for _, name in grader_calls(s["expect"])}
    part = run.get("goldens")
    if part is not None:  # the goldens gate counts a bucket by its grader's calibration
        names |= set(part["graders"].values())
    found = calibration_of(tree, settings, names, now)
    why = unpinned(answered(run), settings.judge.model if settings.judge else None)
    if why is not None:  # the evidence outranks every record: none measured this judge
        found = {name: {"status": "advisory", "reason": why, "code": "GE517"}
                 for name in found}
    return found


def answered(run: Run) -> list[str | None]:
    """The model every judge call of ``run`` was answered by, in run order (None: the
    reply named none), from its grader answers (cases, goldens and drift rows)."""
    answers = [g for _, s in scenarios(run) for t in s["results"] for g in t["graders"]]
    part = run.get("goldens")
    answers += [it["answer"] for it in part["items"] if it["answer"] is not None] \
        if part is not None else []
    return [m for g in answers if "usage" in g for m in g["usage"].get("models", [])]


def unpinned(models: list[str | None], configured: str | None) -> str | None:
    """Why the judge the run used is not the pinned snapshot it was configured with, by
    what its API answered (never by the name's spelling: "latest" or not, a name the API
    resolves to another model is an alias): another model than ``configured``, or a
    model that changed during the run. None when every answer named ``configured`` (a
    reply naming no model proves nothing either way)."""
    named = [m for m in models if m is not None]
    seen = list(dict.fromkeys(named))
    if len(seen) > 1:
        return (f"the judge answered as {seen[0]!r}, then as {seen[1]!r} during the run: "
                "its model changed mid-run, so no calibration measured all of it; pin a "
                "dated snapshot the endpoint serves unchanged, and run again")
    if seen and seen[0] != configured:
        return (f"the judge answered as {seen[0]!r}, not the configured {configured!r}: "
                "the configured name is an alias of another model, so the calibration does "
                f"not measure it; set judge.model = {seen[0]!r} (the snapshot it answered "
                "as), calibrate it, and run again")
    return None


def calibration_of(tree: Tree, settings: Settings, names: Iterable[str], now: datetime
                   ) -> dict[str, GraderCalibration]:
    """The calibration of each grader of ``names`` that asks the judge, as a run records
    it (``judge_calibration``), decided at ``tree`` and ``now``."""
    names = list(names)
    if not names:  # a run without graders: the calibration machinery stays unloaded
        return {}
    from gitevals.calibration.tree import statuses

    return {name: _recorded(st) for name, st in statuses(tree, settings, names, now).items()
            if st.state != "n/a"}


def _recorded(st: Status) -> GraderCalibration:
    """One grader's entry; a calibrated one keeps its record's counts (``tpr``/``tnr``
    hits of of), from which reports correct its pass rates (``calibration.corrected``)."""
    out: GraderCalibration = {"status": st.state, "reason": st.reason, "code": st.code}
    if st.state == "calibrated" and st.counts is not None:
        tp, n_pos, tn, n_neg = st.counts
        out["tpr"] = {"hits": tp, "of": n_pos}
        out["tnr"] = {"hits": tn, "of": n_neg}
    return out
