"""Runs kept in git notes and shared through a bare remote between clones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support.diffs import HARNESS, SETTINGS, case
from tests.support.runs import repo_copy

FILES = {"harness.py": HARNESS, "pyproject.toml": SETTINGS,
         "passes.json": json.dumps({"capital": 2, "steady": 1}),
         "evals/cases/geo.yaml": case(2, ("capital", "steady")),
         "evals/cases/tone.yaml": case(2, ("polite",))}


def kept(cwd: Path, rev: str = "HEAD") -> list[dict[str, Any]]:
    r = run_cli("show", rev, "--all", "--format", "json", cwd=cwd)
    assert r.code == 0, r.err
    runs: list[dict[str, Any]] = json.loads(r.out)["runs"]
    return runs


def note_run(cwd: Path, *cases: str) -> str:
    r = run_cli("run", *cases, cwd=cwd)
    assert r.code in (0, 1), r.err
    (path,) = (cwd / "evals" / "results").glob("*.json")
    run_id: str = json.loads(path.read_text())["run_id"]
    path.unlink()  # what remains is the note: a CI job's results/ is thrown away
    return run_id


def remote_with_commit(repo: Repo, tmp_path: Path) -> tuple[Path, str]:
    sha = repo.commit(FILES, "evals")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    return bare, sha


def clone(tmp_path: Path, bare: Path, name: str) -> Path:
    git(tmp_path, "clone", "-q", str(bare), name)
    return tmp_path / name


def note_of(cwd: Path, sha: str) -> str:
    return git(cwd, "notes", "--ref", "gitevals", "show", sha)


class Noted(NamedTuple):
    """A repository whose one commit (``sha``) holds ``FILES`` and whose note holds one
    run of every case (``run_id``), its results/ thrown away as a CI job's are."""

    repo: Repo
    sha: str
    run_id: str


def _commit_and_note_run(repo: Repo) -> None:
    repo.commit(FILES, "evals")
    note_run(repo.path)


def noted(factory: pytest.TempPathFactory, tmp_path: Path) -> Noted:
    """A copy (``tmp_path/repo``) of the ``Noted`` repository, committed and run through
    the real CLI once a test run (``repo_copy``): the tests that only read that run, or
    forge notes from it, need not each make it again; each is free to change its copy."""
    repo = repo_copy(factory, tmp_path, "notes-one-run", _commit_and_note_run)
    sha = repo.head()
    (line,) = note_of(repo.path, sha).splitlines()
    return Noted(repo, sha, json.loads(line)["run_id"])
