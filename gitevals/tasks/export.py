"""``gitevals task export NAME --rev REV DIR``: a task directory written back as Harbor reads it.

A task in gitevals *is* a Harbor task directory, so the export is its files as committed
at REV, byte for byte (a regular file keeps its executable bit; a link that stays inside
the task stays a link): ``task compile DIR`` then gives the definition compiled from the
repository, but for where it lies. What Harbor would not read the same way is said, one
line each (``harbor_notes``, pure): gitevals' own keys (``[verifier] command``,
``max_iterations``, ``reward_format``, ``pass_threshold``), which Harbor ignores.

The directory is written under a temporary name beside ``DIR`` and renamed into place
at the end: an export that fails leaves nothing behind, and an existing non-empty
``DIR`` is never written into.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import UsageError

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.tasks.definition import Task

#: What Harbor does instead of each gitevals-only key.
_HARBOR_IGNORES = (
    ("[verifier] command", "runs tests/test.sh"),
    ("max_iterations", "gives the agent one attempt"),
    ("reward_format", "reads whichever of reward.txt and reward.json the verifier wrote"),
    ("pass_threshold", "reports the reward itself"),
)


def harbor_notes(task: Task, written: set[str]) -> list[str]:
    """One line per key of ``task`` that Harbor reads differently; ``written`` names the
    keys task.toml sets (``max_iterations``, ``[verifier] command``, ...)."""
    return [f"task {task.name}: Harbor ignores {key} (it {instead}); the export keeps it "
            "for gitevals" for key, instead in _HARBOR_IGNORES if key in written]


def written_keys(task: Task) -> set[str]:
    """The gitevals-only keys ``task``'s task.toml sets."""
    out = set()
    if not task.verifier.default:
        out.add("[verifier] command")
    if not task.verifier.reward_default:
        out.add("reward_format")
    if task.max_iterations != 1:
        out.add("max_iterations")
    if task.pass_threshold != 1.0:
        out.add("pass_threshold")
    return out


def export(tree: Tree, task: Task, dest: Path) -> int:
    """Write ``task``'s files (as ``tree`` holds them) to the new directory ``dest``;
    the number of files written. A usage error when ``dest`` is not free."""
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise UsageError(f"{dest}: exists and is not an empty directory; name a new "
                         "directory (an export never writes into one)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        count = _write(tree, task, tmp)
        if dest.exists():
            dest.rmdir()  # empty, as checked
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return count


def _write(tree: Tree, task: Task, top: Path) -> int:
    """Regular files first, then the links that stay inside the task."""
    entries = tree.entries(task.path + "/")
    count = 0
    for e in sorted(entries, key=lambda e: e.is_link):
        rel = e.path[len(task.path) + 1:]
        target = top / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        (data,) = tree.read_blobs([e.sha])
        if e.is_link:
            link = data.decode("utf-8", "surrogateescape")
            inside = posixpath.normpath(posixpath.join(posixpath.dirname(rel), link))
            if link.startswith("/") or inside == ".." or inside.startswith("../"):
                continue  # lint refuses it (GE910): a run never copies it either
            os.symlink(link, target)
        else:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if e.executable else 0o644)
            with open(fd, "wb") as f:
                f.write(data)
        count += 1
    return count
