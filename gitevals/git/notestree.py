"""The notes tree of ``refs/notes/gitevals``, written with fan-out and compared by blob id.

Part of the git layer (``repo.Repo`` hands its pygit2 repository to these functions
only). Why not libgit2's ``create_note`` and ``notes()``: the first writes a flat tree
(one root entry per annotated commit), so every note written rewrites a tree as large
as the history and the notes ref's own history grows with its square; the second reads
every note's text, so merging two notes refs cost memory in proportion to all results
ever kept (``benchmarks/bench_notes.py`` measures both).

Here a note lives at ``ab/cdef...`` (the first two hex digits a directory, git's own
fan-out, which git and libgit2 read at any depth), a write touches one subtree and the
root, and two notes trees are compared subtree by subtree: a subtree with the same id
on both sides is skipped without being opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from gitevals.errors import GitError

if TYPE_CHECKING:
    import pygit2

    from gitevals.git.repo import Repo

_HEX = frozenset("0123456789abcdef")
_BLOB = 0o100644
_DIR = 0o040000


class Malformed(GitError):
    """A notes commit that is no notes tree: ``tip`` is the commit, ``what`` says why."""

    def __init__(self, tip: str, what: str) -> None:
        super().__init__(f"{tip[:12]} is no notes commit: {what}; check it with "
                         "`git log refs/notes/gitevals`")
        self.tip = tip
        self.what = what


def _tree(raw: pygit2.Repository, tip: str | None) -> pygit2.Tree | None:
    """The tree of the notes commit ``tip`` (None: no notes yet)."""
    import pygit2

    if tip is None:
        return None
    commit = raw[tip]
    if not isinstance(commit, pygit2.Commit):
        raise Malformed(tip, f"the notes ref points at a {commit.type_str}")
    return commit.tree


def _is_note(obj: pygit2.Object, name: str, tip: str) -> bool:
    """Whether tree entry ``obj`` (at path ``name``, hex) is a note; a hex-named entry
    that is neither a note blob nor a fan-out tree makes the notes tree malformed (a
    submodule or a link in place of a note: git's notes could not hold it)."""
    import pygit2

    if isinstance(obj, pygit2.Tree):
        return False
    if obj.type_str != "blob" or obj.filemode not in (0o100644, 0o100755):
        raise Malformed(tip, f"{name} is a {obj.type_str} of mode {obj.filemode:o}, not a "
                        "note (a blob)")
    return True


def _entries(raw: pygit2.Repository, tree: pygit2.Tree, above: str, tip: str = ""
             ) -> Iterator[tuple[str, str]]:
    """``(annotated object, note blob id)`` of every note under ``tree`` (ids only) of
    the notes commit ``tip``; ``Malformed`` at an entry that is no note."""
    import pygit2

    for obj in tree:
        name = above + (obj.name or "")
        if not set(name) <= _HEX:
            continue  # not a note (git ignores such entries too)
        if isinstance(obj, pygit2.Tree):
            yield from _entries(raw, obj, name, tip)
        elif _is_note(obj, name, tip) and len(name) in (40, 64):
            yield name, str(obj.id)


def listed(repo: Repo, tip: str | None) -> dict[str, str]:
    """``annotated commit -> note blob id`` of the notes commit ``tip``: no note is read."""
    tree = _tree(repo.raw, tip)
    return {} if tree is None or tip is None else dict(_entries(repo.raw, tree, "", tip))


def changed(repo: Repo, a: str | None, b: str | None) -> dict[str, tuple[str | None, str | None]]:
    """``annotated commit -> (blob on a, blob on b)`` for the notes that differ between
    the notes commits ``a`` and ``b``; subtrees with one id on both sides are skipped,
    so the cost follows what changed, not how many notes there are."""
    ta, tb = _tree(repo.raw, a), _tree(repo.raw, b)
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    _compare(repo.raw, ta, tb, "", left, right, (a or "", b or ""))
    return {c: (left.get(c), right.get(c)) for c in {*left, *right}
            if left.get(c) != right.get(c)}


def _compare(raw: pygit2.Repository, ta: pygit2.Tree | None, tb: pygit2.Tree | None,
             above: str, left: dict[str, str], right: dict[str, str],
             tips: tuple[str, str]) -> None:
    """Collect into ``left``/``right`` the notes of every entry whose id differs
    (``tips``: the two notes commits, named when one is malformed)."""
    import pygit2

    ea = {o.name or "": o for o in ta} if ta is not None else {}
    eb = {o.name or "": o for o in tb} if tb is not None else {}
    for name in {*ea, *eb}:
        oa, ob = ea.get(name), eb.get(name)
        if oa is not None and ob is not None and oa.id == ob.id:
            continue
        if isinstance(oa, pygit2.Tree) and isinstance(ob, pygit2.Tree):
            _compare(raw, oa, ob, above + name, left, right, tips)
            continue
        for obj, into, tip in ((oa, left, tips[0]), (ob, right, tips[1])):
            path = above + name
            if isinstance(obj, pygit2.Tree):
                into.update(_entries(raw, obj, path, tip))
            elif (obj is not None and set(path) <= _HEX and _is_note(obj, path, tip)
                  and len(path) in (40, 64)):
                into[path] = str(obj.id)


def blob_text(repo: Repo, blob: str) -> str:
    """The text of the note blob ``blob``."""
    import pygit2

    obj = repo.raw[blob]
    if not isinstance(obj, pygit2.Blob):
        raise GitError(f"note {blob[:12]} is a {obj.type_str}, not a blob")
    return obj.data.decode("utf-8", "replace")


def new_blob(repo: Repo, text: str) -> str:
    """Store ``text`` as a blob; its id."""
    return str(repo.raw.create_blob(text.encode()))


def find(repo: Repo, tip: str | None, commit: str) -> str | None:
    """The blob id of the note on ``commit`` in the notes commit ``tip``, at whatever
    fan-out it was written (flat, ``ab/cdef...``, ``ab/cd/ef...``), or None."""
    import pygit2

    tree = _tree(repo.raw, tip)
    rest = commit
    while tree is not None and rest:
        found = None
        for cut in (len(rest), 2):
            try:
                found = tree[rest[:cut]]
            except KeyError:
                continue
            if isinstance(found, pygit2.Blob) and cut == len(rest):
                return str(found.id)
            if isinstance(found, pygit2.Tree) and cut == 2:
                break
            found = None
        tree, rest = (found, rest[2:]) if isinstance(found, pygit2.Tree) else (None, "")
    return None


def write(repo: Repo, ref: str, changes: Mapping[str, str | None], parents: list[str],
          message: str) -> str:
    """A notes commit on ``ref``: the tree of ``parents[0]`` (none: empty) with each
    ``annotated commit -> blob id`` of ``changes`` set (None: removed), at fan-out
    ``ab/cdef...``; ``ref`` must still be at ``parents[0]`` (else ``GitError``)."""
    from gitevals.git.blobs import translated
    from gitevals.git.repo import signature

    raw = repo.raw
    with translated(f"write the notes commit on {ref}"):
        base = _tree(raw, parents[0] if parents else None)
        root = raw.TreeBuilder(base) if base is not None else raw.TreeBuilder()
        if base is not None and any(len(o.name or "") > 2 for o in base):
            root = _fanned_root(repo, base)  # a flat tree of older gitevals: fan it out once
        by_dir: dict[str, dict[str, str | None]] = {}
        for commit, blob in changes.items():
            by_dir.setdefault(commit[:2], {})[commit[2:]] = blob
        for prefix, items in sorted(by_dir.items()):
            _write_subtree(raw, root, prefix, items)
        sig = signature(raw)
        oid = raw.create_commit(None, sig, sig, message, root.write(), parents)
    repo.set_ref(ref, str(oid), parents[0] if parents else None)
    return str(oid)


def _write_subtree(raw: pygit2.Repository, root: pygit2.TreeBuilder, prefix: str,
                   items: Mapping[str, str | None]) -> None:
    import pygit2

    old = root.get(prefix)
    sub = raw.TreeBuilder(old) if isinstance(old, pygit2.Tree) else raw.TreeBuilder()
    for rest, blob in sorted(items.items()):
        if blob is None:
            if sub.get(rest) is not None:
                sub.remove(rest)
        else:
            sub.insert(rest, blob, _BLOB)
    if len(sub):
        root.insert(prefix, sub.write(), _DIR)
    elif root.get(prefix) is not None:
        root.remove(prefix)


def _fanned_root(repo: Repo, base: pygit2.Tree) -> pygit2.TreeBuilder:
    """A root builder holding every note of ``base`` at fan-out ``ab/cdef...`` (ids only)."""
    raw = repo.raw
    by_dir: dict[str, dict[str, str | None]] = {}
    for commit, blob in _entries(raw, base, ""):
        by_dir.setdefault(commit[:2], {})[commit[2:]] = blob
    root = raw.TreeBuilder()
    for prefix, items in sorted(by_dir.items()):
        _write_subtree(raw, root, prefix, items)
    return root


def require_commit(repo: Repo, tip: str) -> None:
    """``Malformed`` unless ``tip`` is a commit (what a notes ref must point at)."""
    _tree(repo.raw, tip)
