"""The run artifact on disk and in git: ids, atomic writes, notes, lookup by commit.

Format and keys: /tmp contract ``gitevals-run/1`` (see docs/run.md). Artifacts are
written with sorted keys so the same run is the same bytes.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

FORMAT = "gitevals-run/1"
RESULTS_DIR = "results"


def new_run_id(commit: str, now: float | None = None) -> str:
    """``<UTC yyyymmddThhmmssZ>-<commit[:12]>-<6 hex>``: sortable by time, unique at once."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"{stamp}-{commit[:12]}-{secrets.token_hex(3)}"


def utc_stamp(now: float | None = None) -> str:
    """``2026-11-29T22:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def dumps(artifact: dict[str, Any]) -> str:
    """The canonical text of an artifact (sorted keys, one space indent, trailing newline)."""
    return json.dumps(artifact, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def results_dir(work_root: Path, root: str) -> Path:
    return work_root / root / RESULTS_DIR


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same dir + ``os.replace``.

    A reader sees the old file or the whole new one, never half; two writers to
    different paths never touch each other's temp files.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def save(work_root: Path, artifact: dict[str, Any], text: str | None = None) -> Path:
    """Write ``artifact`` (whose ``dumps`` is ``text``, when already made) to
    ``<root>/results/<run_id>.json`` of the working tree."""
    path = results_dir(work_root, artifact["root"]) / f"{artifact['run_id']}.json"
    write_atomic(path, text if text is not None else dumps(artifact))
    return path


def note(repo: Any, artifact: dict[str, Any], text: str | None = None) -> bool:
    """Attach the artifact to its commit under refs/notes/gitevals, replacing an older
    note unless that one is a complete run and this one is not. True when written."""
    old = repo.read_note(artifact["commit"])
    previous = _parse(old) if old else None
    if previous is not None and complete(previous) and not complete(artifact):
        return False
    repo.write_note(artifact["commit"], text if text is not None else dumps(artifact))
    return True


def _parse(text: str | bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("format") == FORMAT:
        return data
    return None


def complete(artifact: dict[str, Any]) -> bool:
    """A run of every case of its commit (no CASE filter) that was not interrupted."""
    options = artifact.get("options") or {}
    return not options.get("cases") and not artifact.get("interrupted")


def _rank(artifact: dict[str, Any], written: int) -> tuple[bool, str, int]:
    # Complete runs first: `gitevals run tone` after a full run must not hide the
    # full run from `show` and `diff`. Then the run that finished last (a long run
    # started earlier can finish after a short one); finished_at has whole seconds,
    # so a tie goes to the later-written file, never to the run id's random suffix.
    return complete(artifact), str(artifact.get("finished_at", "")), written


def artifacts_for_commit(work_root: Path, root: str, commit: str) -> list[dict[str, Any]]:
    """Artifacts in ``<root>/results/`` of the working tree pinned to ``commit``,
    least preferred first (the last is what ``newest_for_commit`` returns).

    Only files whose name carries ``commit[:12]`` are opened (run ids embed it), so a
    results dir with thousands of runs stays cheap. Unreadable files are skipped.
    """
    found = []
    directory = results_dir(work_root, root)
    for path in directory.glob(f"*-{commit[:12]}-*.json"):
        try:
            data = _parse(path.read_bytes())
            mtime = path.stat().st_mtime_ns
        except OSError:
            continue
        if data is not None and data.get("commit") == commit:
            found.append((_rank(data, mtime), path.name, data))
    return [f[2] for f in sorted(found, key=lambda f: f[:2])]


def newest_for_commit(repo_or_tree_root: Any, root: str, commit: str) -> dict[str, Any] | None:
    """The run to show for ``commit``: the newest complete run in results/ of the working
    tree (else the newest partial one), else its git note.

    ``repo_or_tree_root`` is a ``git.tree.Repo`` (working tree and notes are both
    read) or a path to a working tree (results/ only).
    """
    repo: Any = None
    work: Path | None = None
    if isinstance(repo_or_tree_root, (str, os.PathLike)):
        work = Path(repo_or_tree_root)
    else:
        repo = repo_or_tree_root
        work = repo.work_root
    if work is not None:
        local = artifacts_for_commit(work, root, commit)
        if local:
            return local[-1]
    if repo is None:
        return None
    text = repo.read_note(commit)
    return _parse(text) if text else None
