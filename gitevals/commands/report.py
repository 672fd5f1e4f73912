"""``gitevals report [REV|A..B] [-o report.html]``: one self-contained static HTML file.

Parses, calls ``gitevals.api.report`` (the history along first-parent history, the run
of the tip and the diff between two commits, exactly what ``gitevals diff`` compares),
renders the page (``report.html``, pure) and writes it atomically.
"""

from __future__ import annotations

import argparse
import sys

NAME = "report"
HELP = "write one self-contained HTML report: overview, history along git, diff, transcripts"
DEFAULT_OUT = "gitevals-report.html"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gitevals.bounds import MAX_ROWS
    from gitevals.commands._args import count, positive
    from gitevals.commands.log import LIMIT

    # gitevals.report.html.STATIC, written here: every command's arguments are built at
    # each start, and the page's module is not needed for that (tests check they agree)
    STATIC = 1000

    parser.add_argument("what", nargs="?", default="HEAD", metavar="REV|A..B",
                        help="the run of REV (default HEAD) with the history before it, or "
                             "the history from A to B (both included) and the diff A B")
    parser.add_argument("-o", "--output", default=DEFAULT_OUT, metavar="FILE",
                        help=f"where to write the page (default {DEFAULT_OUT}; - for stdout)")
    parser.add_argument("--limit", type=positive, default=LIMIT, metavar="N",
                        help=f"at most N commits with runs in the history, the newest "
                             f"(default {LIMIT})")
    parser.add_argument("--static-transcripts", type=count(MAX_ROWS, least=0), default=STATIC,
                        metavar="N",
                        help=f"a run of up to N trials has every transcript as HTML that "
                             f"reads with JavaScript off; a larger one keeps them as data a "
                             f"small script shows on opening (default {STATIC})")


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals import api
    from gitevals.git.repo import require_repo
    from gitevals.report import html

    _check_output(args.output)
    gc.disable()  # many big acyclic trees read once: see commands/score.py
    got = api.report(require_repo(), args.what,
                     api.ReportOptions(args.limit, args.static_transcripts))
    for warning in got.warnings:
        print(f"gitevals: warning: {warning}", file=sys.stderr)
    return _write(html.render(got.report), args.output)


def _check_output(output: str) -> None:
    """Refuse, before any work, an output that is a directory."""
    import os

    if output != "-" and os.path.isdir(output):
        from gitevals.errors import UsageError

        raise UsageError(f"-o {output}: is a directory; name a file, e.g. "
                         f"{os.path.join(output, DEFAULT_OUT)}")


def _write(page: str, output: str) -> int:
    if output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return 0
    import os
    from pathlib import Path

    from gitevals.files import write_atomic

    write_atomic(Path(output), page)
    size = len(page.encode())
    print(f"wrote {os.path.relpath(output)} ({size / 1024:,.0f} KiB)", file=sys.stderr)
    return 0
