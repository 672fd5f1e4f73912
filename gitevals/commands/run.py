"""``gitevals run``: evaluate the tree as committed at REV; write a pinned artifact.

Parses the flags, calls ``gitevals.api.run_rev`` (which plans, runs and keeps the run:
its file and its git note) and renders the result."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.bounds import MAX_JOBS, MAX_LOOKS, MAX_SEQUENTIAL_TRIALS, MAX_TRIALS
from gitevals.commands._args import (
    add_control,
    add_format,
    add_jobs,
    add_rev,
    count,
    points,
)

if TYPE_CHECKING:
    from gitevals.api import ProgressFactory, RunRequest, RunResult
    from gitevals.report.progress import Update
    from gitevals.run.artifact import Run

NAME = "run"
HELP = ("run cases and tasks against the harness as committed at REV (default HEAD) and "
        "record verdicts")

EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags, in the order ``--help`` lists them: what runs, what is recorded of it,
    the target's environment, a sequential run, the sandbox and the goldens, where and
    how it executes."""
    _add_selection(parser)
    _add_recording(parser)
    _add_target_env(parser)
    _add_sequential(parser)
    _add_tasks_and_goldens(parser)
    _add_execution(parser)


def _add_selection(parser: argparse.ArgumentParser) -> None:
    """The cases, the revision, the trials and the jobs."""
    parser.add_argument("cases", nargs="*", metavar="NAME",
                        help="case names (file name without directory or .yaml) or task "
                             "names (directory under tasks/); default all")
    add_rev(parser, "commit, branch or tag to run (HEAD)", default="HEAD")
    parser.add_argument("--trials", type=count(MAX_TRIALS), metavar="N",
                        help="run every scenario N times instead of its own trials (at "
                             f"most {MAX_TRIALS:,}, as a case file may set)")
    add_jobs(parser, "conversations in parallel (default 16: conversations mostly wait "
                     f"on model APIs, not on the CPU; at most {MAX_JOBS})")


def _add_recording(parser: argparse.ArgumentParser) -> None:
    """What the run records and prints: a dirty tree, the note, the format, a draft."""
    parser.add_argument("--allow-dirty", action="store_true",
                        help="run although tracked files have uncommitted changes "
                             "(the commit still runs; the artifact says dirty)")
    parser.add_argument("--no-note", action="store_true",
                        help="do not attach the artifact to the commit as a git note")
    add_format(parser, ("text", "json", "junit", "markdown"),
               "what to print on stdout (default text)")
    parser.add_argument("--draft", metavar="PATH.yaml",
                        help="run this case file, from outside the tree, against the commit's "
                             "graders and harness (linted first; kept in results/drafts/, "
                             "never as the commit's run or note)")


def _add_target_env(parser: argparse.ArgumentParser) -> None:
    """The target's environment, hashed in the artifact unless named public."""
    parser.add_argument("--target-env", action="append", metavar="KEY=VALUE",
                        help="give the target this environment variable (repeatable); the "
                             "artifact records the SHA-256 of its value, not the value")
    parser.add_argument("--target-env-public", action="append", metavar="KEY",
                        help="record the value of --target-env KEY in clear (repeatable; "
                             "e.g. MODEL); never a name holding KEY, TOKEN or SECRET")


def _add_sequential(parser: argparse.ArgumentParser) -> None:
    """``--against`` and the design of a sequential run."""
    seq = parser.add_argument_group(
        "sequential runs (docs/statistics.md)",
        "run each scenario's trials in rounds against the run pinned to REV, and stop a "
        "scenario as soon as its regression call is settled either way")
    seq.add_argument("--against", metavar="REV",
                     help="the base revision: its run's tallies are what each scenario is "
                          "compared with after every round")
    seq.add_argument("--max-trials", type=count(MAX_SEQUENTIAL_TRIALS), metavar="N",
                     help="trials a scenario runs at most (default: its own trials; at most "
                          f"{MAX_SEQUENTIAL_TRIALS:,}: the design is computed exactly)")
    seq.add_argument("--looks", type=count(MAX_LOOKS), metavar="K",
                     help=f"looks (rounds) at most (default 5; at most {MAX_LOOKS})")
    seq.add_argument("--drop", type=points, metavar="PTS", default=20.0,
                     help="the drop in pass rate, in points, that matters: ruling it out "
                          "stops a scenario early (default 20)")
    add_control(seq, "scenarios: under fdr and fwer each scenario's design is held at "
                     "alpha / scenarios (Bonferroni)")


