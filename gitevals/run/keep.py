"""What a finished run leaves behind: its file under ``<root>/results/`` (a draft's under
``results/drafts/``) and the git note on its commit.

A run's conversations have already been paid for when these are written, so nothing
here loses it: text UTF-8 cannot hold is escaped, a results directory that cannot be
written gives way to a temp file, a note that loses a race is tried again. What happened
is said through ``say`` (``gitevals run`` prints it on stderr), never printed here.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import GitError
from gitevals.files import write_atomic
from gitevals.run.draft import DRAFTS_DIR
from gitevals.run.store import note, results_dir, run_results, save

if TYPE_CHECKING:
    from gitevals.git.repo import Repo
    from gitevals.run.artifact import Run

#: Receives each line to tell the user (the command prints it on stderr).
Say = Callable[[str], None]
#: Tries at the note when another run keeps moving the notes ref.
NOTE_ATTEMPTS = 5


def writable(text: str, run: Run, say: Say) -> str:
    """``text``, or when it holds what UTF-8 cannot write (a lone surrogate), the same
    run with every non-ASCII character as a JSON escape: a finished run is kept whole
    rather than lost to an encoding error after its conversations ran."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        say("gitevals: warning: the run holds text that is not valid UTF-8; it is kept "
            "with JSON escapes (\\u...)")
        return json.dumps(run, sort_keys=True, indent=1, ensure_ascii=True) + "\n"
    return text


def keep(work_root: Path, run: Run, text: str, draft: bool, say: Say) -> Path:
    """Write the run to its results directory (``store.save``; a draft's to its
    ``drafts/``, where no command looks for a commit's run); when that cannot be written
    (read-only, full, a symlink or FIFO in its place), to a temp file instead, and say
    so: a finished run is never thrown away."""
    try:
        return save_draft(work_root, run, text) if draft else save(work_root, run, text)
    except OSError as exc:
        why = exc.strerror or str(exc)
        fd, name = tempfile.mkstemp(prefix=f"gitevals-{run['run_id']}-", suffix=".json")
        os.close(fd)
        fallback = Path(name)
        write_atomic(fallback, text)
        say(f"gitevals: warning: cannot write {run_results(run)}/ ({why}); the run "
            f"is in {fallback} instead")
        return fallback


def save_draft(work_root: Path, run: Run, text: str) -> Path:
    """``<results>/drafts/<run_id>.json``, refused (``OSError``) when a committed symlink
    would send it outside the repository."""
    directory = results_dir(work_root, run_results(run)) / DRAFTS_DIR
    real, top = directory.resolve(), work_root.resolve()
    if top not in real.parents:
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    path = directory / f"{run['run_id']}.json"
    write_atomic(path, text)
    return path


def attach(repo: Repo, run: Run, say: Say) -> bool:
    """Attach the run to its commit as its git note; True when the note now holds it.
    A run the note does not count (a partial run beside a complete one) is said."""
    for attempt in range(NOTE_ATTEMPTS):
        try:
            if not note(repo, run):
                say("gitevals: this partial run is kept in results/ and the git note; "
                    "`show` and `diff` still read the complete run of this commit")
            return True
        except GitError as exc:  # another run moved the notes ref: try again
            if attempt == NOTE_ATTEMPTS - 1:
                say(f"gitevals: warning: {exc}; the artifact is in results/")
            time.sleep(0.05 * (attempt + 1))
    return False
