"""``gitevals task compile DIR|NAME``: the compiled definition of one task directory.

The task is read through a ``Tree`` (the working tree, or ``--rev REV`` from git objects)
and never executed. Findings go to stderr, one line each; errors exit 1 and print no
definition. The definition goes to stdout, as text or ``--json`` (terminal-safe both).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.commands._args import add_rev

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.settings import Settings
    from gitevals.tasks.definition import Task

NAME = "task"
HELP = ("task directories (<root>/tasks/<name>/): `task compile` prints one's definition, "
        "`task check` runs its validity controls, `task export` writes one back")


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
    check = sub.add_parser(
        "check", help="run a task's validity controls in the sandbox: its verifier must fail "
        "the untouched workspace and pass after solution/solve.sh",
        description="Run the do-nothing control (the verifier on the untouched workspace "
        "must not satisfy the task) and the oracle control (after solution/solve.sh it must), "
        "both in the bubblewrap sandbox. Exit 0: valid; 1: broken (a control failed) or the "
        "task does not load; 2: usage, no sandbox.")
    check.add_argument("task", metavar="DIR|NAME",
                       help="a task directory (a path), or the name of one under <root>/tasks/")
    check.add_argument("--json", action="store_true", help="one JSON document")
    add_rev(check, "check the task as committed at REV (branch, tag, SHA)")
    exp = sub.add_parser(
        "export", help="write a task as committed at REV to a new directory, as Harbor "
        "reads it (task compile DIR then gives the same definition)",
        description="Write every file of a task, as committed at REV, byte for byte to the "
        "new directory DIR (an existing non-empty DIR is refused); say which gitevals-only "
        "keys Harbor ignores.")
    exp.add_argument("task", metavar="NAME", help="the name of a task under <root>/tasks/")
    add_rev(exp, "the commit to export from (default HEAD)", default="HEAD")
    exp.add_argument("dest", metavar="DIR", help="the directory to write (new, or empty)")


def run(args: argparse.Namespace) -> int:
    from gitevals.report import task as report
    from gitevals.tasks.compile import compile_task
    from gitevals.tasks.load import load_task

    bwrap = _bwrap() if args.action == "check" else None
    tree, path, settings = locate(args.task, args.rev)
    task, findings = load_task(tree, path, settings)
    for f in findings:
        print(f, file=sys.stderr)
    if task is None:
        print(f"gitevals: {path} does not compile: fix the findings above "
              "(`gitevals lint` reports them too)", file=sys.stderr)
        return 1
    if bwrap is not None:
        return _check(tree, task, bwrap, args.json)
    if args.action == "export":
        return _export(tree, task, Path(args.dest))
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


def _export(tree: Tree, task: Task, dest: Path) -> int:
    """Write ``task`` to ``dest``; notes on what Harbor reads otherwise go to stderr."""
    from gitevals.tasks.export import export, harbor_notes, written_keys
    from gitevals.text import visible

    count = export(tree, task, dest)
    for line in harbor_notes(task, written_keys(task)):
        print(f"gitevals: {visible(line)}", file=sys.stderr)
    print(f"exported task {visible(task.name)} ({count} file{'s' * (count != 1)}) from "
          f"{tree.label} to {visible(str(dest))}")
    return 0


def _bwrap() -> str:
    """The bubblewrap the controls run in; a usage error when there is none that works."""
    from gitevals.api import working_bwrap

    return working_bwrap("the controls of `task check`", escape=False)


def _check(tree: Tree, task: Task, bwrap: str, as_json: bool) -> int:
    """Run ``task``'s controls on its files as ``tree`` holds them; 0 valid, 1 broken."""
    import json

    from gitevals.tasks.controls import run_controls
    from gitevals.tasks.image import ImageError, for_task
    from gitevals.text import visible

    with _on_disk(tree, task) as source:
        try:
            realized = for_task(task, source)  # its image's system, where an engine is usable
        except ImageError as exc:
            print(f"gitevals: task {visible(task.name)}: its image could not be realized: "
                  f"{visible(str(exc))}", file=sys.stderr)
            return 1
        controls = run_controls(task, source, bwrap, realized.root if realized else None)
    if as_json:
        doc = {"task": task.name, "path": task.path, **controls.as_dict()}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        for c in (controls.do_nothing, controls.oracle):
            if c is not None:
                state = "holds" if c.holds else "FAILED"
                label = "do-nothing" if c.name == "do_nothing" else "oracle"
                print(f"{label} control: {state}: {visible(c.why)}")
        if controls.oracle is None:
            print("oracle control: not run: the task has no solution/solve.sh (lint GE913)")
        verdict = "valid" if controls.valid else "broken (a run with --task-controls marks it " \
            "broken, never pass or fail)"
        print(f"task {visible(task.name)}: {verdict}")
    return 0 if controls.valid else 1


@contextlib.contextmanager
def _on_disk(tree: Tree, task: Task) -> Iterator[Path]:
    """The task's directory on disk: the working tree's own, or the revision's files
    written to a temporary directory (removed after)."""
    from gitevals.git.trees import RevisionTree
    from gitevals.run.workdir import workdir

    if not isinstance(tree, RevisionTree):
        yield Path(tree.location) / task.path
        return
    with workdir("check") as tmp:
        tree.materialize(tmp)
        yield tmp / task.path
