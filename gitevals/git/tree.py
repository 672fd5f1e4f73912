"""``Tree``: the files of a working tree, the index, or a revision.

This is the one module that touches pygit2. Everything downstream reads files
through a ``Tree`` and never cares whether they came from disk or git objects:
a publish check of a commit reads exactly what the commit holds, however the
working tree looks.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitevals.errors import RevisionError, UsageError

if TYPE_CHECKING:
    import pygit2

_LINK_MODE = 0o120000
_EXEC_MODE = 0o100755


def git_blob_sha(data: bytes) -> str:
    """The SHA git would give ``data`` as a blob (``git hash-object``)."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class Entry:
    """One file of a tree: repo-relative posix ``path``, ``sha`` of its blob, ``size``."""

    path: str
    sha: str
    size: int
    is_link: bool = False
    executable: bool = False


def blob_bytes(repo: pygit2.Repository, sha: str) -> bytes:
    """The content of blob ``sha``."""
    obj: Any = repo[sha]
    data: bytes = obj.data
    return data


def blob_size(repo: pygit2.Repository, oid: Any) -> int:
    """The size of a blob from its object header alone: listing a tree never inflates
    the blobs in it (a 44 MB goldens.jsonl costs nothing until it is read)."""
    size: int = repo.odb.read_header(oid)[1]
    return size


