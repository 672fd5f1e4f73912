"""Results carried in git notes: run, push code and notes, clone fresh, fetch notes, diff."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo, git, run_cli
from tests.support.diffs import case, commit_and_run


def _tables(out: str) -> str:
    """Everything after the header lines (the run source differs: results/ vs note)."""
    return out.split("\n\n", 1)[1]


def test_fresh_clone_with_fetched_notes_diffs_like_the_origin(repo: Repo, tmp_path: Path) -> None:
    a = commit_and_run(repo, {"capital": 10, "steady": 3, "better": 1, "retired": 4},
                       case(10), "a")
    repo.git("tag", "v1")
    b = commit_and_run(repo, {"capital": 2, "steady": 2, "better": 10, "retired": 4},
                       case(10), "b")
    repo.git("tag", "v2")
    origin = run_cli("diff", "v1", "v2", cwd=repo.path)
    assert origin.code == 1, origin.err

    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main", "--tags")
    repo.git("push", "-q", "origin", "refs/notes/gitevals")  # notes are not pushed by default

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    before = run_cli("diff", "v1", "v2", cwd=clone)
    assert before.code == 0
    assert before.out.splitlines() == [
        "verdicts not compared",
        *(f"{side}  {rev}  {sha}  no run: the notes of origin were never fetched: "
          "`gitevals notes pull origin` (or `git fetch origin "
          "refs/notes/gitevals:refs/notes/gitevals`), else make one with "
          f"`gitevals run --rev {sha}`" for side, rev, sha in (("A", "v1", a), ("B", "v2", b)))]

    git(clone, "fetch", "-q", "origin", "refs/notes/gitevals:refs/notes/gitevals")
    after = run_cli("diff", "v1", "v2", cwd=clone)
    assert after.code == 1, after.err
    assert after.out.splitlines()[0] == origin.out.splitlines()[0]
    assert _tables(after.out) == _tables(origin.out)
    assert f"B  v2  {b}  run " in after.out and "(note)" in after.out
    assert not (clone / "evals" / "results").exists()  # nothing re-run, nothing written

    doc = json.loads(run_cli("diff", "v1", "v2", "--format", "json", cwd=clone).out)
    ref = json.loads(run_cli("diff", "v1", "v2", "--format", "json", cwd=repo.path).out)
    assert doc["verdicts"] == ref["verdicts"]
    assert (doc["a"]["run_source"], ref["a"]["run_source"]) == ("note", "results")
    assert doc["a"]["run_id"] == ref["a"]["run_id"]
