"""``gitevals experiment``: the same cases against several harness lanes, repeated, under
controlled conditions; a per-lane report of pass rates, variances and missing measures."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitevals.commands._args import (
    MAX_REPEAT,
    MOST_SAMPLES,
    add_control,
    add_format,
    add_jobs,
    count,
)

if TYPE_CHECKING:
    from gitevals.experiment.controls import Pins, Snapshot
    from gitevals.experiment.lanes import Lane
    from gitevals.experiment.results import LaneResult
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree
    from gitevals.run.runner import Plan

NAME = "experiment"
HELP = ("run the same cases against several harness lanes (REV plus target env), repeated, "
        "and report pass rates and variances per lane")

EXPERIMENTS_DIR = "experiments"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="case names (file name without directory or .yaml); default all")
    parser.add_argument("--lane", action="append", default=[], metavar="NAME=REV[,env:K=V...]",
                        help="a lane: a revision of the harness, optionally with variables "
                             "for the target (repeatable; e.g. base=v1.2,env:MODEL=base-7b)")
    parser.add_argument("--target-env-public", action="append", metavar="KEY",
                        help="record the value of the lanes' env:KEY in clear (repeatable; "
                             "e.g. MODEL): every other value is recorded as its SHA-256")
    parser.add_argument("--repeat", type=count(MAX_REPEAT), default=1, metavar="N",
                        help="run every scenario's trials N times in each lane (default 1)")
    add_jobs(parser, "conversations in parallel within a lane (default 16)")
    parser.add_argument("--max-samples", type=count(MOST_SAMPLES), metavar="N",
                        help="raise the bound of 1,000 conversations an experiment may make")
    add_format(parser, ("text", "json", "markdown"),
               "what to print on stdout (default text); the JSON report is "
               "written to <results>/experiments/<id>.json either way")
    parser.add_argument("--test", choices=("boschloo", "fisher"), default="boschloo",
                        help="two-sided exact test of the pairwise comparisons, as diff's "
                             "(default boschloo; beyond noise when q < alpha)")
    add_control(parser, "every lane pair and scenario (fdr is Benjamini-Yekutieli here: "
                        "pairs that share a lane are dependent)")
    parser.add_argument("--recheck", metavar="ID",
                        help="run nothing: re-check the kept samples of experiment ID against "
                             "its lanes' pins and report again")
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip the checks made before any conversation (target, judge)")


def run(args: argparse.Namespace) -> int:
    from gitevals.git.repo import require_repo

    repo = require_repo()
    if args.recheck is not None:
        if args.lane or args.cases:
            from gitevals.errors import UsageError

            raise UsageError("--recheck reads the lanes and cases the experiment kept: "
                             "give no --lane or CASE with it")
        return _recheck(repo, args.recheck, args.format, args.test, args.control, args.alpha)
    return _experiment(repo, args)


# -- before anything runs ---------------------------------------------------------------


def _lanes(repo: Repo, specs: list[str]) -> list[Lane]:
    from gitevals.experiment.lanes import parse_lane, resolve
    from gitevals.git.trees import RevisionTree

    def to_commit(rev: str) -> tuple[str, str]:
        tree = RevisionTree(repo, rev)
        assert tree.commit is not None and tree.tree_sha is not None
        return tree.commit, tree.tree_sha

    return resolve([parse_lane(s) for s in specs], to_commit)


def _plan(tree: RevisionTree, lane: Lane, names: list[str]) -> Plan:
    from gitevals import api
    from gitevals.errors import UsageError

    try:
        the_plan = api.plan(tree, names)
    except UsageError as exc:
        raise UsageError(f"lane {lane.name}: {exc}") from exc
    if the_plan.settings.target is None:
        raise UsageError(f"lane {lane.name}: no target configured in {tree.label}: set "
                         "[tool.gitevals.target] (or [target] in gitevals.toml)")
    return the_plan


def _snapshot(tree: RevisionTree, the_plan: Plan) -> Snapshot:
    from gitevals import __version__
    from gitevals.experiment.controls import Snapshot, timing, without_target

    root = the_plan.settings.root
    results = f"{the_plan.settings.results}/"  # runs (git-ignored, unless committed) pin nothing
    files = {p: s for p, s in tree.blob_shas(f"{root}/").items() if not p.startswith(results)}
    # A helper a grader imports from outside the eval root (the repository's top) is a
    # control too: an edit there changes every verdict (graderimports.py).
    from gitevals.graderimports import closure

    graders = [p for p in files if p.startswith(f"{root}/graders/") and p.endswith(".py")]
    files.update(closure(tree, graders, root))
    settings = without_target(the_plan.settings.as_dict())
    from gitevals.run.tasks import DEFAULT_AGENT_TIMEOUT, SCENARIO

    times = timing({f"{c.name}/{s.id}": (s.trials, float(s.timeout))
                    for c in the_plan.cases for s in c.scenarios}
                   | {f"{t.name}/{SCENARIO}": (the_plan.task_trials(),
                                               float(t.agent_timeout_sec or DEFAULT_AGENT_TIMEOUT))
                      for t in the_plan.tasks})
    return Snapshot(root, files, settings, times, __version__)


def _refuse_blocked(lanes: list[Lane], plans: list[Plan]) -> bool:
    """Print the lint findings of cases a lane cannot run; True when there were any."""
    blocked = False
    for lane, the_plan in zip(lanes, plans, strict=True):
        for f in the_plan.findings:
            print(f, file=sys.stderr)
        for name in the_plan.blocked:
            blocked = True
            print(f"gitevals: lane {lane.name}: case {name!r} does not lint", file=sys.stderr)
    return blocked


def _controls_before(lanes: list[Lane], snaps: list[Snapshot]) -> None:
    from gitevals.errors import UsageError
    from gitevals.experiment.controls import before
    from gitevals.text import visible

    diffs = before(lanes, snaps)
    if diffs:
        for line in diffs:
            print(f"gitevals: {visible(line)}", file=sys.stderr)
        raise UsageError(f"{len(diffs)} difference{'s' * (len(diffs) != 1)} between the lanes "
                         "besides the harness: nothing was run; only harness files and the "
                         "target env may differ (commit the eval tree to every lane's revision)")


# -- running ----------------------------------------------------------------------------


def _experiment(repo: Repo, args: argparse.Namespace) -> int:
    import time

    from gitevals.experiment.controls import pins_of
    from gitevals.experiment.lanes import MAX_SAMPLES, check_matrix, repeated
    from gitevals.git.trees import RevisionTree
    from gitevals.model import case_name
    from gitevals.run.targetenv import public_names

    names = [case_name(c) if c.endswith((".yaml", ".yml")) else c for c in args.cases]
    lanes = _lanes(repo, args.lane)
    public = public_names(args.target_env_public, {k for lane in lanes for k in lane.env})
    trees = [RevisionTree(repo, lane.commit) for lane in lanes]
    plans = [_plan(t, lane, names) for t, lane in zip(trees, lanes, strict=True)]
    if _refuse_blocked(lanes, plans):
        print("gitevals: nothing was run: fix the cases (`gitevals lint --rev REV`) and commit",
              file=sys.stderr)
        return 1
    snaps = [_snapshot(t, p) for t, p in zip(trees, plans, strict=True)]
    _controls_before(lanes, snaps)
    total = check_matrix(plans[0], len(lanes), args.repeat, args.max_samples or MAX_SAMPLES)
    if not args.no_preflight:
        from gitevals.api import preflight_judge

        preflight_judge(trees[0], plans[0])
    root, kept = plans[0].settings.root, plans[0].settings.results
    exp_id = _new_id()
    started = time.time()
    results: list[LaneResult] = []
    stopped = False
    for lane, tree, the_plan, snap in zip(lanes, trees, plans, snaps, strict=True):
        pins = pins_of(lane, the_plan.files, snap, args.repeat, public)
        if stopped:  # listed, never left out: the report says which lanes did not run
            results.append(_not_run(repo.work_root, kept, exp_id, lane, pins))
            continue
        result = _run_lane(repo, kept, exp_id, lane, tree, repeated(the_plan, args.repeat),
                           pins, names, args, public)
        results.append(result)
        stopped = result.run is not None and result.run["interrupted"]
    meta = _meta(exp_id, root, plans[0], args, total, snaps[0], started, time.time())
    return _finish(repo, kept, meta, results, args.format, args.test, args.control,
                   args.alpha)


def _new_id() -> str:
    import secrets
    import time

    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"


def _run_lane(repo: Repo, kept: str, exp_id: str, lane: Lane, tree: RevisionTree,
              the_plan: Plan, pins: Pins, names: list[str], args: argparse.Namespace,
              public: frozenset[str] = frozenset()) -> LaneResult:
    """Run one lane's share with the ordinary runner, score it by its judge graders'
    calibration as ``run`` does (an advisory grader's failures are not counted in the
    lane's rates), keep its artifact, and read it back from disk: the after-check reads
    the sample as kept, not the value in memory."""
    from gitevals import api
    from gitevals.report.progress import progress
    from gitevals.run import runner
    from gitevals.run.artifact import dumps

    print(f"gitevals: lane {lane.name} ({lane.commit[:12]})", file=sys.stderr)
    prov = runner.Provenance(lane.rev, lane.commit, lane.tree)
    jobs = args.jobs or runner.DEFAULT_JOBS
    # task verifiers run in bubblewrap as in `gitevals run` (refused without it)
    for line in api.task_notes(the_plan):
        print(line, file=sys.stderr)
    bwrap = api.find_sandbox(the_plan, no_sandbox=False)
    options = api.RunOptions(tuple(names), jobs, not args.no_preflight, lane.env,
                             public_env=public, bwrap=bwrap)
    artifact = api.run_commit(tree, the_plan, prov, options, progress)
    artifact = api.calibrated(tree, the_plan, artifact)
    path = _keep(repo.work_root, kept, exp_id, f"{exp_id}/{lane.name}.json", dumps(artifact))
    return _read_lane(repo.work_root, lane.name, lane.rev, pins, path)


def _not_run(work_root: Path, kept: str, exp_id: str, lane: Lane, pins: Pins) -> LaneResult:
    from gitevals.experiment.results import LaneResult

    path = os.path.relpath(_lane_path(work_root, kept, exp_id, lane.name), work_root)
    return LaneResult(lane.name, lane.rev, pins, path, None,
                      "not run: the experiment was interrupted before this lane", ran=False)


def _read_lane(work_root: Path, name: str, rev: str, pins: Pins, path: Path) -> LaneResult:
    from gitevals.errors import ArtifactError
    from gitevals.experiment.results import LaneResult
    from gitevals.run.artifact import load

    inside = work_root.resolve() in path.resolve().parents
    shown = os.path.relpath(path, work_root) if inside else str(path)
    try:
        return LaneResult(name, rev, pins, shown, load(path, shown))
    except ArtifactError as exc:
        return LaneResult(name, rev, pins, shown, None, str(exc))


def _meta(exp_id: str, root: str, the_plan: Plan, args: argparse.Namespace, total: int,
          snap: Snapshot, started: float, finished: float) -> dict[str, Any]:
    from gitevals.run.artifact import utc_stamp
    from gitevals.run.runner import DEFAULT_JOBS

    return {"id": exp_id, "tool_version": snap.tool_version, "root": root,
            "cases": [c.name for c in the_plan.cases], "repeat": args.repeat,
            "jobs": args.jobs or DEFAULT_JOBS, "conversations": total,
            "max_samples": args.max_samples, "settings": snap.settings,
            "started_at": utc_stamp(started), "finished_at": utc_stamp(finished)}


# -- keeping and reporting ----------------------------------------------------------------


def experiments_dir(work_root: Path, kept: str) -> Path:
    """``<results>/experiments`` of the working tree (``kept``: ``Settings.results``;
    refused when a committed symlink would send it outside the repository)."""
    import errno

    from gitevals.run.store import results_dir

    directory = results_dir(work_root, kept) / EXPERIMENTS_DIR
    real, top = directory.resolve(), work_root.resolve()
    if top not in real.parents:
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    return directory


def _lane_path(work_root: Path, kept: str, exp_id: str, lane: str) -> Path:
    return experiments_dir(work_root, kept) / exp_id / f"{lane}.json"


def _keep(work_root: Path, kept: str, exp_id: str, name: str, text: str) -> Path:
    """Write ``name`` under ``<results>/experiments/``, atomically; when that cannot be
    written (read-only, full, a symlink out of the repository), to a temp directory
    instead, and say so: finished samples are never thrown away."""
    import tempfile

    from gitevals.files import write_atomic

    try:
        path = experiments_dir(work_root, kept) / name
        write_atomic(path, text)
        return path
    except OSError as exc:
        fallback = Path(tempfile.gettempdir(), f"gitevals-experiment-{exp_id}", name)
        write_atomic(fallback, text)
        print(f"gitevals: warning: cannot write {kept}/{EXPERIMENTS_DIR}/ "
              f"({exc.strerror or exc}); {name} is in {fallback} instead", file=sys.stderr)
        return fallback


def _finish(repo: Repo, kept: str, meta: dict[str, Any], results: list[LaneResult],
            fmt: str, test: str, control: str | None = None, alpha: float | None = None
            ) -> int:
    from gitevals.experiment.results import build, dumps, exit_code
    from gitevals.git.trees import WorkingTree
    from gitevals.report.experiment import render
    from gitevals.settings import load_settings

    settings = load_settings(WorkingTree(repo.work_root))[0]
    doc = build(meta, results, test, settings.alpha if alpha is None else alpha,
                       settings.control if control is None else control)
    path = _keep(repo.work_root, kept, meta["id"], f"{meta['id']}.json", dumps(doc))
    tail = f"; report {os.path.relpath(path)}" if fmt == "text" else ""
    sys.stdout.write(render(doc, fmt, tail, terminal=sys.stdout.isatty()))
    sys.stdout.flush()
    if any(d["interrupted"] for d in doc["lanes"]):
        print(f"gitevals: interrupted; what finished is in {path}", file=sys.stderr)
        return 130
    return exit_code(doc)


# -- --recheck ----------------------------------------------------------------------------


def _recheck(repo: Repo, exp_id: str, fmt: str, test: str, control: str | None = None,
             alpha: float | None = None) -> int:
    """Re-read experiment ``exp_id``'s kept samples, re-check each against the pins its
    lanes recorded before they ran, and report (and keep) the result again."""
    import re

    from gitevals.errors import UsageError
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    if not re.match(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$", exp_id):
        raise UsageError(f"--recheck {exp_id!r}: an experiment id looks like "
                         "20261130T211500Z-1a2b3c (the name of its report, without .json)")
    kept = load_settings(WorkingTree(repo.work_root))[0].results
    path = experiments_dir(repo.work_root, kept) / f"{exp_id}.json"
    doc = _read_report(path)
    results = [_recheck_lane(repo.work_root, kept, doc, lane) for lane in doc["lanes"]]
    keys = ("id", "tool_version", "root", "cases", "repeat", "jobs", "conversations",
            "max_samples", "settings", "started_at", "finished_at")
    return _finish(repo, kept, {k: doc[k] for k in keys}, results, fmt, test, control, alpha)


def _read_report(path: Path) -> dict[str, Any]:
    import json

    from gitevals.errors import UsageError
    from gitevals.experiment.results import FORMAT

    try:
        doc = json.loads(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}; name an experiment "
                         "kept in this repository's results/experiments/") from exc
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not an experiment report: not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{path}: not an experiment report: no \"format\": {FORMAT!r}")
    return doc


def _recheck_lane(work_root: Path, kept: str, doc: dict[str, Any],
                  lane: dict[str, Any]) -> LaneResult:
    from gitevals.errors import UsageError
    from gitevals.experiment.controls import Pins
    from gitevals.experiment.lanes import valid_name

    try:
        name = lane["name"]
        if not valid_name(name):
            raise ValueError(f"lane name {name!r}")
        timing = {k: (int(v[0]), float(v[1])) for k, v in lane["pins"]["timing"].items()}
        pins = Pins(lane["commit"], lane["tree"], lane["target_env"], lane["pins"]["files"],
                    doc["settings"], timing, doc["tool_version"], doc["root"])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise UsageError(f"the experiment report is damaged ({exc}): it cannot be "
                         "re-checked; run the experiment again") from exc
    path = _lane_path(work_root, kept, doc["id"], name)
    return _read_lane(work_root, name, lane.get("rev", ""), pins, path)
