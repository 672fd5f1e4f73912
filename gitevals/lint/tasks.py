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
    from gitevals.git.trees import Tree
    from gitevals.jsontypes import JSON
    from gitevals.lint.cache import LintCache
    from gitevals.settings import Settings


def lint_tasks(tree: Tree, settings: Settings, store: LintCache,
               named: Sequence[str] | None = None
               ) -> tuple[list[Finding], int, list[str], list[str]]:
    """Findings of the task directories (all, or those ``named`` paths fall in), how many
    were checked, the paths of every task directory looked at (their files are the
    task rules' business, not the eval tree's GE801/GE104), and the loader's notes on
    the directories under tasks/ that are no task (a Terminal-Bench 1 ``task.yaml``)."""
    wanted = _named_tasks(settings.root, named)
    if wanted is not None and not wanted:
        return [], 0, [], []  # the commit hook on files outside tasks/: nothing to load
    from gitevals.tasks.load import children, skipped_note, tasks_dir

    # One listing of every task's files (a working tree hashes each file once), grouped.
    base = tasks_dir(settings.root) if wanted is None else None
    listed = tree.blob_shas(base + "/") if base else {}
    refused = tree.refused(base + "/") if base else {}
    if wanted is None:
        wanted = list(children(tasks_dir(settings.root), [*listed, *refused]).values())
    dirs = _existing(tree, wanted)
    tasks = set(dirs)
    notes = [skipped_note(tree, p) for p in wanted
             if p not in tasks and (base or tree.exists(p))]
    files, links = _grouped(base or "", listed), _grouped(base or "", refused)
    found: list[Finding] = []
    for path in dirs:
        mine = files.get(path, {}) if base else tree.blob_shas(path + "/")
        odd = links.get(path, {}) if base else tree.refused(path + "/")
        found.extend(_lint_one(tree, path, settings, store, mine, odd))
    return found, len(dirs), dirs, notes


def _grouped(base: str, listing: dict[str, str]) -> dict[str, dict[str, str]]:
    """``<base>/<name>/...`` entries by their task directory ``<base>/<name>``."""
    out: dict[str, dict[str, str]] = {}
    top = base + "/"
    for p, v in listing.items():
        name, sep, _ = p[len(top):].partition("/")
        if p.startswith(top) and sep:
            out.setdefault(top + name, {})[p] = v
    return out


def _named_tasks(root: str, named: Sequence[str] | None) -> list[str] | None:
    """Task directory paths the named paths fall in; None: every task (a path at or
    above ``<root>/tasks``, or no paths at all)."""
    from gitevals.tasks import tasks_dir

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


def _lint_one(tree: Tree, path: str, settings: Settings, store: LintCache,
              listed: dict[str, str], refused: dict[str, str]) -> list[Finding]:
    """The findings of one task: from the cache when its files are as before."""
    from gitevals.lint.cache import key
    from gitevals.tasks.load import load_task

    links = [f"{p}:{why}:{tree.blob_sha(p) if why == 'a symlink' else ''}"
             for p, why in refused.items()]
    k = key(path, str(settings.max_instruction_chars),
            *(f"{p}:{sha}" for p, sha in listed.items()), "\0", *links)
    cached = store.get("task", k)
    if _valid(cached):
        return [Finding(*row) for row in cached]
    _, found = load_task(tree, path, settings, hashed=False)  # no huge file is read
    store.put("task", k, [[f.path, f.line, f.col, f.code, f.message, f.severity]
                          for f in found])
    return found


def _valid(rows: JSON) -> TypeGuard[list[_Row]]:
    return isinstance(rows, list) and all(
        isinstance(r, list) and len(r) == 6 and r[5] in ("error", "warning") for r in rows)
