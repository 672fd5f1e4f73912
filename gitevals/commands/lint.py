"""``gitevals lint``: cases, grader references and goldens, with ``path:line:col`` findings."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format, add_jobs, add_rev

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from gitevals.git.trees import Tree
    from gitevals.lint import LintResult

NAME = "lint"
HELP = ("Check cases, grader references, goldens and task directories of the eval tree "
        "(working tree, index or REV).")
FORMATS = ("text", "json", "github", "sarif")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="only these case/goldens files or directories "
                             "(graders still resolve against the whole tree)")
    where = parser.add_mutually_exclusive_group()
    add_rev(where, "lint the tree as committed at REV (branch, tag, SHA, HEAD~2)")
    where.add_argument("--staged", action="store_true",
                       help="lint what is staged (the index): what a commit made now holds")
    add_format(parser, FORMATS, "text (default), json, github workflow annotations, or sarif "
                                "(SARIF 2.1.0 for code scanning)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the lint cache")
    add_jobs(parser, "worker processes (default: number of CPUs)", short=False)


def run(args: argparse.Namespace) -> int:
    from gitevals.git.trees import open_tree
    from gitevals.lint import lint_tree
    from gitevals.report.findings import nothing_to_lint, render

    tree = open_tree(rev=args.rev, staged=args.staged)
    paths = repo_paths(tree, args.paths) if args.paths else None
    if args.staged and paths is not None:
        paths += staged_deletions(tree)
    bar = _LazyBar() if sys.stderr.isatty() else None
    try:
        # the feature itself, as api.lint calls it: importing gitevals.api (its option
        # types) was a third of what the commit hook imports beyond pygit2 and yaml (#27)
        result = lint_tree(tree, paths, cache=not args.no_cache, jobs=args.jobs,
                           progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if args.format == "sarif":
        _write_sarif(result)
    else:
        sys.stdout.write(render(result, args.format, _terminal_width()))
    if result.notes:  # one line each, no finding: names come from the tree
        from gitevals.text import visible

        sys.stderr.writelines(f"gitevals: {visible(note)}\n" for note in result.notes)
    if result.files == 0 and paths is None:
        sys.stderr.write(nothing_to_lint(tree.label))
    return 0 if result.ok else 1


def _write_sarif(result: LintResult) -> None:
    """The SARIF log on stdout; a line on stderr when GitHub's limits cut it."""
    from gitevals.report import sarif

    log = sarif.render([sarif.Located(f) for f in result.findings])
    sys.stdout.write(log.text)
    if log.note:
        sys.stderr.write(f"gitevals: {log.note}\n")


def _terminal_width() -> int | None:
    """stdout's width when it is a terminal (colours), else None (plain text for pipes)."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns


class _LazyBar:
    """A transient progress bar on stderr, started at the first report: only large runs
    report, so small ones never import rich."""

    def __init__(self) -> None:
        self.shown: tuple[Progress, TaskID] | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.shown is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            bar = Progress(TextColumn("linting"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("files"), console=Console(stderr=True), transient=True)
            self.shown = bar, bar.add_task("lint", total=total)
            bar.start()
        bar, task = self.shown
        bar.update(task, completed=done)

    def close(self) -> None:
        if self.shown is not None:
            self.shown[0].stop()


def repo_paths(tree: Tree, given: list[str]) -> list[str]:
    """User paths (relative to the cwd) -> repo-relative posix paths of ``tree``.

    Paths outside the repository are dropped (pre-commit may pass any staged file);
    a path inside it that names nothing in the tree is a usage error.
    """
    from gitevals.errors import UsageError

    top = tree.location
    out: list[str] = []
    for p in given:
        rel = os.path.relpath(os.path.abspath(p), top)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            continue
        rel = "" if rel == os.curdir else Path(rel).as_posix()
        if rel and not tree.exists(rel):
            raise UsageError(f"{p}: not found in {tree.label}; "
                             "name a case file, goldens.jsonl or a directory")
        out.append(rel)
    return out


def staged_deletions(index: Tree) -> list[str]:
    """Grader modules, settings files and task files HEAD holds and the index does not.

    pre-commit passes a hook only added or modified files, yet deleting a grader module
    breaks the cases that name it: naming the deleted path re-lints them.
    """
    from gitevals.errors import GitevalsError
    from gitevals.git.trees import open_tree
    from gitevals.lint import SETTINGS_FILES
    from gitevals.settings import load_settings
    from gitevals.tasks import tasks_dir

    try:
        head = open_tree(rev="HEAD", start=Path(index.location))
    except GitevalsError:  # no commit yet: nothing was deleted
        return []
    root = load_settings(index)[0].root
    graders = f"{root}/graders/" if root else "graders/"
    tasks = f"{tasks_dir(root)}/"  # a task's deleted tests/test.sh breaks the task
    before = [*head.blob_shas(graders), *(p for p in SETTINGS_FILES if head.exists(p)),
              *head.blob_shas(tasks)]
    return [p for p in before if not index.exists(p)]
