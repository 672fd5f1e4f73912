"""``gitevals notes pull|push [REMOTE]``: share the runs kept in git notes.

Many machines (CI jobs, colleagues) attach runs to the same commits. Plain
``git push refs/notes/gitevals`` then collides: the second push is refused as
non-fast-forward. ``pull`` fetches the remote's notes into a side ref,
``refs/notes/gitevals-remote/<remote>``, and merges them into ``refs/notes/gitevals``
with a merge commit whose tree holds, per commit, the union of both notes' runs
(``store.merge_notes``). ``push`` pulls first, so its push is a fast-forward, and
retries when another machine pushed in between.

The merge is done here, not by ``git notes merge -s cat_sort_uniq``: that strategy
sorts the *lines* of a note, which mangles a note written before notes were JSONL
(one indented document), and it cannot bound the runs a note keeps.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.git.repo import Repo

NAME = "notes"
HELP = "share runs kept in git notes: pull (fetch and merge) or push a remote's notes"

#: Pushes refused because another machine pushed first, retried after a new pull.
PUSH_ATTEMPTS = 4
_REMOTE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (
        ("pull", "fetch the remote's refs/notes/gitevals and merge its runs into yours"),
        ("push", "pull, then push refs/notes/gitevals and the run artifacts (retried when "
                 "another push won)"),
    ):
        p = sub.add_parser(action, help=text, description=text)
        p.add_argument("remote", nargs="?", default="origin", metavar="REMOTE",
                       help="a remote of this repository (default origin)")
    text = ("rewrite notes holding whole runs as summaries, the runs kept as artifacts "
            "(docs/storage.md); run it again: it changes nothing")
    sub.add_parser("compact", help=text, description=text)


def run(args: argparse.Namespace) -> int:
    from gitevals.errors import UsageError
    from gitevals.git.repo import require_repo

    if args.action == "compact":
        from gitevals.run.compact import compact

        print(compact(require_repo()))
        return 0
    if not _REMOTE.fullmatch(args.remote):
        raise UsageError(f"{args.remote!r} is not a remote name: name one of "
                         "`git remote` (default origin)")
    repo = require_repo()
    print(pull(repo, args.remote) if args.action == "pull" else push(repo, args.remote))
    return 0


def fetch(repo: Repo, remote: str) -> bool:
    """Fetch ``remote``'s notes into ``side_ref``; False when it has none."""
    from gitevals.errors import GitError
    from gitevals.git.repo import NOTES_REF, side_ref

    code, err = repo.run_git("fetch", "--quiet", "--no-write-fetch-head", remote,
                             f"+{NOTES_REF}:{side_ref(remote)}")
    if code == 0:
        return True
    if "couldn't find remote ref" in err:
        return False
    raise GitError(f"cannot fetch the notes of {remote}: {_last(err)}")


def merge(repo: Repo, theirs_ref: str) -> int:
    """Merge the notes under ``theirs_ref`` into refs/notes/gitevals; how many commits'
    notes changed (a fast-forward counts the commits whose note it brought).

    Notes are compared by blob id (``notestree.changed``, subtree by subtree): a
    fast-forward reads no note, and a merge reads only the notes the two sides hold
    differently, so its memory follows what changed, not the length of the history.
    """
    from gitevals.git import notestree
    from gitevals.git.repo import NOTES_REF

    theirs, ours = repo.ref_target(theirs_ref), repo.ref_target(NOTES_REF)
    if theirs is not None:
        notestree.require_commit(repo, theirs)  # before any walk of its history
    if theirs is None or (ours is not None and repo.contains(ours, theirs)):
        return 0
    differ = notestree.changed(repo, ours, theirs)
    if ours is None or repo.contains(theirs, ours):
        repo.set_ref(NOTES_REF, theirs, ours)
        return sum(b is not None for _, b in differ.values())
    changes = _merged(repo, differ)
    notestree.write(repo, NOTES_REF, changes, [ours, theirs],
                    f"gitevals notes: merge {theirs_ref}")
    return len(changes)


