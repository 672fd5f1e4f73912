"""``gitevals log [CASE[/SCENARIO]]``: the eval history along git, in the terminal.

The IO edge of the history: it walks first-parent history, reads the run of each
commit that has one (``<root>/results/`` of the working tree, else the git note:
``store.run_of_commit``'s rule, as ``show`` and ``diff``) and hands the tallies to
``report.history``. ``gitevals report`` gathers through ``gather`` too.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.commands._args import add_control, add_format, add_rev, positive

if TYPE_CHECKING:
    from gitevals.git.repo import Repo
    from gitevals.report.history import History
    from gitevals.run.artifact import Run

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


@dataclass(frozen=True)
class Gathered:
    """The history from ``start`` (None: as far as ``limit`` reaches) to ``tip``, and the
    run of ``tip`` when it has one and ``keep_tip`` asked for it."""

    history: History
    tip: str
    start: str | None
    tip_run: Run | None


def split_range(spec: str) -> tuple[str | None, str]:
    """``A..B`` -> (A, B); ``REV`` -> (None, REV). A side left empty is ``HEAD``."""
    from gitevals.errors import UsageError

    if "..." in spec:
        raise UsageError(f"{spec}: a symmetric range (A...B) has no one line of history; "
                         "give A..B, A an ancestor of B along first parents")
    if ".." not in spec:
        return None, spec
    a, _, b = spec.partition("..")
    return a or "HEAD", b or "HEAD"


def _with_runs(repo: Repo, results: str, tip: str, start: str | None,
               limit: int) -> list[tuple[str, str]]:
    """``(sha, subject)`` of the newest ``limit`` commits with a run from ``tip`` back
    along first parents to ``start`` (included), oldest first."""
    from gitevals.errors import UsageError
    from gitevals.run.store import results_dir

    try:
        names = [p.name for p in results_dir(repo.work_root, results).glob("*-*-*.json")]
    except OSError:
        names = []
    local = {n.split("-")[1] for n in names if n.count("-") >= 2}
    noted = repo.noted_commits()
    found, reached = [], start is None
    for sha, subject in repo.first_parents(tip):
        if sha[:12] in local or sha in noted:
            found.append((sha, subject))
        if sha == start:
            reached = True
            break
        if len(found) >= limit:
            reached = True
            break
    if not reached:
        raise UsageError(f"{start[:12] if start else ''} is not on the first-parent history "
                         f"of {tip[:12]}: give A..B with A an ancestor of B "
                         "(`git log --first-parent --oneline B` lists them)")
    return found[::-1]


def gather(repo: Repo, results: str, spec: str, limit: int, keep_tip: bool = False,
           control: str = "fdr", alpha: float = 0.05) -> Gathered:
    """Read the runs along the history ``spec`` names (``REV`` or ``A..B``), from the
    notes and the working tree's ``results`` (``Settings.results``); each move is decided
    as ``diff`` decides it, under ``control`` at ``alpha``."""
    from gitevals.diff.verdicts import Tally, clusters, tallies
    from gitevals.errors import ArtifactError
    from gitevals.report.history import Commit, build
    from gitevals.run.store import run_of_commit

    a, b = split_range(spec)
    tip = repo.resolve(b)
    start = repo.resolve(a) if a is not None else None
    tags = repo.tags_by_commit()
    points: list[tuple[Commit, dict[tuple[str, str], Tally] | None]] = []
    tip_run = None
    declared: dict[str, str] = {}
    for sha, subject in _with_runs(repo, results, tip, start, limit):
        try:
            # counts only: a summary's trials stay packed (but the tip's a report shows)
            found = run_of_commit(repo, repo.work_root, results, sha,
                                  trials=keep_tip and sha == tip)
        except ArtifactError as exc:
            points.append((Commit(sha, subject, tuple(tags.get(sha, ())), None, str(exc)),
                           None))
            continue
        if found is None:
            continue  # a results file of another commit sharing the short SHA
        points.append((Commit(sha, subject, tuple(tags.get(sha, ())), found.run["run_id"]),
                       tallies(found.run)))
        declared.update(clusters(found.run))  # the later run's word wins, as in diff
        if keep_tip and sha == tip:
            tip_run = found.run
    return Gathered(build(points, alpha=alpha, control=control, clusters=declared), tip, start,
                    tip_run)


def statistics(repo: Repo, control: str | None, alpha: float | None) -> tuple[str, float]:
    """``--control`` and ``--alpha``, else the working tree's ``[tool.gitevals.statistics]``."""
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings, _ = load_settings(WorkingTree(repo.work_root))
    return (settings.control if control is None else control,
            settings.alpha if alpha is None else alpha)


def eval_results(repo: Repo) -> str:
    """Where the working tree's settings keep runs (``Settings.results``), as ``show``."""
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings, _ = load_settings(WorkingTree(repo.work_root))
    return settings.results


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals.git.repo import require_repo
    from gitevals.report import log
    from gitevals.report.history import select

    gc.disable()  # many big acyclic trees read once: see commands/score.py
    repo = require_repo()
    control, alpha = statistics(repo, args.control, args.alpha)
    got = gather(repo, eval_results(repo), args.rev, args.limit, control=control, alpha=alpha)
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
