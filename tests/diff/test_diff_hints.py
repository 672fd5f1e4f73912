"""diff without a run on a side says why: notes never fetched, fetched but not merged,
fetched with no run; and a shallow clone missing a revision says how to deepen."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import Repo, git, run_cli
from tests.support.diffs import case, commit_and_run

NOTES = "refs/notes/gitevals"


def _published(repo: Repo, tmp_path: Path) -> tuple[Path, str, str]:
    """A remote with two commits; only the first has a run, pushed as a note."""
    a = commit_and_run(repo, {"capital": 2}, case(2, ("capital",)), "a")
    shutil.rmtree(repo.path / "evals" / "results")  # the run travels as a note only
    b = repo.commit({"passes.json": "{}"}, "b")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main", NOTES)
    return bare, a, b


def _hint(out: str, side: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith(f"{side}  ")]
    return line.split("no run: ", 1)[1]


def test_hints_say_never_fetched_then_not_merged_then_no_run(
        repo: Repo, tmp_path: Path) -> None:
    bare, a, b = _published(repo, tmp_path)
    git(tmp_path, "clone", "-q", str(bare), "clone")
    clone = tmp_path / "clone"

    never = run_cli("diff", a, b, cwd=clone)
    assert never.code == 0, never.err
    assert _hint(never.out, "A") == (
        "the notes of origin were never fetched: `gitevals notes pull origin` (or "
        f"`git fetch origin {NOTES}:{NOTES}`), else make one with `gitevals run --rev {a}`")

    git(clone, "fetch", "-q", "origin", f"{NOTES}:refs/notes/gitevals-remote/origin")
    unmerged = run_cli("diff", a, b, cwd=clone)
    assert _hint(unmerged.out, "A") == (
        "the notes fetched from origin hold one, not yet merged: `gitevals notes pull origin`")

    assert run_cli("notes", "pull", cwd=clone).code == 0
    merged = run_cli("diff", a, b, cwd=clone)
    assert "no run" not in merged.out.splitlines()[1]
    assert _hint(merged.out, "B") == (
        f"none in the notes fetched from origin either: make one with `gitevals run --rev {b}`")
    gated = run_cli("diff", a, b, "--require-runs", cwd=clone)
    assert gated.code == 2
    assert gated.err == (f"gitevals: error: no run of {b} ({b[:12]}): none in the notes "
                         f"fetched from origin either: make one with `gitevals run --rev {b}` "
                         "(--require-runs)\n")


def test_the_fetch_refspec_counts_as_fetched(repo: Repo, tmp_path: Path) -> None:
    bare, _, _ = _published(repo, tmp_path)
    git(tmp_path, "clone", "-q", str(bare), "clone")
    clone = tmp_path / "clone"
    git(clone, "config", "--add", "remote.origin.fetch", f"{NOTES}:{NOTES}")
    git(clone, "fetch", "-q", "origin")
    out = run_cli("diff", "HEAD~1", "HEAD", cwd=clone).out
    assert _hint(out, "B").startswith("none in the notes fetched from origin either")


def test_no_remote_says_run(repo: Repo) -> None:
    a = commit_and_run(repo, {"capital": 2}, case(2, ("capital",)), "a")
    b = repo.commit({"passes.json": "{}"}, "b")
    out = run_cli("diff", a, b, cwd=repo.path).out
    assert _hint(out, "B") == f"make one with `gitevals run --rev {b}`"


def test_a_shallow_clone_says_how_to_deepen(repo: Repo, tmp_path: Path) -> None:
    bare, _, _ = _published(repo, tmp_path)
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{bare}", "shallow")
    r = run_cli("diff", "HEAD~1", "HEAD", cwd=tmp_path / "shallow")
    assert (r.code, r.out) == (2, "")
    assert r.err == ("gitevals: error: cannot resolve 'HEAD~1': this clone is shallow and its "
                     "history may stop before it; fetch more with `git fetch --deepen=N` "
                     "(N more commits) or `git fetch --unshallow`\n")
    git(tmp_path / "shallow", "fetch", "-q", "--deepen=1")
    assert run_cli("diff", "HEAD~1", "HEAD", cwd=tmp_path / "shallow").code == 0
