"""The real pre-commit framework runs this project's ``gitevals-lint`` hook on task files:
a staged broken task is refused at its line, a fixed one passes (slow: pre-commit installs
gitevals from the committed checkout into its own virtualenv, so one test does it all, in
a repository installed once a run and shared with tests/test_precommit_framework.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, Repo
from tests.support.precommit import installed_copy, run
from tests.support.task_dirs import GOOD_TOML, write_task

TASK = "evals/tasks/t"


@pytest.mark.timeout(900)  # pre-commit builds the hook's environment: pip
def test_framework_refuses_a_broken_task(repo: Repo, tmp_path_factory: pytest.TempPathFactory,
                                         precommit_home: Path) -> None:
    env = {**os.environ, **GIT_ENV}
    installed_copy(tmp_path_factory, repo, env)  # install + install-hooks, once a run

    write_task(repo.path / TASK, GOOD_TOML.replace("[verifier]\n",
                                                   "[verifier]\npass_threshold = 1.5\n"),
               "Do it.\n")
    repo.git("add", "-A")
    code, out = run(repo.path, env, "git", "commit", "-m", "bad task")
    assert code != 0
    assert (f"{TASK}/task.toml:6:1: GE905 bad task.toml value verifier.pass_threshold: "
            "verifier.pass_threshold is 1.5, must be at most 1") in out
    assert repo.git("log", "--format=%s") == "config"

    (repo.path / TASK / "task.toml").write_text(GOOD_TOML)
    repo.git("add", "-A")
    code, out = run(repo.path, env, "git", "commit", "-m", "good task")
    assert code == 0, out
    assert "gitevals lint" in out and "Passed" in out


def _project() -> Path:
    return Path(__file__).resolve().parents[2]


def test_the_hook_definitions_select_task_files() -> None:
    import re

    from pre_commit.clientlib import load_manifest

    from gitevals.scaffold import files_pattern

    hooks = {h["id"]: h for h in load_manifest(str(_project() / ".pre-commit-hooks.yaml"))}
    shipped, scaffolded = re.compile(hooks["gitevals-lint"]["files"]), re.compile(
        files_pattern("qa"))
    for path in ("tasks/t/task.toml", "tasks/t/instruction.md", "tasks/t/tests/test.sh",
                 "tasks/t/environment/data.bin"):
        assert shipped.search(f"evals/{path}") and scaffolded.search(f"qa/{path}"), path
    assert not shipped.search("src/tasks/t/task.toml")
    assert not scaffolded.search("evals/tasks/t/task.toml")
