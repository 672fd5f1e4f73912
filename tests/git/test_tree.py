from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitevals.errors import GitError, RevisionError
from gitevals.git.blobs import git_blob_sha
from gitevals.git.repo import require_repo
from gitevals.git.trees import Entry, IndexTree, RevisionTree, Tree, WorkingTree, open_tree
from tests.conftest import Repo


def test_blob_sha_matches_git(repo: Repo) -> None:
    repo.write({"a.txt": "hello\n"})
    assert git_blob_sha(b"hello\n") == repo.git("hash-object", "a.txt")


def test_three_trees_differ_as_git_says(repo: Repo) -> None:
    first = repo.commit({"evals/cases/a.yaml": "v1\n", "other.txt": "x"}, "one")
    repo.commit({"evals/cases/a.yaml": "v2\n"}, "two")
    repo.write({"evals/cases/a.yaml": "staged\n"})
    repo.git("add", "evals/cases/a.yaml")
    repo.write({"evals/cases/a.yaml": "working\n", "evals/cases/new.yaml": "n"})
    r = require_repo(repo.path)
    assert WorkingTree(repo.path).read("evals/cases/a.yaml") == b"working\n"
    assert IndexTree(r).read("evals/cases/a.yaml") == b"staged\n"
    assert RevisionTree(r, "HEAD").read("evals/cases/a.yaml") == b"v2\n"
    assert RevisionTree(r, "HEAD~1").read("evals/cases/a.yaml") == b"v1\n"
    assert RevisionTree(r, first[:7]).commit == first
    assert WorkingTree(repo.path).files("evals") == ["evals/cases/a.yaml", "evals/cases/new.yaml"]
    assert RevisionTree(r, "HEAD").files("evals") == ["evals/cases/a.yaml"]
    assert IndexTree(r).files("evals/cases") == ["evals/cases/a.yaml"]
    head = RevisionTree(r, "HEAD")
    entry = head.entry("evals/cases/a.yaml")
    assert entry is not None
    assert entry.sha == repo.git("rev-parse", "HEAD:evals/cases/a.yaml")
    assert head.tree_sha == repo.git("rev-parse", "HEAD^{tree}")


def test_annotated_tag_and_branch_resolve(repo: Repo) -> None:
    sha = repo.commit({"f": "1"})
    repo.git("tag", "-a", "v1.0", "-m", "release")
    repo.git("branch", "feature")
    r = require_repo(repo.path)
    assert RevisionTree(r, "v1.0").commit == sha
    assert RevisionTree(r, "feature").commit == sha


@pytest.mark.parametrize("rev", ["nope", "HEAD~5", "deadbeef", "a..b", ""])
def test_unknown_revision_is_one_clear_error(repo: Repo, rev: str) -> None:
    repo.commit({"f": "1"})
    with pytest.raises(RevisionError, match="unknown revision"):
        RevisionTree(require_repo(repo.path), rev)


def test_materialize_writes_commit_not_worktree(repo: Repo, tmp_path: Path) -> None:
    repo.commit({"run.sh": "echo hi\n", "d/x.txt": "x"})
    (repo.path / "run.sh").chmod(0o755)
    repo.commit(msg="exec")
    repo.write({"d/x.txt": "dirty"})
    dest = tmp_path / "out"
    RevisionTree(require_repo(repo.path), "HEAD").materialize(dest)
    assert (dest / "d/x.txt").read_text() == "x"
    assert (dest / "run.sh").stat().st_mode & 0o111