def _add_tasks_and_goldens(parser: argparse.ArgumentParser) -> None:
    """The task verifiers' sandbox and controls; which goldens are sent."""
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run task verifiers directly on this machine, without "
                             "bubblewrap (no isolation; recorded in the artifact)")
    parser.add_argument("--task-controls", action="store_true",
                        help="first run each task's validity controls in the sandbox (the "
                             "verifier must fail the untouched workspace and pass after "
                             "solution/solve.sh); a task whose controls fail is broken and "
                             "its trials do not run")
    parser.add_argument("--goldens", action="store_true",
                        help="also send the goldens (each to its bucket's grader) with the named "
                             "cases; a run of every case sends them when buckets are mapped")
    parser.add_argument("--goldens-only", action="store_true",
                        help="send the goldens (and the drift suite) alone, no case")
    parser.add_argument("--bucket", action="append", metavar="B",
                        help="send only the goldens of bucket B (repeatable; implies --goldens; "
                             "no drift suite)")


def _add_execution(parser: argparse.ArgumentParser) -> None:
    """The preflight, the executor, the cost limit."""
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip the checks made before any trial (target executable or "
                             "importable, judge configured, keyed and answering)")
    parser.add_argument("--executor", choices=("local", "ray"),
                        help="where conversations run: local (this machine, the default) or "
                             "ray (a Ray cluster; docs/run.md); default from [executor] settings")
    parser.add_argument("--ray-address", metavar="HOST:PORT",
                        help="the Ray cluster's head (implies --executor ray; default the "
                             "[executor] address, RAY_ADDRESS, or the cluster on this machine)")
    parser.add_argument("--cost-limit", type=_usd, metavar="USD",
                        help="stop the run cleanly once its trials have cost USD or more "
                             "(target and judge; tokens priced by [pricing]); the artifact "
                             "keeps what finished, marked interrupted")
    parser.add_argument("--graders-on-workers", action="store_true",
                        help="with --executor ray, grade on the cluster's nodes rather than "
                             "on this machine (the judge's key must be set there too)")


def _usd(text: str) -> float:
    """A cost limit in USD: above 0, at most ``bounds.MAX_COST_LIMIT``."""
    from gitevals.bounds import usd_problem

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of USD") from None
    problem = usd_problem(value, repr(text))
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def run(args: argparse.Namespace) -> int:
    from gitevals import api
    from gitevals.report.progress import progress

    with _collector_paused(progress) as trials_progress:
        result = api.run_rev(_request(args), progress=trials_progress, say=_say)
    if result.run is None or result.path is None:
        return _nothing_ran(result, args)
    return _render(result, result.run, result.path, args.format)


@contextmanager
def _collector_paused(progress: ProgressFactory) -> Iterator[ProgressFactory]:
    """Python's cycle collector off while the run starts, on again once its trials (or
    goldens) start (the first ``progress``), and as it was afterwards (#27: the start).

    The start is imports, settings and the plan: objects that live as long as the run and
    that each full collection would walk again (the collections of a one-sample run's
    start were ~6% of its CPU). The trials, which may run for hours, are collected. In the
    program (``commands.PROGRAM``), which ends with the run, what the start made is also
    frozen out of the trials' collections. An in-process caller gets nothing frozen: it
    collects what the run made once it is done, and gitevals never asks how many objects
    the caller froze (``gc.get_freeze_count`` walks them all: 15 ms a run in a process
    that froze a test session's million objects)."""
    import gc

    from gitevals import commands

    if not gc.isenabled():  # a caller's choice: left alone
        yield progress
        return
    started_trials = False

    def started(label: str, total: int, unit: str = "trials",
                groups: tuple[str, int] | None = None) -> AbstractContextManager[Update]:
        nonlocal started_trials
        if not started_trials:
            started_trials = True
            if commands.PROGRAM:
                gc.freeze()
            gc.enable()
        return progress(label, total, unit, groups)

    gc.disable()
    try:
        yield started
    finally:
        gc.enable()


