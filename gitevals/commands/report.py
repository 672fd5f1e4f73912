"""``gitevals report [REV|A..B] [-o report.html]``: one self-contained static HTML file.

The IO edge: it gathers the history (``commands.log.gather``: the runs along first-parent
history), the run of the tip, and the diff between two commits (``api.diff``,
exactly what ``gitevals diff`` compares), hands them to ``report.html`` (pure) and
writes the page atomically.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.commands.log import Gathered
    from gitevals.diff import Diff
    from gitevals.git.repo import Repo
    from gitevals.run.artifact import Run

NAME = "report"
HELP = "write one self-contained HTML report: overview, history along git, diff, transcripts"
DEFAULT_OUT = "gitevals-report.html"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gitevals.commands._args import MAX_ROWS, count, positive
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

    from gitevals import __version__
    from gitevals.commands.log import eval_results, gather, split_range, statistics
    from gitevals.git.repo import require_repo
    from gitevals.report import html

    _check_output(args.output)
    gc.disable()  # many big acyclic trees read once: see commands/score.py
    repo = require_repo()
    results = eval_results(repo)
    control, alpha = statistics(repo, None, None)
    got = gather(repo, results, args.what, args.limit, keep_tip=True, control=control,
                 alpha=alpha)
    if got.tip_run is None:
        from gitevals.errors import UsageError

        _, b = split_range(args.what)
        raise UsageError(f"no run of {b} ({got.tip[:12]}) in {results}/ or its git "
                         f"note: make one with `gitevals run --rev {got.tip}`")
    diff, note = _diff(repo, got)
    tip = _transcripts(repo, got.tip_run)
    page = html.render(html.Report(tip, got.history, args.what, diff, note, __version__,
                                   args.static_transcripts))
    return _write(page, args.output)


def _transcripts(repo: Repo, run: Run) -> Run:
    """The tip's run whole, for its transcripts: a summary's full artifact is fetched
    when not here; when it cannot be had the page shows the summary, and says so."""
    from gitevals.errors import ArtifactError
    from gitevals.run.runstore import full_run
    from gitevals.run.summary import is_summary

    if not is_summary(run):
        return run
    try:
        return full_run(repo, run, f"the full artifact of run {run['run_id']}")
    except ArtifactError as exc:
        print(f"gitevals: warning: {exc}; the page shows verdicts without transcripts",
              file=sys.stderr)
        return run


def _diff(repo: Repo, got: Gathered) -> tuple[Diff | None, str]:
    """The diff A B for ``A..B``; for one revision, the previous commit with a run
    against it; none when the history holds one commit only."""
    from gitevals import api
    from gitevals.diff.stats import DEFAULT_ALPHA
    from gitevals.errors import ArtifactError

    commits = got.history.commits
    earlier = [c.sha for c in commits[:-1] if c.run_id is not None]
    if got.start is not None:
        a = got.start
    elif earlier:
        a = earlier[-1]
    else:
        return None, ("No earlier commit along this history has a readable run: there is "
                      "nothing to compare with yet.")
    labels = {c.sha: c.tags[0] for c in commits if c.tags}
    try:
        return api.diff(repo, labels.get(a, a), labels.get(got.tip, got.tip),
                        api.DiffOptions(alpha=DEFAULT_ALPHA)), ""
    except ArtifactError as exc:  # the history already says which run; the page still helps
        return None, f"No diff: {exc}"


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