def _merged(repo: Repo, differ: dict[str, tuple[str | None, str | None]]) -> dict[str, str]:
    """``commit -> new note blob`` for the notes the two sides hold differently: theirs
    alone is taken as is (not read), both are read and merged (``store.merge_notes``);
    ours alone stays (a note missing on one side is never a deletion)."""
    from gitevals.git import notestree
    from gitevals.run.store import merge_notes

    changes: dict[str, str] = {}
    for commit, (mine, other) in sorted(differ.items()):
        if other is None:
            continue
        if mine is None:
            changes[commit] = other
            continue
        ours_text = notestree.blob_text(repo, mine)
        text = merge_notes(ours_text, notestree.blob_text(repo, other))
        if text is not None and text != ours_text:
            changes[commit] = notestree.new_blob(repo, text)
    return changes


def pulled(repo: Repo, remote: str) -> int | None:
    """Fetch and merge ``remote``'s notes: how many commits' notes changed, None when
    the remote has no notes. Notes that are no notes tree (a ref at a blob, a submodule
    in place of a note) are refused before anything is merged, in words that name the
    remote, its ref and what to do: nothing is wrong with the local repository."""
    from gitevals.errors import GitError
    from gitevals.git.notestree import Malformed
    from gitevals.git.repo import NOTES_REF, side_ref

    if not fetch(repo, remote):
        return None
    theirs = side_ref(remote)
    try:
        return merge(repo, theirs)
    except Malformed as exc:
        if exc.tip != repo.ref_target(theirs):
            raise
        raise GitError(f"the notes {remote} holds are malformed: its {NOTES_REF} (fetched "
                       f"as {theirs}, at {exc.tip[:12]}) {_said(exc.what)}; nothing was "
                       f"merged and your notes are as they were. Whoever can push to "
                       f"{remote} should put a notes commit back there, or delete the ref "
                       f"(`git push {remote} :{NOTES_REF}`) and `gitevals notes push` "
                       "again") from None


def _said(what: str) -> str:
    return what.replace("the notes ref points", "points", 1)


def pull(repo: Repo, remote: str) -> str:
    """Fetch and merge ``remote``'s notes; the one line that says what happened."""
    from gitevals.git.repo import NOTES_REF

    changed = pulled(repo, remote)
    if changed is None:
        return (f"{remote} has no {NOTES_REF} yet: nothing to pull (`gitevals notes push` "
                "shares yours)")
    if not changed:
        return f"{NOTES_REF} is up to date with {remote}"
    return f"merged the notes of {remote} into {NOTES_REF}: {changed} commit(s) gained runs"


def push(repo: Repo, remote: str) -> str:
    """Pull, then push refs/notes/gitevals; a push refused because another machine
    pushed first is retried after a new pull, ``PUSH_ATTEMPTS`` times in all."""
    from gitevals.errors import GitError
    from gitevals.git.repo import NOTES_REF
    from gitevals.run.runstore import RUNS_REF

    merged = 0
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        merged += pulled(repo, remote) or 0
        if repo.ref_target(NOTES_REF) is None:
            return f"no {NOTES_REF} here: nothing to push (`gitevals run` writes notes)"
        code, err = repo.run_git("push", "--quiet", remote, f"{NOTES_REF}:{NOTES_REF}",
                                 f"{RUNS_REF}*:{RUNS_REF}*")
        if code == 0:
            return f"pushed {NOTES_REF} to {remote}" + (
                f" (after merging theirs: {merged} commit(s) gained runs)" if merged else "")
        if not _rejected(err) or attempt == PUSH_ATTEMPTS:
            break
        print(f"gitevals: {remote} moved its notes meanwhile: pulling again "
              f"({attempt}/{PUSH_ATTEMPTS})", file=sys.stderr)
    raise GitError(f"cannot push {NOTES_REF} to {remote}: {_last(err)}")


def _rejected(err: str) -> bool:
    return any(s in err for s in ("non-fast-forward", "fetch first", "[rejected]",
                                  "cannot lock ref", "failed to update ref"))


def _last(err: str) -> str:
    """git's first ``fatal:``/``error:`` line (its reason), else its last line."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith(("fatal: ", "error: "))] or lines[-1:]
    return said[0].split(": ", 1)[-1] if said else "git failed"
