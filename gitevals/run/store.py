"""Where runs are kept: ``<root>/results/`` of the working tree and the git note.

One rule (``artifact.preference``) picks "the run of a commit" for ``show``,
``diff`` and the note writer alike.

The note is JSONL: one compact run per line, so that git's own ``cat_sort_uniq`` merge
(and ``gitevals notes pull``) keeps every run two machines attached to one commit. The
older form, one indented document, is still read.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import ArtifactError
from gitevals.run.artifact import Run, candidate, checked, dumps, load, preference

if TYPE_CHECKING:
    from gitevals.git.tree import Repo

RESULTS_DIR = "results"
#: Runs a note keeps per commit: the preferred one plus the most recent others, so a
#: commit run by every CI job for months does not grow a note without bound.
NOTE_KEEP = 10


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


def note_line(run: Run) -> str:
    """``run`` as one line of a note: compact JSON, sorted keys, ending in a newline.

    ``json.dumps`` escapes a newline inside a string, so the run never spans lines.
    """
    return json.dumps(run, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def parse_note(text: str) -> list[Run]:
    """The runs a note holds, least preferred first; a line that is no run is skipped.

    A note written before notes were JSONL is one indented document: read whole first.
    Runs with the same ``run_id`` (merged twice from two sides) count once.
    """
    whole = candidate(text) if text.lstrip().startswith("{\n") else None
    runs = [whole] if whole is not None else [
        run for line in text.split("\n") if line.strip()
        if (run := candidate(line)) is not None]
    return ranked(runs)


def ranked(runs: list[Run]) -> list[Run]:
    """``runs`` once each by run id, least preferred first (``preference``; a tie, same
    finish second, by run id: notes carry no write time)."""
    unique = {str(run.get("run_id")): run for run in runs}
    return sorted(unique.values(), key=lambda r: (preference(r), str(r.get("run_id"))))


def bounded(runs: list[Run], keep: int = NOTE_KEEP) -> list[Run]:
    """The preferred run and the ``keep - 1`` most recently finished others (same order)."""
    if len(runs) <= keep:
        return runs
    best = runs[-1]
    recent = sorted(runs[:-1], key=lambda r: r["finished_at"])[len(runs) - keep:]
    return [r for r in runs if r is best or any(r is k for k in recent)]


def note_text(runs: list[Run]) -> str:
    """The note holding ``runs``: their lines sorted, as ``cat_sort_uniq`` leaves them."""
    return "".join(sorted(note_line(run) for run in bounded(runs)))


def note_runs(repo: Repo, commit: str, ref: str | None = None) -> list[Run]:
    """The runs in the note on ``commit`` (under ``ref``, default NOTES_REF), least
    preferred first."""
    from gitevals.git.tree import NOTES_REF

    text = repo.read_note(commit, ref or NOTES_REF)
    return parse_note(text) if text else []


def note(repo: Repo, run: Run) -> bool:
    """Add ``run`` to the note on its commit under refs/notes/gitevals (one line among
    the runs already there, bounded by ``NOTE_KEEP``). True when the note's preferred
    run (the one ``show`` and ``diff`` read) is now this one.
    """
    others = [r for r in note_runs(repo, run["commit"]) if r.get("run_id") != run["run_id"]]
    runs = ranked([*others, run])
    repo.write_note(run["commit"], note_text(runs))
    return runs[-1] is run


def merge_notes(ours: str | None, theirs: str | None) -> str | None:
    """Two notes on one commit (either may be missing) as one: the union of their runs
    by run id, bounded. Equal texts, or a side with no run, stay as they are."""
    if ours == theirs or not theirs:
        return ours
    if not ours:
        return theirs
    runs = ranked([*parse_note(ours), *parse_note(theirs)])
    return note_text(runs) if runs else ours


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
    runs = parse_note(text)
    if not runs:
        # Lines that are no run are skipped beside runs; a note of nothing else is
        # damaged, and says how (load's one line on its first line).
        first = next(line for line in text.split("\n") if line.strip()) if text.strip() else ""
        load(first.encode(), label)
        raise ArtifactError(f"{label}: holds no gitevals run")
    return Found(checked(runs[-1], label), "note", label)
