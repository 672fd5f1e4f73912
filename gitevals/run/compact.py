"""``gitevals notes compact``: notes holding whole runs rewritten as summaries.

Notes written before summaries hold every transcript (JSONL lines, or one indented
document). Each such run is kept as an artifact (``runstore.put``), unpacked again and
compared with the note's own text, byte for byte; only then is its line replaced by
its summary. A line that is not a valid run, or whose text is not the canonical one
gitevals writes (so that it would not come back byte for byte), stays as it is:
compacting never loses anything. One notes commit holds every rewritten note; a
second run finds nothing to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitevals.run.artifact import Run, candidate, dumps, validate

if TYPE_CHECKING:
    from gitevals.git.repo import Repo


def compact(repo: Repo) -> str:
    """Compact every note under refs/notes/gitevals; the one line that says what happened."""
    from gitevals.git import notestree
    from gitevals.git.repo import NOTES_REF
    from gitevals.run.runstore import place

    tip = repo.ref_target(NOTES_REF)
    if tip is None:
        return f"no {NOTES_REF} here: nothing to compact"
    changes: dict[str, str] = {}
    runs = 0
    for commit, blob in sorted(notestree.listed(repo, tip).items()):
        text = notestree.blob_text(repo, blob)
        new, count = _compacted(repo, text)
        if count:
            changes[commit] = notestree.new_blob(repo, new)
            runs += count
    if not changes:
        return f"{NOTES_REF} holds summaries only: nothing to compact"
    notestree.write(repo, NOTES_REF, changes, [tip], "gitevals notes compact")
    return (f"compacted {runs} run(s) in the notes of {len(changes)} commit(s): the notes "
            f"hold their summaries, the runs are kept in {place(repo).label}")


def _compacted(repo: Repo, text: str) -> tuple[str, int]:
    """The note ``text`` with each whole run replaced by its summary, and how many were."""
    from gitevals.run.store import note_line

    if text.lstrip().startswith("{\n"):  # one indented document, as before JSONL
        run = candidate(text)
        summary = _summary(repo, run, text) if run is not None else None
        return (note_line(summary), 1) if summary is not None else (text, 0)
    out, count = [], 0
    for line in text.split("\n"):
        run = candidate(line) if line.strip() else None
        summary = _summary(repo, run, line + "\n", compact_line=True) if run else None
        out.append(note_line(summary).rstrip("\n") if summary is not None else line)
        count += summary is not None
    return "\n".join(out), count


def _summary(repo: Repo, run: Run, text: str, compact_line: bool = False) -> Run | None:
    """The summary of ``run`` once its artifact is kept and comes back as ``text``
    exactly; None for a summary already, a run that does not validate, or one that
    would not come back byte for byte."""
    from gitevals.run import runstore
    from gitevals.run.archive import unpack
    from gitevals.run.store import note_line
    from gitevals.run.summary import is_summary, summarize

    if is_summary(run):
        return _repacked(run, text)
    if validate(run) is not None:
        return None
    if (note_line(run) if compact_line else dumps(run)) != text:
        return None  # not gitevals' own text: it would not come back byte for byte
    sha, size = runstore.put(repo, run)
    data = runstore.get(repo, sha)
    back = unpack(data, f"the artifact of run {run['run_id']}") if data else None
    if back is None or (note_line(back) if compact_line else dumps(back)) != text:
        return None
    return summarize(run, sha, size)


def _repacked(summary: Run, text: str) -> Run | None:
    """A summary written before packing (trials inline) to be written packed, when the
    packed line reads back as the same summary; None for one packed already."""
    from gitevals.run.store import note_line
    from gitevals.run.summary import unpack

    line = note_line(summary)
    if line == text or line.rstrip("\n") == text.rstrip("\n"):
        return None
    back = candidate(line)
    return summary if back is not None and unpack(back) == unpack(summary) else None
