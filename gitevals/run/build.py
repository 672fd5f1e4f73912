"""The run artifact, built once from every part of a finished run (``build_artifact``).

A run's document has parts beyond its conversations: a sequential design's looks, the
goldens, a cost limit, the judge graders' calibration, a draft case. They are gathered
into one ``ArtifactParts`` and written here, in one place, so no caller patches the
artifact after it is built (``gitevals.api.run_commit`` is the one caller).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals import __version__
from gitevals.run.artifact import FORMAT, GraderCalibration, Options, Run, new_run_id, utc_stamp

if TYPE_CHECKING:
    from gitevals.run.draft import DraftFile
    from gitevals.run.goldens import Goldens
    from gitevals.run.runner import Execution, Plan, Provenance
    from gitevals.run.sequential import Rounds


@dataclass(frozen=True)
class GoldensPart:
    """What the goldens of a run (``run --goldens``) add to its artifact: their part, the
    blobs they read (pinned beside the plan's files), and whether they were stopped."""

    part: Goldens
    files: Mapping[str, str]
    stopped: bool


@dataclass(frozen=True)
class ArtifactParts:
    """Every part a run's artifact is made of, gathered once the run is over, so that
    ``build_artifact`` writes the whole document in one place and nothing patches it
    afterwards. Beside the execution: ``rounds`` (``run --against``: the design, its
    looks and each scenario's stop), ``goldens``, ``cost_limit`` and, when the limit
    stopped the run, ``cost_reason``; ``goldens_only`` (``--goldens-only`` in a tree
    that has cases); ``calibration`` (the judge graders' calibration of the assembled
    run, ``calibration.runs.run_calibration``: it reads which graders the run named and
    the models the judge answered as, so it is asked of the run, not given beforehand),
    by which the run is scored; ``draft`` (``run --draft``: the file the draft case came
    from)."""

    prov: Provenance
    plan: Plan
    execution: Execution
    names: Sequence[str]
    jobs: int
    started: float
    finished: float
    calibration: Callable[[Run], Mapping[str, GraderCalibration]]
    rounds: Rounds | None = None
    goldens: GoldensPart | None = None
    cost_limit: float | None = None
    cost_reason: str | None = None
    goldens_only: bool = False
    draft: DraftFile | None = None


def build_artifact(parts: ArtifactParts) -> Run:
    """The complete ``gitevals-run/1`` artifact of a finished (or interrupted) run,
    scored by its judge graders' calibration (``scoring.rescore``)."""
    from gitevals.run.scoring import rescore

    prov, the_plan, execution = parts.prov, parts.plan, parts.execution
    started, finished, goldens = parts.started, parts.finished, parts.goldens
    files = {**the_plan.files, **(goldens.files if goldens is not None else {})}
    options: Options = {"cases": sorted(set(parts.names)), "trials": the_plan.trials,
                                 "jobs": parts.jobs}
    if parts.cost_limit is not None:
        options["cost_limit"] = parts.cost_limit
    if parts.goldens_only:
        options["goldens_only"] = True
    run: Run = {
        "format": FORMAT,
        "run_id": new_run_id(prov.commit, started),
        "tool_version": __version__,
        "rev": prov.rev, "commit": prov.commit, "tree": prov.tree,
        "dirty": prov.dirty, "dirty_diff": prov.dirty_diff,
        "root": the_plan.settings.root,
        "settings": the_plan.settings.as_dict(),
        "files": dict(sorted(files.items())),
        "started_at": utc_stamp(started), "finished_at": utc_stamp(finished),
        "duration_ms": int((finished - started) * 1000),
        "interrupted": execution.stop.is_set() or (goldens is not None and goldens.stopped),
        "options": options,
        "cases": execution.cases(),
        "executor": execution.executor.record(),
    }
    if execution.target_env:  # only when given: runs without one stay byte-identical
        from gitevals.run.targetenv import record

        run["target_env"] = record(execution.target_env, execution.public_env)
    if goldens is not None:
        run["goldens"] = goldens.part
    if parts.cost_reason is not None:
        run["interrupted_reason"] = parts.cost_reason
    if parts.rounds is not None:
        from gitevals.run.sequential import annotate

        annotate(run, parts.rounds)
    run = rescore({**run, "judge_calibration": dict(parts.calibration(run))})
    if parts.draft is not None:
        from gitevals.run.draft import mark

        mark(run, parts.draft)
    return run