def test_open_tree_outside_repo_is_plain_dir(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("1")
    t = open_tree(start=tmp_path)
    assert isinstance(t, WorkingTree) and t.files() == ["f"]


def test_notes_round_trip_and_leave_other_refs(repo: Repo) -> None:
    sha = repo.commit({"f": "1"})
    repo.git("notes", "add", "-m", "human note", sha)
    r = require_repo(repo.path)
    r.write_note(sha, '{"a": 1}')
    r.write_note(sha, '{"a": 2}')
    assert r.read_note(sha) == '{"a": 2}'
    assert repo.git("notes", "show", sha) == "human note"
    assert repo.git("notes", "--ref", "gitevals", "show", sha) == '{"a": 2}'


def test_dirty_paths_ignores_untracked_and_results(repo: Repo) -> None:
    repo.commit({"evals/cases/a.yaml": "1", "evals/results/r.json": "{}"})
    r = require_repo(repo.path)
    assert r.dirty_paths() == []
    repo.write({"new.txt": "u", "evals/results/r.json": "{1}"})
    assert r.dirty_paths("evals/results") == []
    repo.write({"evals/cases/a.yaml": "2"})
    assert r.dirty_paths("evals/results") == ["evals/cases/a.yaml"]


def test_diff_digest_changes_with_the_diff(repo: Repo) -> None:
    repo.commit({"f": "1"})
    r = require_repo(repo.path)
    clean = r.diff_digest()
    repo.write({"f": "2"})
    one = r.diff_digest()
    repo.write({"f": "3"})
    assert len({clean, one, r.diff_digest()}) == 3


# -- one interface: every kind of tree answers alike for the same committed content --

CASE_A, CASE_B, GOLDENS = b"name: a\n", b"name: b\n", b'{"id": "g1"}\n'
SHA_A, SHA_B, SHA_G = git_blob_sha(CASE_A), git_blob_sha(CASE_B), git_blob_sha(GOLDENS)
SHA_LINK = git_blob_sha(b"a.yaml")  # a symlink's blob is its target path


def _committed(repo: Repo) -> dict[str, Tree]:
    """The same commit as the working tree, the index and a revision."""
    repo.write({"evals/cases/a.yaml": CASE_A, "evals/cases/sub/b.yml": CASE_B,
                "evals/goldens.jsonl": GOLDENS, "evals/cases.txt": "", "run.sh": "echo\n"})
    (repo.path / "run.sh").chmod(0o755)
    (repo.path / "evals/cases/link.yaml").symlink_to("a.yaml")
    repo.commit()
    return {"working": open_tree(start=repo.path),
            "index": open_tree(staged=True, start=repo.path),
            "revision": open_tree(rev="HEAD", start=repo.path)}


QUERIES = [
    ("blob_shas of a directory, links left out", lambda t: t.blob_shas("evals/cases"),
     {"evals/cases/a.yaml": SHA_A, "evals/cases/sub/b.yml": SHA_B}),
    ("blob_shas of a directory/", lambda t: t.blob_shas("evals/cases/sub/"),
     {"evals/cases/sub/b.yml": SHA_B}),
    ("blob_shas of a file", lambda t: t.blob_shas("evals/goldens.jsonl"),
     {"evals/goldens.jsonl": SHA_G}),
    ("blob_shas of a file/ is nothing", lambda t: t.blob_shas("evals/goldens.jsonl/"), {}),
    ("blob_shas of a link is nothing", lambda t: t.blob_shas("evals/cases/link.yaml"), {}),
    ("blob_shas of a missing path", lambda t: t.blob_shas("evals/nope"), {}),
    ("blob_shas in path order", lambda t: list(t.blob_shas("evals")),
     ["evals/cases.txt", "evals/cases/a.yaml", "evals/cases/sub/b.yml", "evals/goldens.jsonl"]),
    ("blob_sha of a file", lambda t: t.blob_sha("evals/cases/a.yaml"), SHA_A),
    ("blob_sha of a link", lambda t: t.blob_sha("evals/cases/link.yaml"), SHA_LINK),
    ("blob_sha of a directory", lambda t: t.blob_sha("evals/cases"), None),
    ("blob_sha of a missing path", lambda t: t.blob_sha("evals/nope.yaml"), None),
    ("read_blobs by sha", lambda t: t.read_blobs([*t.blob_shas("evals").values()]),
     [b"", CASE_A, CASE_B, GOLDENS]),
    ("read_blobs of a link", lambda t: t.read_blobs([t.blob_sha("evals/cases/link.yaml")]),
     [b"a.yaml"]),
    ("exists", lambda t: [t.exists(p) for p in ("evals/cases", "evals/cases/link.yaml",
                                                "evals/cases/a.yaml", "evals/case", "nope")],
     [True, True, True, False, False]),
    ("entries", lambda t: [(e.path, e.sha, e.size, e.is_link, e.executable)
                           for e in t.entries("evals/cases")],
     [("evals/cases/a.yaml", SHA_A, 8, False, False),
      ("evals/cases/link.yaml", SHA_LINK, 6, True, False),
      ("evals/cases/sub/b.yml", SHA_B, 8, False, False)]),
    ("entry of an executable", lambda t: t.entry("run.sh"),
     Entry("run.sh", git_blob_sha(b"echo\n"), 5, executable=True)),
    ("read", lambda t: t.read("evals/cases/sub/b.yml"), CASE_B),
]


@pytest.mark.parametrize(("query", "expected"), [(q, e) for _, q, e in QUERIES],
                         ids=[name for name, _, _ in QUERIES])
def test_every_kind_of_tree_answers_alike(repo: Repo, query: Callable[[Tree], object],
                                          expected: object) -> None:
    answers = {kind: query(tree) for kind, tree in _committed(repo).items()}
    assert answers == {"working": expected, "index": expected, "revision": expected}


def test_every_kind_of_tree_has_the_checkout_as_location(repo: Repo) -> None:
    trees = _committed(repo)
    assert {os.path.realpath(t.location) for t in trees.values()} == {str(repo.path.resolve())}


def test_a_revision_answers_exists_without_sizing_a_blob(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """lint --rev asks whether the root exists: one lookup, not a listing that reads the
    header of every blob beneath it (issue 27's lint regression)."""
    tree = _committed(repo)["revision"]

    def sized(*_: object) -> int:
        raise AssertionError("exists read a blob's size")

    monkeypatch.setattr("gitevals.git.blobs.blob_size", sized)
    assert [tree.exists(p) for p in ("evals", "evals/cases/", "evals/nope")] == [
        True, True, False]


def test_the_working_tree_reads_a_listed_file_once(repo: Repo) -> None:
    tree = _committed(repo)["working"]
    shas = tree.blob_shas("evals/cases")
    repo.remove("evals/cases/a.yaml")  # gone from disk: the bytes hashed are the bytes read
    assert tree.read_blobs([shas["evals/cases/a.yaml"]]) == [CASE_A]


@pytest.mark.parametrize("damage", ["locked notes ref", "corrupt index"])
def test_git_failures_are_gitevals_errors(repo: Repo, damage: str) -> None:
    sha = repo.commit({"f": "1"})
    r = require_repo(repo.path)
    if damage == "locked notes ref":
        (repo.path / ".git/refs/notes").mkdir(parents=True)
        (repo.path / ".git/refs/notes/gitevals.lock").write_text("")
        with pytest.raises(GitError, match="could not move refs/notes/gitevals: failed to lock"):
            r.write_note(sha, "{}")
    else:
        (repo.path / ".git/index").write_bytes(b"DIRC garbage")
        with pytest.raises(GitError, match="could not read the index"):
            IndexTree(r)
