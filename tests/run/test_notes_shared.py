"""Notes shared by many machines: JSONL notes, `gitevals notes pull|push`, old notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support.notes import FILES, clone, kept, note_of, note_run, noted, remote_with_commit


def test_two_machines_push_notes_of_one_commit_and_a_fresh_clone_sees_both(
        repo: Repo, tmp_path: Path) -> None:
    bare, sha = remote_with_commit(repo, tmp_path)
    one, two = clone(tmp_path, bare, "one"), clone(tmp_path, bare, "two")
    complete = note_run(one)
    partial = note_run(two, "tone")  # finishes last, but a complete run is preferred

    first = run_cli("notes", "push", cwd=one)
    assert (first.code, first.out) == (0, "pushed refs/notes/gitevals to origin\n"), first.err
    # What plain git does with the second machine's notes: refused.
    plain = git(two, "push", "origin", "refs/notes/gitevals", check=False)
    assert plain == ""
    assert git(bare, "notes", "--ref", "gitevals", "show", sha).count("\n") == 0  # one run
    second = run_cli("notes", "push", cwd=two)
    assert second.code == 0, second.err
    assert second.out == ("pushed refs/notes/gitevals to origin (after merging theirs: "
                          "1 commit(s) gained runs)\n")

    fresh = clone(tmp_path, bare, "fresh")
    pulled = run_cli("notes", "pull", cwd=fresh)
    assert (pulled.code, pulled.out) == (
        0, "merged the notes of origin into refs/notes/gitevals: 1 commit(s) gained runs\n")
    runs = kept(fresh)
    assert {r["run_id"]: r["picked"] for r in runs} == {complete: True, partial: False}
    assert all(r["sources"] == ["note refs/notes/gitevals"] for r in runs)
    shown = run_cli("show", "--format", "json", cwd=fresh)
    assert json.loads(shown.out)["run_id"] == complete
    # The note is JSONL in the order runs were added (two's own, then the one merged in):
    # git's own cat_sort_uniq merge keeps it valid, and the complete run still counts.
    lines = note_of(fresh, sha).splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == [partial, complete]

    again = run_cli("notes", "pull", cwd=one)
    assert again.out.endswith("1 commit(s) gained runs\n")
    assert run_cli("notes", "pull", cwd=one).out == \
        "refs/notes/gitevals is up to date with origin\n"
    assert {r["run_id"] for r in kept(one)} == {complete, partial}


def test_git_notes_merge_cat_sort_uniq_keeps_every_run(repo: Repo, tmp_path: Path) -> None:
    """The README's plain-git recipe: fetch into a side ref, merge with cat_sort_uniq."""
    bare, _ = remote_with_commit(repo, tmp_path)
    one, two = clone(tmp_path, bare, "one"), clone(tmp_path, bare, "two")
    ids = {note_run(one), note_run(two)}
    git(one, "push", "-q", "origin", "refs/notes/gitevals")
    git(two, "fetch", "-q", "origin", "refs/notes/gitevals:refs/notes/gitevals-remote/origin")
    git(two, "notes", "--ref", "gitevals", "merge", "-q", "-s", "cat_sort_uniq",
        "refs/notes/gitevals-remote/origin")
    assert {r["run_id"] for r in kept(two)} == ids
    git(two, "push", "-q", "origin", "refs/notes/gitevals")  # a fast-forward now


def test_an_old_single_document_note_is_read_and_kept(repo: Repo, tmp_path: Path) -> None:
    sha = repo.commit(FILES, "evals")
    r = run_cli("run", "--no-note", cwd=repo.path)
    assert r.code in (0, 1), r.err
    (path,) = (repo.path / "evals" / "results").glob("*.json")
    old = json.loads(path.read_text())["run_id"]
    repo.git("notes", "--ref", "gitevals", "add", "-F", str(path), sha)  # indented, as before
    path.unlink()
    assert json.loads(run_cli("show", "--format", "json", cwd=repo.path).out)["run_id"] == old

    new = note_run(repo.path, "tone")
    assert {r["run_id"]: r["picked"] for r in kept(repo.path)} == {old: True, new: False}
    assert len(note_of(repo.path, sha).splitlines()) == 2  # rewritten as JSONL, both kept