def _request(args: argparse.Namespace) -> RunRequest:
    """The flags as the API takes them."""
    from gitevals import api

    return api.RunRequest(
        rev=args.rev, cases=tuple(args.cases), trials=args.trials, jobs=args.jobs,
        allow_dirty=args.allow_dirty, note=not args.no_note, draft=args.draft,
        target_env=tuple(args.target_env or ()),
        public_env=tuple(args.target_env_public or ()), against=args.against,
        max_trials=args.max_trials, looks=args.looks, drop=args.drop, alpha=args.alpha,
        control=args.control, sandbox=not args.no_sandbox, task_controls=args.task_controls,
        goldens=args.goldens, goldens_only=args.goldens_only, buckets=tuple(args.bucket or ()),
        check=not args.no_preflight, executor=args.executor, ray_address=args.ray_address,
        graders_on_workers=args.graders_on_workers, cost_limit=args.cost_limit)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _nothing_ran(result: RunResult, args: argparse.Namespace) -> int:
    """Exit 1 with nothing written; when lint refused every selected case, say how to
    fix them, and list them where the format lists failures (junit, markdown)."""
    if not result.blocked:  # nothing to send: the notes above said why
        return 1
    from gitevals.report.runs import render_refused
    from gitevals.text import visible

    if result.draft is not None:  # lint never sees the draft, and a draft is not committed
        import shlex

        print(f"gitevals: nothing was run: the draft has lint errors (above); fix the "
              f"draft and run it again (`gitevals run --draft "
              f"{visible(shlex.quote(args.draft))}`)", file=sys.stderr)
    else:
        print(f"gitevals: nothing was run: every selected case has lint errors; fix "
              f"them (`gitevals lint --rev {args.rev}`) and commit", file=sys.stderr)
    sys.stdout.write(render_refused(result.refused, args.format))
    return 1


def _render(result: RunResult, artifact: Run, path: Path, fmt: str) -> int:
    """Print the run in ``fmt`` (json: the artifact, byte for byte as written), say where
    it is; the exit code."""
    tail = _tail(artifact, path, result.noted) if fmt == "text" else ""
    if tail and result.draft is not None:
        tail += f" (draft {result.draft.given}: not the commit's run)"
    if fmt == "json":
        sys.stdout.write(result.text)
    else:
        from gitevals.report.runs import render

        sys.stdout.write(render(artifact, fmt, terminal=sys.stdout.isatty(),
                                refused=result.refused, tail=tail))
    sys.stdout.flush()
    if result.interrupted:
        why = artifact.get("interrupted_reason", "interrupted")
        print(f"gitevals: {why}; what finished is in {path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if fmt != "text" and sys.stderr.isatty():  # stdout stays the document alone
        print(f"artifact: {os.path.relpath(path)}", file=sys.stderr)
    return 0 if result.ok else 1


def _tail(artifact: Run, path: Path, noted: bool) -> str:
    """`` in 12.3 s; artifact evals/results/<id>.json, note refs/notes/gitevals``: what
    ends the text summary, so a reader knows where the whole run is."""
    from gitevals.git.repo import NOTES_REF
    from gitevals.text import visible

    where = f" in {artifact['duration_ms'] / 1000:.1f} s; artifact {visible(os.path.relpath(path))}"
    return where + (f", note {NOTES_REF}" if noted else "")
