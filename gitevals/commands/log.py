"""``gitevals log [CASE[/SCENARIO]]``: the eval history along git, in the terminal.

Parses, calls ``gitevals.api.history`` (the runs along first-parent history, read as
``show`` and ``diff`` read them) and renders (``report.log``).
"""

from __future__ import annotations

import argparse
import sys

from gitevals.commands._args import add_control, add_format, add_rev, positive

NAME = "log"
HELP = "the eval history along git: a row per commit with a run, a column per scenario"
#: Commits with runs shown when --limit is not given.
LIMIT = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("only", nargs="?", metavar="CASE[/SCENARIO]",
                        help="only this case, or one scenario of it (default: every one)")
    add_rev(parser, "the history of REV's first parents (default HEAD), or from A "
                    "to B (both included)", default="HEAD", metavar="REV|A..B")
    parser.add_argument("--limit", type=positive, default=LIMIT, metavar="N",
                        help=f"at most N commits with runs, the newest (default {LIMIT})")
    add_format(parser, ("text", "json"), "output format (default: text)")
    add_control(parser, "the scenarios of each move, as diff")


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals import api
    from gitevals.git.repo import require_repo
    from gitevals.report import log
    from gitevals.report.history import select

    gc.disable()  # many big acyclic trees read once: see commands/score.py
    repo = require_repo()
    got = api.history(repo, args.rev, api.HistoryOptions(args.limit, args.control, args.alpha))
    history = select(got.history, args.only)
    if args.only and not history.scenarios and got.history.scenarios:
        from gitevals.errors import UsageError
        from gitevals.text import visible

        raise UsageError(f"no scenario {visible(args.only)!r} in the runs of this history; "
                         "give CASE or CASE/SCENARIO as `gitevals show` lists them")
    text = (log.render_json(history, args.rev) if args.format == "json"
            else log.render_text(history, args.rev))
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0
