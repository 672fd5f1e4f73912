"""``gitevals diff A [B]``: rules, graders, goldens and verdicts between two revisions.

It parses the flags, calls the feature ``gitevals.diff.collect.collect`` (what
``gitevals.api.diff`` calls: it reads the two commits and their runs) and prints a
reporter's text; the exit code says whether the diff fails (``--fail-on``). Not the API
module itself: its option types cost a diff of goldens a tenth of its start, for
nothing (#27: the start; issue 4's bound).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gitevals.bounds import MAX_ROWS
from gitevals.commands._args import (
    add_control,
    add_format,
    add_test,
    count,
    points,
)

if TYPE_CHECKING:
    from gitevals.diff import Diff

#: The parts a diff may cover (``--only``); ``api.DiffOptions`` covers them all by default.
PARTS = ("rules", "graders", "goldens", "verdicts")
NAME = "diff"
HELP = ("what changed between two revisions: rules (cases and task definitions), graders, "
        "goldens, and verdicts of their runs")

FAIL_ON = ("regressed", "any-change", "never")


def _parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise argparse.ArgumentTypeError(f"unknown part {', '.join(bad) or text!r}: "
                                         f"use a comma list of {', '.join(PARTS)}")
    return parts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="the older revision (tag, branch, SHA, HEAD~3)")
    parser.add_argument("b", metavar="B", nargs="?", default="HEAD",
                        help="the newer revision (default HEAD)")
    parser.add_argument("--a-run", metavar="FILE", help="run artifact to use for A")
    parser.add_argument("--b-run", metavar="FILE", help="run artifact to use for B")
    add_format(parser, ("text", "json", "markdown", "junit"),
               "text (rich tables on a terminal, plain when piped), json, "
               "markdown, junit (the suite's verdict first, then a testcase "
               "per scenario: for a CI's test report)")
    parser.add_argument("--fail-on", choices=FAIL_ON, default="regressed",
                        help="exit 1 when a scenario regressed beyond noise (default), on any "
                             "change, or never")
    add_control(parser, "scenarios (and goldens slices)")
    parser.add_argument("--equivalence", type=points, metavar="PTS",
                        help="also require the suite to show no drop larger than PTS points "
                             "(two one-sided tests): exit 1 unless it does")
    add_test(parser, "two-sided exact test on pass counts (default boschloo)")
    parser.add_argument("--only", type=_parts, metavar="PARTS",
                        help=f"compare only these parts (comma list of {', '.join(PARTS)})")
    parser.add_argument("--limit", type=count(MAX_ROWS, least=0), default=50, metavar="N",
                        help="rows of goldens shown in text/markdown (0 = all; json has all)")
    parser.add_argument("--require-runs", action="store_true",
                        help="fail (exit 2) when either side has no run, instead of comparing "
                             "no verdicts: what a CI gate wants")


def run(args: argparse.Namespace) -> int:
    from gitevals.diff.collect import collect
    from gitevals.git.repo import require_repo
    from gitevals.report import diff as report

    repo = require_repo()
    result = collect(repo, args.a, args.b, args.a_run, args.b_run, set(args.only or PARTS),
                     args.test, args.alpha, args.control, args.equivalence)
    if args.format == "json":
        text = report.render_json(result)
    elif args.format == "markdown":
        text = report.render_markdown(result, args.limit)
    elif args.format == "junit":
        text = report.render_junit(result)
    elif sys.stdout.isatty():
        text = report.render_rich(result, args.limit)
    else:
        text = report.render_text(result, args.limit)
    sys.stdout.write(text)
    if args.require_runs and "verdicts" in set(args.only or PARTS):
        missing = [f"no run of {side.rev} ({side.commit[:12]}): {side.missing_run_hint}"
                   for side in (result.a, result.b) if side.run_id is None]
        missing += [f"the run of {side.rev} ({side.commit[:12]}) is partial ({side.partial}):"
                    f" run the whole commit (`gitevals run --rev {side.commit[:12]}`)"
                    for side in (result.a, result.b) if side.run_id and side.partial]
        if missing:
            from gitevals.errors import UsageError

            raise UsageError("; ".join(missing) + " (--require-runs)")
    return exit_code(result, args.fail_on)


def exit_code(result: Diff, fail_on: str) -> int:
    """0, or 1 when ``fail_on`` says this diff fails (regression beyond noise, any change)."""
    if fail_on == "never":
        return 0
    if fail_on == "any-change":
        return 1 if result.any_change() else 0
    c = result.counts()
    if result.suite is not None and result.suite.equivalence_pts is not None \
            and not result.suite.no_drop:
        return 1  # --equivalence: the suite must show no drop larger than the margin
    return 1 if (c["regressed_beyond_noise"] or c["buckets_regressed_beyond_noise"]
                 or c["suite_regressed_beyond_noise"]) else 0
