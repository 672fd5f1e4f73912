"""Lint the task directories of a tree (``<root>/tasks/<name>/``), cached by content.

The rules are the loader's (``gitevals.tasks.load``): lint reports exactly what a run
would refuse. A task's findings are cached under a key made of the blob SHA of every
file of the task directory and the target of every link in it, so an unchanged task
costs a listing, not a parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard

from gitevals.findings import Finding, Severity

#: A finding as the cache stores it: ``[path, line, col, code, message, severity]``.
_Row = tuple[str, int, int, str, str, Severity]

if TYPE_CHECKING:
    from gitevals.git.tree import Tree
    from gitevals.jsontypes import JSON
    from gitevals.lint.cache import LintCache
    from gitevals.settings import Settings


def lint_tasks(tree: Tree, settings: Settings, store: LintCache,
               named: Sequence[str] | None = None) -> tuple[list[Finding], int, list[str]]:
    """Findings of the task directories (all, or those ``named`` paths fall in), how many
    were checked, and the paths of every task directory looked at (their files are the
    task rules' business, not the eval tree's GE801/GE104)."""
    from gitevals.tasks.load import task_dirs

    wanted = _named_tasks(settings.root, named)
    if wanted is not None and not wanted:
        return [], 0, []
    dirs = list(task_dirs(tree, settings.root).values()) if wanted is None \
        else _existing(tree, wanted)
    found: list[Finding] = []
    for path in dirs:
        found.extend(_lint_one(tree, path, settings, store))
    return found, len(dirs), dirs


def _named_tasks(root: str, named: Sequence[str] | None) -> list[str] | None:
    """Task directory paths the named paths fall in; None: every task (a path at or
    above ``<root>/tasks``, or no paths at all)."""
    from gitevals.tasks.load import tasks_dir

    if named is None:
        return None
    base = tasks_dir(root)
    out: set[str] = set()
    for p in (p.strip("/") for p in named):
        if not p or p == base or base.startswith(p + "/"):
            return None
        if p.startswith(base + "/"):
            out.add(base + "/" + p[len(base) + 1:].split("/", 1)[0])
    return sorted(out)


def _existing(tree: Tree, paths: list[str]) -> list[str]:
    from gitevals.tasks.load import TASK_TOML

    return [p for p in paths if tree.exists(f"{p}/{TASK_TOML}")]


def inside(path: str, task_paths: Sequence[str]) -> bool:
    """True when ``path`` lies in one of the task directories."""
    return any(path.startswith(t + "/") for t in task_paths)


def _lint_one(tree: Tree, path: str, settings: Settings, store: LintCache) -> list[Finding]:
    from gitevals.lint.cache import key
    from gitevals.tasks.load import load_task

    listed = tree.blob_shas(path + "/")
    links = [f"{p}:{why}:{tree.blob_sha(p) if why == 'a symlink' else ''}"
             for p, why in tree.refused(path + "/").items()]
    k = key(path, str(settings.max_instruction_chars),
            *(f"{p}:{sha}" for p, sha in listed.items()), "\0", *links)
    cached = store.get("task", k)
    if _valid(cached):
        return [Finding(*row) for row in cached]
    _, found = load_task(tree, path, settings)
    store.put("task", k, [[f.path, f.line, f.col, f.code, f.message, f.severity]
                          for f in found])
    return found


def _valid(rows: JSON) -> TypeGuard[list[_Row]]:
    return isinstance(rows, list) and all(
        isinstance(r, list) and len(r) == 6 and r[5] in ("error", "warning") for r in rows)
