"""``gitevals doctor``: the Phase 0 checklist of a commit (goldens, buckets, one grader
per bucket, judges calibrated or n/a, drift suite frozen, baseline written)."""

from __future__ import annotations

import argparse
import sys

from gitevals.commands._args import add_format, add_rev

NAME = "doctor"
HELP = "the Phase 0 checklist of a commit: each item ok / missing / n/a with its fix " \
       "(exit 1 while one is missing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rev(parser, "the commit to check (default: HEAD): what is committed counts", default="HEAD")
    parser.add_argument("--single-surface", action="store_true",
                        help="state a single-failure-surface task: 1-2 buckets are then "
                             "n/a instead of missing")
    add_format(parser, ("text", "json"), "text (default) or json")


def run(args: argparse.Namespace) -> int:
    from gitevals.git.trees import open_tree
    from gitevals.goldens.doctor import checklist, complete, gather
    from gitevals.report.goldens import doctor_json, doctor_text

    tree = open_tree(rev=args.rev)
    items = checklist(gather(tree, args.single_surface))
    render = doctor_json if args.format == "json" else doctor_text
    sys.stdout.write(render(items, tree.label))
    return 0 if complete(items) else 1
