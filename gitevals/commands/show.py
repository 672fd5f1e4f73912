"""``gitevals show [ARTIFACT|REV]``: the verdict table of a stored run."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.run.artifact import Run

NAME = "show"
HELP = "show the verdicts of a run: an artifact file, or the newest run of a revision"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", default="HEAD", metavar="ARTIFACT|REV",
                        help="a run artifact (.json), or a revision whose newest run to show "
                             "(default: HEAD)")
    parser.add_argument("--format", choices=("text", "json", "junit", "markdown"),
                        default="text", help="output format (default: text)")


def _is_path(what: str) -> bool:
    return what.endswith(".json") or os.path.isfile(what)


def run_for_rev(rev: str) -> Run:
    """The run pinned to ``rev``'s commit: <root>/results/ of the working tree, else the
    git note on the commit. None found is a usage error naming the fix."""
    from gitevals.errors import UsageError
    from gitevals.git.tree import WorkingTree, require_repo
    from gitevals.run.store import run_of_commit
    from gitevals.settings import load_settings

    repo = require_repo()
    commit = repo.resolve(rev)
    settings, _ = load_settings(WorkingTree(repo.work_root))
    found = run_of_commit(repo, repo.work_root, settings.root, commit)
    if found is None:
        raise UsageError(f"no run of {rev} ({commit[:12]}) in {settings.root}/results/ or its "
                         f"git note: make one with `gitevals run --rev {commit}`")
    return found.run


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals.report.runs import render
    from gitevals.run.artifact import failed, load

    gc.disable()  # a short-lived read of one big acyclic tree: see commands/score.py
    artifact = load(args.what) if _is_path(args.what) else run_for_rev(args.what)
    sys.stdout.write(render(artifact, args.format, terminal=sys.stdout.isatty()))
    sys.stdout.flush()
    return 1 if failed(artifact) else 0
