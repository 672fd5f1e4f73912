"""``gitevals gate ARTIFACT --baseline NAME``: a run against the baseline of the base model.

Per bucket and drift slice, the delta in points with its interval; exit 1 when a drop
beyond the drift budget's hard-fail threshold happened in any slice, 2 when there is
no baseline or it was measured with other goldens or graders. Parses, calls
``gitevals.api.gate`` and renders (``report.gate``).
"""

from __future__ import annotations

import argparse
import sys

from gitevals.commands._args import add_control, add_format

NAME = "gate"
HELP = ("compare a run with <root>/baseline-<NAME>.json per bucket and drift slice; exit 1 "
        "on a drop beyond the hard-fail threshold")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT|REV",
                        help="the run artifact (.json), or a revision whose run to gate")
    parser.add_argument("--baseline", required=True, metavar="NAME",
                        help="the baseline's model name (<root>/baseline-<NAME>.json of the "
                             "working tree)")
    add_format(parser, ("text", "json", "markdown"))
    add_control(parser, "the counted slices")


def run(args: argparse.Namespace) -> int:
    from gitevals import api
    from gitevals.report.gate import REPORTERS

    result = api.gate(args.artifact, api.GateOptions(args.baseline, args.control, args.alpha))
    sys.stdout.write(REPORTERS[args.format](result))
    sys.stdout.flush()
    return 0 if result.passed else 1
