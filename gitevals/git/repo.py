"""``Repo``: a git repository with a work tree, answering in SHAs, paths and text.

Commands ask the repository for notes, status, refs and hooks through a ``Repo``;
``open_repo`` and ``require_repo`` find it. Blobs are read through ``blobs``; the trees
of a repository (``trees``) are built on this module.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import GitError, RevisionError, UsageError
from gitevals.git.blobs import (
    LARGE,
    LINK_MODE,
    read_blobs_unverified,
    translated,
    unverified,
)

if TYPE_CHECKING:
    import pygit2

NOTES_REF = "refs/notes/gitevals"


def side_ref(remote: str) -> str:
    """Where ``gitevals notes pull`` keeps ``remote``'s notes as last fetched."""
    return f"refs/notes/gitevals-remote/{remote}"


def under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or below it; a ``prefix`` ending in "/" names a directory only."""
    top = prefix.strip("/")
    if not top:
        return True
    return path.startswith(top + "/") or (path == top and not prefix.endswith("/"))


def commit_of(raw: pygit2.Repository, rev: str) -> pygit2.Commit:
    """``rev`` (branch, tag incl. annotated, short SHA, ``HEAD~2``) peeled to a commit."""
    import pygit2

    try:
        return raw.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        if raw.head_is_unborn and rev.startswith("HEAD"):
            raise RevisionError(
                f"{rev} names no commit: this repository has no commits yet; commit first"
            ) from exc
        raise RevisionError(
            f"unknown revision {rev!r}: name a commit, branch or tag of this repository "
            f"(`git log --oneline` lists commits)"
        ) from exc


def signature(raw: pygit2.Repository) -> pygit2.Signature:
    import pygit2

    try:
        return raw.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("gitevals", "gitevals@localhost")


class Repo:
    """A git repository with a work tree, answering in SHAs, paths and text.

    ``raw`` is the pygit2 repository, for the trees of this module only; every method
    raises gitevals' own errors (``GitError``, ``RevisionError``), never pygit2's.
    """

    def __init__(self, raw: pygit2.Repository) -> None:
        self.raw = raw
        self._sizes: dict[str, int] = {}

    @property
    def work_root(self) -> Path:
        """The top of the work tree, symlinks resolved."""
        return Path(self.raw.workdir).resolve()

    @property
    def location(self) -> str:
        """The work dir as ``Tree.location`` gives it (absolute, symlinks kept)."""
        return os.path.abspath(self.raw.workdir)

    def resolve(self, rev: str) -> str:
        """The SHA of the commit ``rev`` names (annotated tags peeled); else RevisionError."""
        return str(commit_of(self.raw, rev).id)

    def peel_to_commit(self, sha: str) -> str | None:
        """The commit object ``sha`` (or a ref name) names, annotated tags peeled; else None.

        None when ``sha`` is not in this repository or names no commit (a tag on a tree
        or blob): there is then no revision to check.
        """
        try:
            return self.resolve(sha)
        except RevisionError:
            return None

    def read_note(self, commit: str, ref: str = NOTES_REF) -> str | None:
        """The note on ``commit`` under ``ref``, or None (at any fan-out: ``notestree``)."""
        from gitevals.git import notestree

        with translated(f"read the note on {commit[:12]} under {ref}"):
            blob = notestree.find(self, self.ref_target(ref), commit)
            return None if blob is None else notestree.blob_text(self, blob)

    def write_note(self, commit: str, text: str, ref: str = NOTES_REF) -> None:
        """Attach ``text`` to ``commit`` under ``ref``, replacing an older note there;
        one subtree of the fan-out is rewritten (``notestree``), and ``GitError`` when
        ``ref`` moved meanwhile (the caller retries).

        Only ``ref`` moves: other notes refs (``refs/notes/commits``...) are untouched.
        """
        from gitevals.git import notestree

        tip = self.ref_target(ref)
        with translated(f"write the note on {commit[:12]} under {ref}"):
            blob = notestree.new_blob(self, text)
        notestree.write(self, ref, {commit: blob}, [tip] if tip else [],
                        "Notes added by 'gitevals run'")

    def is_notes_commit(self, sha: str) -> bool:
        """Whether ``sha`` is a commit whose tree holds notes only: blobs named by the
        hex object name they annotate, possibly under 2-hex fan-out directories."""
        import pygit2

        with translated(f"read {sha[:12]}"):
            try:
                obj = self.raw[sha]
            except (KeyError, ValueError):
                return False
            return isinstance(obj, pygit2.Commit) and _holds_notes(obj.tree, "")

    def dirty_paths(self, ignore_prefix: str | None = None) -> list[str]:
        """Tracked files whose working or staged content differs from HEAD (untracked left out)."""
        import pygit2

        clean = pygit2.GIT_STATUS_CURRENT | pygit2.GIT_STATUS_IGNORED | pygit2.GIT_STATUS_WT_NEW
        with translated("read the status of the work tree"):
            status = self.raw.status()
        return sorted(path for path, flags in status.items() if flags & ~clean != 0
                      and not (ignore_prefix and under(path, ignore_prefix)))

    def diff_digest(self) -> str:
        """A hash of the uncommitted change to tracked files (HEAD tree vs working tree)."""
        if self.raw.head_is_unborn:
            return hashlib.sha256(b"").hexdigest()
        tree = commit_of(self.raw, "HEAD").tree
        with translated("diff HEAD against the work tree"):
            patch = tree.diff_to_workdir().patch or ""
        return hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest()

    def new_commits(self, tip: str, known: list[str]) -> list[str]:
        """Commits reachable from ``tip`` but from none of ``known`` (oldest first).

        ``known`` are SHAs or ref names the remote already has; unknown ones are skipped.
        """
        import pygit2

        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        with translated(f"walk the history of {tip[:12]}"):
            walker = self.raw.walk(tip, order)
            for sha in filter(None, map(self.peel_to_commit, known)):
                walker.hide(sha)
            return [str(c.id) for c in walker]

    def remote_refs(self, remote: str) -> list[str]:
        """Names of the remote-tracking refs of ``remote`` (``refs/remotes/<remote>/...``)."""
        prefix = f"refs/remotes/{remote}/"
        return sorted(n for n in self.raw.references if n.startswith(prefix))

    def hooks_dir(self) -> Path:
        """Where git looks for this repository's hooks.

        ``core.hooksPath`` wins (``~`` expanded; a relative one is relative to the top of
        the work tree, where git runs hooks); else ``hooks/`` of the common git dir, so a
        linked worktree shares its main repository's hooks, as git does.
        """
        with translated("read the configuration"):
            try:
                configured: str | None = self.raw.config["core.hooksPath"]
            except KeyError:
                configured = None
        if configured:
            path = Path(os.path.expanduser(configured))
            return path if path.is_absolute() else self.work_root / path
        git_dir = Path(self.raw.path)
        common = git_dir / "commondir"
        if common.is_file():
            git_dir = (git_dir / common.read_text().strip()).resolve()
        return git_dir / "hooks"

    def blob_sizes(self, shas: Sequence[str]) -> list[int]:
        """Sizes of blobs from their headers, each read once per ``Repo`` (lint sizes a
        blob before reading it, and reading it needs the size again)."""
        with translated("read blob sizes"):
            for sha in shas:
                if sha not in self._sizes:
                    self._sizes[sha] = self.raw.odb.read_header(sha)[1]
        return [self._sizes[sha] for sha in shas]

    def read_blobs(self, shas: Sequence[str]) -> list[bytes]:
        """Blobs by SHA, in order, unverified (see ``unverified``).

        Large ones go through ``read_blobs_unverified`` (threads, the pack reader);
        small ones (cases, graders) through libgit2 alone, cheaper than a thread each.
        """
        with translated("read blobs"):
            sizes = self.blob_sizes(shas)
            large = [sha for sha, size in zip(shas, sizes, strict=True) if size >= LARGE]
            read = dict(zip(large, read_blobs_unverified(self.raw, large), strict=True)
                        ) if large else {}
            with unverified():
                return [read[sha] if sha in read else self.raw.odb.read(sha)[1]
                        for sha in shas]

    # -- notes shared through a remote (``gitevals notes``, diff's hints) ----------

    @property
    def is_shallow(self) -> bool:
        """True in a shallow clone (``git clone --depth N``): older history is missing."""
        return bool(self.raw.is_shallow)

    def ref_target(self, ref: str) -> str | None:
        """The SHA ``ref`` points at, or None when there is no such ref."""
        with translated(f"read {ref}"):
            found = self.raw.references.get(ref)
            return None if found is None else str(found.resolve().target)

    def contains(self, tip: str, sha: str) -> bool:
        """True when ``sha`` is ``tip`` or one of its ancestors."""
        with translated(f"walk the history of {tip[:12]}"):
            return tip == sha or bool(self.raw.descendant_of(tip, sha))

    def set_ref(self, ref: str, target: str, old: str | None) -> None:
        """Point ``ref`` at ``target`` if it still points at ``old`` (None: does not
        exist); else GitError, so a concurrent writer is never overwritten."""
        if self.ref_target(ref) != old:
            raise GitError(f"cannot move {ref}: it moved meanwhile; try again")
        with translated(f"move {ref}"):
            self.raw.references.create(ref, target, force=True)

    def write_blob(self, data: bytes) -> str:
        """Store ``data`` as a blob; its SHA."""
        with translated("write a blob"):
            return str(self.raw.create_blob(data))

    def config_value(self, key: str) -> str | None:
        """The value of git config ``key`` for this repository, or None."""
        with translated("read the configuration"):
            try:
                value: str | None = self.raw.config[key]
            except KeyError:
                return None
        return value

    def remotes(self) -> dict[str, list[str]]:
        """``remote name -> its fetch refspecs``, sorted by name."""
        with translated("read the remotes"):
            return {r.name: list(r.fetch_refspecs)
                    for r in sorted(self.raw.remotes, key=lambda r: r.name or "") if r.name}

    def run_git(self, *args: str) -> tuple[int, str]:
        """Run the real ``git`` (fetch, push: its credential helpers, ssh and config)
        in the work tree; (exit code, its stderr)."""
        import subprocess

        try:
            proc = subprocess.run(["git", *args], cwd=self.raw.workdir, capture_output=True,
                                  text=True, errors="replace", stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise GitError(f"cannot run git {args[0]}: {exc.strerror or exc}") from exc
        return proc.returncode, proc.stderr

    # -- history (``gitevals report``, ``gitevals log``) -------------------------------

    def first_parents(self, tip: str) -> Iterator[tuple[str, str]]:
        """``(sha, subject)`` of ``tip`` and its first-parent ancestors, newest first
        (lazily: a caller that stops early walks no further)."""
        import pygit2

        with translated(f"walk the history of {tip[:12]}"):
            walker = self.raw.walk(tip, pygit2.enums.SortMode.NONE)
            walker.simplify_first_parent()
            for commit in walker:
                yield str(commit.id), commit.message.split("\n", 1)[0].strip()

    def tags_by_commit(self) -> dict[str, list[str]]:
        """``commit sha -> names of the tags on it`` (annotated tags peeled, names sorted);
        a tag on a tree or a blob is left out."""
        import pygit2

        out: dict[str, list[str]] = {}
        with translated("read the tags"):
            for name in self.raw.references:
                if not name.startswith("refs/tags/"):
                    continue
                try:
                    commit = self.raw.references[name].peel(pygit2.Commit)
                except (pygit2.GitError, ValueError, KeyError):
                    continue
                out.setdefault(str(commit.id), []).append(name[len("refs/tags/"):])
        return {sha: sorted(names) for sha, names in out.items()}

    def noted_commits(self, ref: str = NOTES_REF) -> set[str]:
        """The commits that carry a note under ``ref`` (no note is read)."""
        from gitevals.git import notestree

        with translated(f"list the notes under {ref}"):
            return set(notestree.listed(self, self.ref_target(ref)))


_HEX = frozenset("0123456789abcdef")


def _holds_notes(tree: pygit2.Tree, above: str) -> bool:
    """A notes tree: each entry a blob whose full name (fan-out dirs joined) is a hex
    object name, or a 2-hex directory of them."""
    import pygit2

    for obj in tree:
        name = obj.name or ""
        if not set(name) <= _HEX or not name:
            return False
        if isinstance(obj, pygit2.Tree):
            if len(name) != 2 or len(above) + 2 >= 40 or not _holds_notes(obj, above + name):
                return False
        elif not (isinstance(obj, pygit2.Blob) and obj.filemode != LINK_MODE
                  and len(above + name) in (40, 64)):
            return False
    return True


def open_repo(start: Path | None = None) -> Repo | None:
    """The repository whose work tree holds ``start`` (default: cwd); None outside one
    (a bare repository has no work tree)."""
    import pygit2

    with translated(f"open the repository at {start or Path.cwd()}"):
        found = pygit2.discover_repository(str(start or Path.cwd()))
        _refuse_sha256(found)
        raw = pygit2.Repository(found) if found else None
    return Repo(raw) if raw is not None and not raw.is_bare else None


def _refuse_sha256(git_dir: str | None) -> None:
    """A SHA-256 repository, said plainly: libgit2 as pygit2 packages it reads SHA-1 only."""
    if git_dir is None:
        return
    common = Path(git_dir) / "commondir"  # a linked worktree: the config is the main one's
    try:
        base = Path(git_dir) / common.read_text().strip() if common.is_file() else Path(git_dir)
        config = base / "config"
        text = config.read_text(encoding="utf-8", errors="replace") if config.is_file() else ""
    except OSError:
        return
    if re.search(r"(?im)^\s*objectformat\s*=\s*sha256\s*$", text):
        raise UsageError(f"{git_dir.rstrip('/')} is a SHA-256 repository "
                         "(extensions.objectFormat = sha256): libgit2 as packaged with "
                         "pygit2 cannot read SHA-256 repositories yet; use a SHA-1 clone")


def require_repo(start: Path | None = None) -> Repo:
    """``open_repo``, or a UsageError naming the fix."""
    repo = open_repo(start)
    if repo is None:
        where = start or Path.cwd()
        raise UsageError(f"{where} is not inside a git work tree: run `git init` first")
    return repo