class Tree:
    """Base of the three readers. ``label`` names the source in messages."""

    label: str = ""
    commit: str | None = None
    tree_sha: str | None = None

    def entries(self, prefix: str = "") -> list[Entry]:
        """Every file under directory ``prefix`` ('' = all), sorted by path."""
        raise NotImplementedError

    def entry(self, path: str) -> Entry | None:
        """The file at ``path``, or None when it is absent or not a file."""
        raise NotImplementedError

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path``, or None when there is no such file."""
        raise NotImplementedError

    def files(self, prefix: str = "") -> list[str]:
        return [e.path for e in self.entries(prefix)]


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.strip("/")
    return not prefix or path == prefix or path.startswith(prefix + "/")


class WorkingTree(Tree):
    """Files on disk below ``root`` (a repo's work dir, or any directory)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = "working tree"

    def _stat(self, path: str) -> os.stat_result | None:
        try:
            return os.lstat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def entries(self, prefix: str = "") -> list[Entry]:
        base = self.root / prefix if prefix else self.root
        out: list[Entry] = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            rel_dir = Path(dirpath).relative_to(self.root).as_posix()
            for name in filenames:
                path = name if rel_dir == "." else f"{rel_dir}/{name}"
                e = self.entry(path)
                if e is not None:
                    out.append(e)
        out.sort(key=lambda e: e.path)
        return out

    def entry(self, path: str) -> Entry | None:
        st = self._stat(path)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(self.root / path).encode()
            return Entry(path, git_blob_sha(target), len(target), is_link=True)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = self.read(path) or b""
        return Entry(path, git_blob_sha(data), st.st_size, executable=bool(st.st_mode & 0o111))

    def read(self, path: str) -> bytes | None:
        try:
            with open(self.root / path, "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None


class _GitTree(Tree):
    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo

    def read(self, path: str) -> bytes | None:
        e = self.entry(path)
        if e is None:
            return None
        return blob_bytes(self.repo, e.sha)


def _index_of(repo: pygit2.Repository) -> Any:
    """The index git is using now: ``git commit -a`` / ``git commit PATH`` run hooks
    with GIT_INDEX_FILE pointing at a temporary index, which is what will be committed."""
    import pygit2

    override = os.environ.get("GIT_INDEX_FILE")
    if override:
        return pygit2.Index(str(Path(override).resolve()))
    return repo.index


class IndexTree(_GitTree):
    """What is staged: the content a commit made now would hold."""

    def __init__(self, repo: pygit2.Repository) -> None:
        super().__init__(repo)
        self.label = "index"
        self._index = _index_of(repo)
        self._index.read()

    def _make(self, ie: Any) -> Entry:
        size = blob_size(self.repo, ie.id)
        return Entry(ie.path, str(ie.id), size, ie.mode == _LINK_MODE, ie.mode == _EXEC_MODE)

    def entries(self, prefix: str = "") -> list[Entry]:
        out = [self._make(ie) for ie in self._index if _under(ie.path, prefix)]
        out.sort(key=lambda e: e.path)
        return out

    def entry(self, path: str) -> Entry | None:
        try:
            ie = self._index[path]
        except KeyError:
            return None
        return self._make(ie)


class RevisionTree(_GitTree):
    """The tree of one commit, read from git objects alone (no checkout)."""

    def __init__(self, repo: pygit2.Repository, rev: str) -> None:
        super().__init__(repo)
        commit = resolve_commit(repo, rev)
        self.commit = str(commit.id)
        self.tree_sha = str(commit.tree.id)
        self.label = f"{rev} ({self.commit[:12]})" if rev != self.commit else self.commit[:12]
        self._tree = commit.tree

    def _walk(self, tree: Any, base: str) -> Iterator[Entry]:
        for obj in tree:
            path = f"{base}{obj.name}"
            if obj.type_str == "tree":
                yield from self._walk(obj, path + "/")
            elif obj.type_str == "blob":
                yield Entry(path, str(obj.id), blob_size(self.repo, obj.id),
                            obj.filemode == _LINK_MODE, obj.filemode == _EXEC_MODE)

    def _subtree(self, prefix: str) -> Any:
        prefix = prefix.strip("/")
        if not prefix:
            return self._tree
        try:
            obj = self._tree[prefix]
        except KeyError:
            return None
        return obj if obj.type_str == "tree" else None

    def entries(self, prefix: str = "") -> list[Entry]:
        sub = self._subtree(prefix)
        if sub is None:
            e = self.entry(prefix)
            return [e] if e else []
        base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        return sorted(self._walk(sub, base), key=lambda e: e.path)

    def entry(self, path: str) -> Entry | None:
        try:
            obj = self._tree[path]
        except KeyError:
            return None
        if obj.type_str != "blob":
            return None
        return Entry(path, str(obj.id), blob_size(self.repo, obj.id),
                     obj.filemode == _LINK_MODE, obj.filemode == _EXEC_MODE)

    def materialize(self, dest: Path) -> None:
        """Write every file of the commit below ``dest`` (for runs, never for lint)."""
        for e in self.entries():
            target = dest / e.path
            target.parent.mkdir(parents=True, exist_ok=True)
            data = blob_bytes(self.repo, e.sha)
            if e.is_link:
                os.symlink(data.decode("utf-8", "surrogateescape"), target)
                continue
            target.write_bytes(data)
            if e.executable:
                target.chmod(0o755)


def open_repo(start: Path | None = None) -> pygit2.Repository | None:
    """The repository containing ``start`` (default: cwd), or None outside one."""
    import pygit2

    found = pygit2.discover_repository(str(start or Path.cwd()))
    return pygit2.Repository(found) if found else None


def require_repo(start: Path | None = None) -> pygit2.Repository:
    repo = open_repo(start)
    if repo is None or repo.is_bare:
        where = start or Path.cwd()
        raise UsageError(f"{where} is not inside a git work tree: run `git init` first")
    return repo


def resolve_commit(repo: pygit2.Repository, rev: str) -> Any:
    """``rev`` (branch, tag incl. annotated, short SHA, ``HEAD~2``) peeled to a commit."""
    import pygit2

    try:
        obj = repo.revparse_single(rev)
        return obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        if repo.head_is_unborn and rev.startswith("HEAD"):
            raise RevisionError(
                f"{rev} names no commit: this repository has no commits yet; commit first"
            ) from exc
        raise RevisionError(
            f"unknown revision {rev!r}: name a commit, branch or tag of this repository "
            f"(`git log --oneline` lists commits)"
        ) from exc


def work_root(repo: pygit2.Repository) -> Path:
    return Path(repo.workdir).resolve()


def open_tree(rev: str | None = None, staged: bool = False, start: Path | None = None) -> Tree:
    """The tree a command reads: a revision, the index, or the working tree."""
    if rev is not None and staged:
        raise UsageError("--rev and --staged name two different trees: give one")
    if rev is not None or staged:
        repo = require_repo(start)
        return IndexTree(repo) if staged else RevisionTree(repo, rev or "HEAD")
    found = open_repo(start)
    if found is not None and not found.is_bare:
        return WorkingTree(work_root(found))
    return WorkingTree((start or Path.cwd()).resolve())


NOTES_REF = "refs/notes/gitevals"


def _signature(repo: pygit2.Repository) -> Any:
    import pygit2

    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("gitevals", "gitevals@localhost")


def write_note(repo: pygit2.Repository, commit: str, text: str, ref: str = NOTES_REF) -> None:
    """Attach ``text`` to ``commit`` under ``ref``, replacing an older note there.

    Only ``ref`` moves: other notes refs (``refs/notes/commits``...) are untouched.
    """
    sig = _signature(repo)
    repo.create_note(text, sig, sig, commit, ref, True)


def read_note(repo: pygit2.Repository, commit: str, ref: str = NOTES_REF) -> str | None:
    """The note on ``commit`` under ``ref``, or None."""
    try:
        note = repo.lookup_note(commit, ref)
    except KeyError:
        return None
    message: str = note.message
    return message


def dirty_paths(repo: pygit2.Repository, ignore_prefix: str | None = None) -> list[str]:
    """Tracked files whose working or staged content differs from HEAD (untracked left out)."""
    import pygit2

    clean = pygit2.GIT_STATUS_CURRENT | pygit2.GIT_STATUS_IGNORED | pygit2.GIT_STATUS_WT_NEW
    out = []
    for path, flags in repo.status().items():
        if flags & ~clean == 0:
            continue
        if ignore_prefix and _under(path, ignore_prefix):
            continue
        out.append(path)
    return sorted(out)


def diff_digest(repo: pygit2.Repository) -> str:
    """A hash of the uncommitted change to tracked files (HEAD tree vs working tree)."""
    if repo.head_is_unborn:
        return hashlib.sha256(b"").hexdigest()
    tree = resolve_commit(repo, "HEAD").tree
    patch = tree.diff_to_workdir().patch or ""
    return hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest()


def peel_to_commit(repo: pygit2.Repository, sha: str) -> str | None:
    """The commit object ``sha`` (or a ref name) names, annotated tags peeled; else None.

    None when ``sha`` is not in this repository or names no commit (a tag on a tree
    or blob): there is then no revision to check.
    """
    import pygit2

    try:
        obj = repo.revparse_single(sha)
        return str(obj.peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def new_commits(repo: pygit2.Repository, tip: str, known: list[str]) -> list[str]:
    """Commits reachable from ``tip`` but from none of ``known`` (oldest first).

    ``known`` are SHAs or ref names the remote already has; unknown ones are skipped.
    """
    import pygit2

    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    for name in known:
        sha = peel_to_commit(repo, name)
        if sha is not None:
            walker.hide(sha)
    return [str(c.id) for c in walker]


def remote_refs(repo: pygit2.Repository, remote: str) -> list[str]:
    """Names of the remote-tracking refs of ``remote`` (``refs/remotes/<remote>/...``)."""
    prefix = f"refs/remotes/{remote}/"
    return sorted(n for n in repo.references if n.startswith(prefix))


def hooks_dir(repo: pygit2.Repository) -> Path:
    """Where git looks for this repository's hooks.

    ``core.hooksPath`` wins (``~`` expanded; a relative one is relative to the top of
    the work tree, where git runs hooks); else ``hooks/`` of the common git dir, so a
    linked worktree shares its main repository's hooks, as git does.
    """
    try:
        configured: str | None = repo.config["core.hooksPath"]
    except KeyError:
        configured = None
    if configured:
        path = Path(os.path.expanduser(configured))
        return path if path.is_absolute() else work_root(repo) / path
    git_dir = Path(repo.path)
    common = git_dir / "commondir"
    if common.is_file():
        git_dir = (git_dir / common.read_text().strip()).resolve()
    return git_dir / "hooks"


def blob_shas(tree: Tree, prefix: str) -> dict[str, str]:
    """``path -> blob sha`` under ``prefix`` without reading any blob.

    ``RevisionTree.entries`` reads each blob's header for its size; a diff only needs
    the SHAs to tell which files changed, so it walks tree objects alone.
    """
    if not isinstance(tree, RevisionTree):
        return {e.path: e.sha for e in tree.entries(prefix)}
    sub = tree._subtree(prefix)
    if sub is None:
        return {}
    out: dict[str, str] = {}
    stack = [(sub, prefix.strip("/") + "/" if prefix.strip("/") else "")]
    while stack:
        node, base = stack.pop()
        for obj in node:
            if obj.type_str == "tree":
                stack.append((obj, f"{base}{obj.name}/"))
            elif obj.type_str == "blob" and obj.filemode != _LINK_MODE:
                out[f"{base}{obj.name}"] = str(obj.id)
    return dict(sorted(out.items()))


def blob_sha_at(tree: Tree, path: str) -> str | None:
    """The blob SHA of ``path`` in ``tree`` (None when absent), without reading the blob."""
    if not isinstance(tree, RevisionTree):
        e = tree.entry(path)
        return e.sha if e else None
    try:
        obj = tree._tree[path]
    except KeyError:
        return None
    return str(obj.id) if obj.type_str == "blob" else None


def read_blob_unverified(repo: pygit2.Repository, sha: str) -> bytes:
    """Blob ``sha`` without libgit2 re-hashing it on read (git itself does not).

    Strict hash verification doubles the cost of reading a large blob (a 44 MB
    goldens.jsonl); the object comes from this repository's own store.
    """
    import pygit2

    pygit2.settings.enable_strict_hash_verification(False)
    try:
        data: bytes = repo.odb.read(sha)[1]
    finally:
        pygit2.settings.enable_strict_hash_verification(True)
    return data


def read_blobs_unverified(repo: pygit2.Repository, shas: list[str]) -> list[bytes]:
    """Several blobs at once (see ``read_blob_unverified``), the loose ones inflated in threads.

    ``zlib`` releases the GIL while it inflates, so with two large loose objects (a
    goldens.jsonl at two commits) both cores work. Packed ones are read from the pack
    files by ``packfile.read_packed`` (a delta base they share inflated once); whatever neither
    way yields, or yields at the wrong size, is left to libgit2.
    """
    import threading
    import zlib

    objects = Path(repo.path) / "objects"
    out: list[bytes | None] = [None] * len(shas)
    sizes = [repo.odb.read_header(sha)[1] for sha in shas]

    def inflate(i: int) -> None:
        # Inflate the "blob <size>\0" header on its own, then the body straight into
        # its final bytes object (no 40 MB copy to strip the header).
        header = b"blob %d\0" % sizes[i]
        try:
            d = zlib.decompressobj()
            if d.decompress((objects / shas[i][:2] / shas[i][2:]).read_bytes(),
                            len(header)) != header:
                return
            body = d.flush(sizes[i])  # the rest, into one buffer of the exact size
        except (OSError, zlib.error):
            return
        if len(body) == sizes[i]:
            out[i] = body

    threads = [threading.Thread(target=inflate, args=(i,)) for i in range(len(shas))[1:]]
    for t in threads:
        t.start()
    inflate(0)
    for t in threads:
        t.join()
    if any(data is None for data in out):
        from gitevals.git.packfile import read_packed

        packed = read_packed(objects, [sha for sha, data in zip(shas, out, strict=True)
                                       if data is None])
        out = [data if data is not None else packed.get(sha) for data, sha in
               zip(out, shas, strict=True)]
    return [data if data is not None and len(data) == size
            else read_blob_unverified(repo, sha)
            for data, sha, size in zip(out, shas, sizes, strict=True)]


def staged_shas(tree: IndexTree) -> dict[str, str]:
    """``path -> blob sha`` of every staged regular file, without reading any blob.

    ``IndexTree.entries`` reads each blob's header for its size; a lint of the index
    only needs the SHAs (the cache is keyed by them) and reads the few blobs it parses:
    on the commit hook's path those header reads are a measurable share of the budget.
    """
    index = tree._index
    return {ie.path: str(ie.id) for ie in index if ie.mode != _LINK_MODE}
