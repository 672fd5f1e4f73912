"""``gitevals task compile DIR|NAME``: the compiled definition of one task directory.

The task is read through a ``Tree`` (the working tree, or ``--rev REV`` from git objects)
and never executed. Findings go to stderr, one line each; errors exit 1 and print no
definition. The definition goes to stdout, as text or ``--json`` (terminal-safe both).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.commands._args import add_rev

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.settings import Settings

NAME = "task"
HELP = "task directories (<root>/tasks/<name>/): `task compile` prints one's definition"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    comp = sub.add_parser(
        "compile", help="print the compiled definition of a task: description, iteration "
        "budget, environment (what is realized, what is not), verifier argv, reward, timeouts",
        description="Validate one task directory and print its compiled definition "
        "(terminal-safe; --json parses back to the exact values).")
    comp.add_argument("task", metavar="DIR|NAME",
                      help="a task directory (a path), or the name of one under <root>/tasks/")
    comp.add_argument("--json", action="store_true", help="one JSON document")
    add_rev(comp, "read the task as committed at REV (branch, tag, SHA)")


def run(args: argparse.Namespace) -> int:
    from gitevals.report import task as report
    from gitevals.tasks.compile import compile_task
    from gitevals.tasks.load import load_task

    tree, path, settings = locate(args.task, args.rev)
    task, findings = load_task(tree, path, settings)
    for f in findings:
        print(f, file=sys.stderr)
    if task is None:
        print(f"gitevals: {path} does not compile: fix the findings above "
              "(`gitevals lint` reports them too)", file=sys.stderr)
        return 1
    doc = compile_task(task)
    sys.stdout.write(report.as_json(doc) if args.json else report.text(doc))
    return 0


def locate(given: str, rev: str | None) -> tuple[Tree, str, Settings]:
    """The tree, the tree path of the task directory ``given`` names, and the settings.

    A name (no ``/``) is ``<root>/tasks/<name>``; a path names a directory inside the
    repository, or, without ``--rev``, any directory on disk (a task directory someone
    sent, read as it lies)."""
    from gitevals.errors import UsageError
    from gitevals.git.trees import WorkingTree, open_tree
    from gitevals.settings import Settings, load_settings
    from gitevals.tasks.load import tasks_dir

    if given.rstrip("/").endswith("/task.toml") or given == "task.toml":
        given = os.path.dirname(given.rstrip("/")) or "."  # the file names its directory
    tree = open_tree(rev=rev)
    settings, found = load_settings(tree)
    if found:
        raise UsageError(f"{found[0]}; fix the settings first (`gitevals lint`)")
    if "/" not in given and given not in (".", "..") and not (rev is None
                                                              and os.path.isdir(given)):
        return tree, _checked(tree, f"{tasks_dir(settings.root)}/{given}", given), settings
    rel = os.path.relpath(os.path.abspath(given), tree.location)
    if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
        return tree, _checked(tree, Path(rel).as_posix(), given), settings
    if rev is not None:
        raise UsageError(f"{given}: outside the repository; with --rev, name a task "
                         "directory of the commit")
    where = Path(given).resolve()
    if where == where.parent:  # the filesystem's root has no name to load a task by
        raise UsageError(f"{given}: the filesystem's root, not a task directory; name a "
                         "task (a directory under <root>/tasks/) or a path to one")
    outside = WorkingTree(where.parent)
    return outside, _checked(outside, where.name, given), Settings()


def _checked(tree: Tree, path: str, given: str) -> str:
    """``path`` when it holds a task.toml, else a usage error saying what it is."""
    from gitevals.errors import UsageError
    from gitevals.tasks.load import TASK_TOML, skipped_note

    if tree.exists(f"{path}/{TASK_TOML}"):
        return path
    if path and path != "." and tree.exists(path):
        raise UsageError(f"{given}: {skipped_note(tree, path)}; name a directory that holds "
                         "task.toml")
    raise UsageError(f"{given}: no task directory at {path} in the {tree.label}; name a "
                     "task (a directory under <root>/tasks/) or a path to one")