def test_a_line_that_is_no_run_is_skipped(tmp_path_factory: pytest.TempPathFactory,
                                         tmp_path: Path) -> None:
    # the commit and its one run, made once a test run (noted)
    repo, sha, run_id = noted(tmp_path_factory, tmp_path)
    text = note_of(repo.path, sha) + "\nnot json\n{\"format\": \"gitevals-run/9\"}\n[1, 2\n"
    repo.git("notes", "--ref", "gitevals", "add", "-f", "-m", text, sha)
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert shown.code in (0, 1), shown.err
    assert json.loads(shown.out)["run_id"] == run_id
    assert [r["run_id"] for r in kept(repo.path)] == [run_id]
    other = note_run(repo.path)  # the writer drops what is no run
    assert len(note_of(repo.path, sha).splitlines()) == 2
    assert {r["run_id"] for r in kept(repo.path)} == {run_id, other}


def test_pull_when_the_remote_has_no_notes(repo: Repo, tmp_path: Path) -> None:
    remote_with_commit(repo, tmp_path)
    r = run_cli("notes", "pull", cwd=repo.path)
    assert (r.code, r.out, r.err) == (
        0, "origin has no refs/notes/gitevals yet: nothing to pull (`gitevals notes push` "
           "shares yours)\n", "")


def test_unknown_remote_is_one_line_exit_2(repo: Repo) -> None:
    repo.commit(FILES, "evals")
    r = run_cli("notes", "pull", "nowhere", cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and "cannot fetch the notes of nowhere" in r.err
    bad = run_cli("notes", "push", "--upload-pack=x", cwd=repo.path)
    assert bad.code == 2


def test_a_note_keeps_at_most_note_keep_runs() -> None:
    """The counting run (complete, here the first added) and the last added others."""
    from gitevals.run.store import NOTE_KEEP, bounded

    def fake(run_id: str, cases: list[str]) -> Any:
        return {"run_id": run_id, "options": {"cases": cases}, "interrupted": False,
                "cases": [], "dirty": False}

    runs = [fake("best", []), *(fake(str(i), ["tone"]) for i in range(NOTE_KEEP + 5))]
    kept = bounded(runs)
    assert [r["run_id"] for r in kept] == ["best", *(str(i) for i in range(6, NOTE_KEEP + 5))]


RACE_HOOK = """#!/bin/sh
# The first push of notes loses a race: another machine's notes land meanwhile.
if [ "$1" = refs/notes/gitevals ] && [ ! -e "$GIT_DIR/raced" ]; then
    touch "$GIT_DIR/raced"
    git update-ref refs/notes/gitevals refs/notes/pending
fi
exit 0
"""


def test_a_push_that_lost_a_race_pulls_again_and_keeps_every_run(
        repo: Repo, tmp_path: Path) -> None:
    bare, sha = remote_with_commit(repo, tmp_path)
    one, two, three = (clone(tmp_path, bare, n) for n in ("one", "two", "three"))
    first = note_run(one)
    assert run_cli("notes", "push", cwd=one).code == 0
    assert run_cli("notes", "pull", cwd=three).code == 0
    third = note_run(three)
    git(three, "push", "-q", "origin", "refs/notes/gitevals:refs/notes/pending")
    hook = bare / "hooks" / "update"
    hook.write_text(RACE_HOOK)
    hook.chmod(0o755)

    second = note_run(two)
    r = run_cli("notes", "push", cwd=two)
    assert r.code == 0, r.err
    assert r.err == "gitevals: origin moved its notes meanwhile: pulling again (1/4)\n"
    lines = git(bare, "notes", "--ref", "gitevals", "show", sha).splitlines()
    assert {json.loads(line)["run_id"] for line in lines} == {first, second, third}
