"""The real pre-commit framework running this project's ``.pre-commit-hooks.yaml``.

A temp repo's config points at this checkout (``repo: <path>``, ``rev: <HEAD>``), so
pre-commit clones the committed hook definition and pip-installs gitevals from it
into its own virtualenv (deps from PyPI): slow, hence one test doing everything, in the
run's one pre-commit store (``precommit_home``), from a repository installed once a run
(``installed_copy``: the first test to ask runs ``pre-commit install`` and
``install-hooks``, which builds the environment as a user's first install does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, Repo
from tests.support.precommit import PROJECT, installed_copy, run

GOOD = "scenarios:\n  - id: greets\n    user: Hello\n    expect:\n      - no_error: true\n"
BAD = "scenarios:\n  - suite: nightly\n    id: greets\n    user: Hello\n"


@pytest.mark.timeout(900)  # pre-commit builds the hook's environment: pip
def test_framework_refuses_bad_commit_and_bad_push(
        repo: Repo, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        precommit_home: Path) -> None:
    env = {**os.environ, **GIT_ENV}
    installed_copy(tmp_path_factory, repo, env)  # install + install-hooks, once a run

    # pre-commit stage: a staged bad case is refused, with the finding's position.
    repo.write({"evals/cases/c.yaml": BAD})
    repo.git("add", "evals/cases/c.yaml")
    code, out = run(repo.path, env, "git", "commit", "-m", "bad case")
    assert code != 0
    assert "evals/cases/c.yaml:2:5: GE" in out
    assert repo.git("log", "--format=%s") == "config"

    repo.write({"evals/cases/c.yaml": GOOD})
    repo.git("add", "evals/cases/c.yaml")
    code, out = run(repo.path, env, "git", "commit", "-m", "good case")
    assert code == 0, out
    assert "gitevals lint" in out and "Passed" in out

    # A deleted grader module that a committed case names (pre-commit passes no file).
    repo.commit({"evals/graders/q.py": "def answers(t, case, run):\n    return True\n",
                 "evals/cases/g.yaml": GOOD.replace("no_error: true",
                                                    "grader: {name: q.answers}")},
                msg="grader")
    repo.git("rm", "-q", "evals/graders/q.py")
    code, out = run(repo.path, env, "git", "commit", "-m", "drop grader")
    assert code != 0, out
    assert "evals/cases/g.yaml:5:24: GE502 grader module evals/graders/q.py not found" in out
    repo.git("reset", "-q", "--hard")
    # A broken settings table.
    repo.write({"pyproject.toml": '[tool.gitevals.target]\ncommand = "python3 h.py"\n'})
    repo.git("add", "pyproject.toml")
    code, out = run(repo.path, env, "git", "commit", "-m", "settings")
    assert code != 0, out
    assert "pyproject.toml:2:1: GE701 bad setting target.command" in out
    assert repo.git("log", "-1", "--format=%s") == "grader"
    repo.git("reset", "-q", "--hard")

    # pre-push stage: a bad commit that slipped in (--no-verify) refuses the push.
    remote = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.write({"evals/cases/c.yaml": BAD})
    repo.git("commit", "-q", "--no-verify", "-am", "bad again")
    bad = repo.git("rev-parse", "HEAD")
    code, out = run(repo.path, env, "git", "push", "origin", "main")
    assert code != 0
    assert f"refused: refs/heads/main at {bad}" in out
    assert repo.git("ls-remote", "origin") == ""

    repo.write({"evals/cases/c.yaml": GOOD})
    repo.git("add", "evals/cases/c.yaml")
    code, out = run(repo.path, env, "git", "commit", "-m", "fixed")
    assert code == 0, out
    code, out = run(repo.path, env, "git", "push", "origin", "main")
    assert code == 0, out
    assert "refs/heads/main" in repo.git("ls-remote", "origin")


def test_manifest_is_valid_and_selects_the_eval_files() -> None:
    import re

    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(str(PROJECT / ".pre-commit-hooks.yaml"))}
    lint, publish = hooks["gitevals-lint"], hooks["gitevals-publish-check"]
    assert (lint["entry"], lint["stages"], lint["pass_filenames"]) == (
        "gitevals lint --staged", ["pre-commit"], True)
    assert (publish["entry"], publish["stages"], publish["pass_filenames"],
            publish["always_run"]) == ("gitevals publish-check --pre-push", ["pre-push"],
                                       False, True)
    selected = re.compile(lint["files"])
    assert lint["always_run"] is True  # a deletion-only commit names no file
    for path in ("evals/cases/a.yaml", "evals/cases/sub/b.yml", "evals/graders/q.py",
                 "evals/goldens.jsonl", "pyproject.toml", "gitevals.toml"):
        assert selected.search(path), path
    for path in ("evals/results/r.json", "src/cases/a.yaml", "evals/case.schema.json",
                 "evals/graders/notes.txt", "README.md", "sub/pyproject.toml"):
        assert not selected.search(path), path
