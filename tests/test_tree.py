from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.errors import RevisionError
from gitevals.git.tree import (
    IndexTree,
    RevisionTree,
    WorkingTree,
    git_blob_sha,
    open_tree,
    require_repo,
)

from .conftest import Repo


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

