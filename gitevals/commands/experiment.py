"""``gitevals experiment``: the same cases against several harness lanes, repeated, under
controlled conditions; a per-lane report of pass rates, variances and missing measures.
Parses, calls ``gitevals.api.experiment`` (or ``recheck_experiment``) and renders
(``report.experiment``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from gitevals.bounds import MAX_REPEAT, MOST_SAMPLES
from gitevals.commands._args import (
    add_control,
    add_format,
    add_jobs,
    add_test,
    count,
)

if TYPE_CHECKING:
    from gitevals.api import ExperimentResult

NAME = "experiment"
HELP = ("run the same cases against several harness lanes (REV plus target env), repeated, "
        "and report pass rates and variances per lane")


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
    add_test(parser, "two-sided exact test of the pairwise comparisons, as diff's "
                     "(default boschloo; beyond noise when q < alpha)")
    add_control(parser, "every lane pair and scenario (fdr is Benjamini-Yekutieli here: "
                        "pairs that share a lane are dependent)")
    parser.add_argument("--recheck", metavar="ID",
                        help="run nothing: re-check the kept samples of experiment ID against "
                             "its lanes' pins and report again")
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip the checks made before any conversation (target, judge)")


def run(args: argparse.Namespace) -> int:
    from gitevals import api
    from gitevals.git.repo import require_repo
    from gitevals.report.progress import progress

    repo = require_repo()
    options = api.ExperimentOptions(
        tuple(args.lane), tuple(args.cases),
        None if args.target_env_public is None else tuple(args.target_env_public),
        args.repeat, args.jobs, args.max_samples, args.test, args.control, args.alpha,
        not args.no_preflight)
    if args.recheck is not None:
        if args.lane or args.cases:
            from gitevals.errors import UsageError

            raise UsageError("--recheck reads the lanes and cases the experiment kept: "
                             "give no --lane or CASE with it")
        return _render(api.recheck_experiment(repo, args.recheck, options, _say), args.format)
    return _render(api.experiment(repo, options, progress, _say), args.format)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _render(result: ExperimentResult, fmt: str) -> int:
    """Print the report (a tail naming where it was kept, for text); the exit code."""
    from gitevals.experiment.results import exit_code
    from gitevals.report.experiment import render

    if result.report is None or result.path is None:
        print("gitevals: nothing was run: fix the cases (`gitevals lint --rev REV`) and commit",
              file=sys.stderr)
        return 1
    tail = f"; report {os.path.relpath(result.path)}" if fmt == "text" else ""
    sys.stdout.write(render(result.report, fmt, tail, terminal=sys.stdout.isatty()))
    sys.stdout.flush()
    if result.interrupted:
        print(f"gitevals: interrupted; what finished is in {result.path}", file=sys.stderr)
        return 130
    return exit_code(result.report)
