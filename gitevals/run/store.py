"""Where runs are kept: ``<root>/results/`` of the working tree and the git note.

One rule (``artifact.preference``) picks "the run of a commit" for ``show``,
``diff`` and the note writer alike.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.run.artifact import Run, candidate, checked, dumps, load, preference

if TYPE_CHECKING:
    from gitevals.git.tree import Repo

RESULTS_DIR = "results"


@dataclass(frozen=True)
class Found:
    """The run of a commit and where it came from (``results`` or ``note``)."""

    run: Run
    source: str
    label: str  # for messages: the file, or the note


def results_dir(work_root: Path, root: str) -> Path:
    return work_root / root / RESULTS_DIR


def save(work_root: Path, run: Run, text: str | None = None) -> Path:
    """Write ``run`` (whose ``dumps`` is ``text``, when already made) to
    ``<root>/results/<run_id>.json`` of the working tree, atomically."""
    from gitevals.files import write_atomic

    directory = results_dir(work_root, run["root"])
    real, top = directory.resolve(), work_root.resolve()
    if real != top and top not in real.parents:
        # A committed symlink must not send the run (or anything) outside the repository.
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    path = directory / f"{run['run_id']}.json"
    write_atomic(path, text if text is not None else dumps(run))
    return path


def note(repo: Repo, run: Run, text: str | None = None) -> bool:
    """Attach ``run`` to its commit under refs/notes/gitevals unless the note there holds
    a run ``preference`` ranks higher (a complete run over a partial one). True when
    written."""
    old = repo.read_note(run["commit"])
    previous = candidate(old) if old else None
    if previous is not None and preference(previous) > preference(run, 1):
        return False
    repo.write_note(run["commit"], text if text is not None else dumps(run))
    return True


def local_runs(work_root: Path, root: str, commit: str) -> list[tuple[Run, Path]]:
    """Runs in ``<root>/results/`` of the working tree pinned to ``commit``, least
    preferred first.

    Only files whose name carries ``commit[:12]`` are opened (run ids embed it), so a
    results dir with thousands of runs stays cheap. Unreadable files are skipped.
    """
    found = []
    for path in results_dir(work_root, root).glob(f"*-{commit[:12]}-*.json"):
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                continue  # a FIFO or a link named like a run: never opened (it could hang)
            run = candidate(path.read_bytes())
            mtime = path.stat().st_mtime_ns
        except OSError:
            continue
        if run is not None and run["commit"] == commit:
            found.append((preference(run, mtime), path.name, run, path))
    return [(f[2], f[3]) for f in sorted(found, key=lambda f: f[:2])]


def run_of_commit(repo: Repo | None, work_root: Path | None, root: str,
                  commit: str) -> Found | None:
    """The run to show for ``commit``: the preferred run in results/ of the working tree,
    else its git note (when ``repo`` is given); validated, or ``ArtifactError``."""
    if work_root is not None:
        local = local_runs(work_root, root, commit)
        if local:
            run, path = local[-1]
            label = os.path.relpath(path) if path.is_absolute() else str(path)
            return Found(checked(run, label), "results", label)
    if repo is None:
        return None
    from gitevals.git.tree import NOTES_REF

    text = repo.read_note(commit)
    if not text:
        return None
    label = f"git note {NOTES_REF} on {commit[:12]}"
    return Found(load(text.encode(), label), "note", label)
