"""Runs in notes are evidence (issue 25, item 9), and notes trees merge by blob id with
git's fan-out (issue 24, item 3): through the real CLI, local bare repos as remotes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support.notes import FILES, clone, kept, note_of, note_run, noted, remote_with_commit


def _lines(cwd: Path, sha: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in note_of(cwd, sha).splitlines()]


def _set_note(cwd: Path, sha: str, runs: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in runs)
    git(cwd, "notes", "--ref", "gitevals", "add", "-f", "-F", "-", sha, input=text)


def _shown(cwd: Path) -> str:
    r = run_cli("show", "--format", "json", cwd=cwd)
    assert r.code in (0, 1), r.err
    run_id: str = json.loads(r.out)["run_id"]
    return run_id


def _forged(run: dict[str, Any], suffix: str, **top: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(run))
    out["run_id"] = out["run_id"][:-6] + suffix
    out.update(top)
    return out


def _all_pass(run: dict[str, Any]) -> None:
    for case in run["cases"]:
        for s in case["scenarios"]:
            v = s["verdict"]
            v.update(verdict="pass", passes=v["trials"], pass_hat_k=True, first_failure=None)


def test_a_forged_run_never_becomes_the_run_that_counts(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    # the commit and its one run, made once a test run (noted): this test forges from it
    repo, sha, genuine_id = noted(tmp_path_factory, tmp_path)
    genuine = _lines(repo.path, sha)[0]
    assert genuine["cases"][0]["scenarios"][1]["verdict"]["verdict"] == "flaky"  # geo/steady

    future = _forged(genuine, "f00001", finished_at="2999-01-01T00:00:00Z")
    edited = _forged(genuine, "f00002")
    _all_pass(edited)  # the verdicts say pass; the trials still say what happened
    other = repo.git("commit-tree", "-m", "x", repo.git("rev-parse", "HEAD^{tree}"))
    elsewhere = _forged(genuine, "f00003", commit=other)
    wrong_pin = _forged(genuine, "f00004")
    wrong_pin["files"]["evals/cases/geo.yaml"] = "4" * 40
    _set_note(repo.path, sha, [genuine, future, edited, elsewhere, wrong_pin])

    assert _shown(repo.path) == genuine_id
    why = {r["run_id"][-6:]: r["problem"] for r in kept(repo.path)}
    refused = "refused as evidence of this commit: "
    assert why["f00001"] == refused + "finished at 2999-01-01T00:00:00Z, in the future"
    assert why["f00002"].startswith(refused + "geo/steady: its verdict pass 2/2 is not what "
                                    "its trials give")
    assert why["f00003"].startswith(f"{refused}pinned to commit {other[:12]}")
    assert why["f00004"] == refused + "pins evals/cases/geo.yaml at a blob the commit does " \
        "not hold"
    assert why[genuine_id[-6:]] is None

    d = run_cli("diff", "HEAD", "HEAD", "--format", "json", cwd=repo.path)
    assert json.loads(d.out)["b"]["run_id"] == genuine_id, d.err

    later = note_run(repo.path)  # a genuine later run displaces whatever was there
    assert _shown(repo.path) == later


def test_a_note_of_forgeries_only_is_one_line_naming_why(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, _ = noted(tmp_path_factory, tmp_path)
    forged = _forged(_lines(repo.path, sha)[0], "f00001", finished_at="2999-01-01T00:00:00Z")
    _set_note(repo.path, sha, [forged])
    r = run_cli("show", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"gitevals: error: git note refs/notes/gitevals on {sha[:12]}: no run in "
                     f"it is evidence of this commit: run {forged['run_id']} is refused: "
                     "finished at 2999-01-01T00:00:00Z, in the future\n")


def test_the_run_added_last_counts_not_the_one_claiming_to_finish_last(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, first = noted(tmp_path_factory, tmp_path)  # the first run, made once
    second = note_run(repo.path)
    a, b = _lines(repo.path, sha)
    assert [a["run_id"], b["run_id"]] == [first, second]  # note order: order added
    assert _shown(repo.path) == second
    _set_note(repo.path, sha, [b, a])  # same runs: `first` now added last
    assert b["finished_at"] > a["finished_at"]
    assert _shown(repo.path) == first


def test_notes_are_written_with_fan_out_and_git_reads_them(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, _ = noted(tmp_path_factory, tmp_path)  # its note written by a real run
    listed = repo.git("ls-tree", "-r", "--name-only", "refs/notes/gitevals").splitlines()
    assert listed == [f"{sha[:2]}/{sha[2:]}"]
    assert json.loads(note_of(repo.path, sha))["commit"] == sha
    assert repo.git("notes", "--ref", "gitevals", "list") .split() == [
        repo.git("rev-parse", "refs/notes/gitevals:" + listed[0]), sha]


def test_an_old_flat_notes_tree_is_fanned_out_on_the_next_write(repo: Repo) -> None:
    first = repo.commit(FILES, "evals")
    r = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert r.code in (0, 1), r.err
    for path in (repo.path / "evals" / "results").glob("*.json"):
        path.unlink()
    old = json.loads(r.out)
    _set_note(repo.path, first, [old])  # as older gitevals (and git) wrote it: flat
    assert repo.git("ls-tree", "--name-only", "refs/notes/gitevals").splitlines() == [first]
    second = repo.commit({"README": "more"}, "docs")
    new = note_run(repo.path)
    names = repo.git("ls-tree", "-r", "--name-only", "refs/notes/gitevals").splitlines()
    assert sorted(names) == sorted([f"{first[:2]}/{first[2:]}", f"{second[:2]}/{second[2:]}"])
    assert _shown(repo.path) == new
    shown = run_cli("show", "HEAD~1", "--format", "json", cwd=repo.path)
    assert json.loads(shown.out)["run_id"] == old["run_id"], shown.err


def test_a_merge_takes_their_notes_as_they_are_and_rewrites_only_what_differs(
        repo: Repo, tmp_path: Path) -> None:
    bare, sha = remote_with_commit(repo, tmp_path)
    one, two = clone(tmp_path, bare, "one"), clone(tmp_path, bare, "two")
    theirs = note_run(one)
    assert run_cli("notes", "push", cwd=one).code == 0
    # two: a run of the shared commit and of one only it has; one: more on both
    mine = note_run(two, "tone")
    git(two, "commit", "-q", "--allow-empty", "-m", "two's own")
    own = git(two, "rev-parse", "HEAD")
    note_run(two)
    git(one, "commit", "-q", "--allow-empty", "-m", "one's own")
    git(one, "push", "-q", "origin", "main")
    theirs_only = git(one, "rev-parse", "HEAD")
    note_run(one)
    note_run(one, "tone")
    assert run_cli("notes", "push", cwd=one).code == 0

    r = run_cli("notes", "pull", cwd=two)
    assert r.out == ("merged the notes of origin into refs/notes/gitevals: 2 commit(s) "
                     "gained runs\n"), r.err
    blob = lambda cwd, ref, c: git(cwd, "rev-parse", f"{ref}:{c[:2]}/{c[2:]}")  # noqa: E731
    remote = "refs/notes/gitevals-remote/origin"
    # theirs alone: taken as it is (never read); held differently: merged
    assert blob(two, "refs/notes/gitevals", theirs_only) == blob(two, remote, theirs_only)
    assert blob(two, "refs/notes/gitevals", sha) != blob(two, remote, sha)
    merged = [r["run_id"] for r in _lines(two, sha)]
    assert merged == [mine, theirs]  # ours first, then theirs' in their order
    assert git(two, "rev-parse", "refs/notes/gitevals^2") == git(two, "rev-parse", remote)
    assert json.loads(note_of(two, own))["commit"] == own
    # a fast-forward reads nothing and moves the ref to theirs
    fresh = clone(tmp_path, bare, "fresh")
    ff = run_cli("notes", "pull", cwd=fresh)
    assert ff.out.endswith("2 commit(s) gained runs\n"), ff.err
    assert git(fresh, "rev-parse", "refs/notes/gitevals") == git(fresh, "rev-parse", remote)
