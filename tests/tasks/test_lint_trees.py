"""Tasks are linted in every tree lint reads (working tree, ``--staged``, ``--rev``), refused by
the commit hook and the publish check like cases, and cached by blob like cases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support.task_dirs import GOOD_TOML, write_task

PROJECT = Path(__file__).resolve().parents[2]
TASK = "evals/tasks/t"
SHELL = GOOD_TOML.replace("[verifier]\n", '[verifier]\ncommand = "bash /tests/test.sh"\n')
FINDING = f"{TASK}/task.toml:6:1: GE907 [verifier] command is a shell string"


def test_working_tree_index_and_revisions(repo: Repo) -> None:
    write_task(repo.path / TASK, GOOD_TOML, "Do it.\n")
    good = repo.commit(msg="good task")
    (repo.path / TASK / "task.toml").write_text(SHELL)  # broken on disk only
    assert FINDING in run_cli("lint", cwd=repo.path).out
    for where in (("--staged",), ("--rev", "HEAD")):
        r = run_cli("lint", *where, cwd=repo.path)
        assert (r.code, r.out) == (0, "1 file checked: no problems\n"), where
    repo.git("add", "-A")
    staged = run_cli("lint", "--staged", cwd=repo.path)
    assert staged.code == 1 and FINDING in staged.out
    named = run_cli("lint", "--staged", f"{TASK}/task.toml", cwd=repo.path)
    assert named.code == 1 and FINDING in named.out  # the commit hook's one-file form
    repo.git("commit", "-q", "--no-verify", "-m", "bad task")
    assert FINDING in run_cli("lint", "--rev", "HEAD", cwd=repo.path).out
    assert run_cli("lint", "--rev", good, cwd=repo.path).code == 0
    check = run_cli("publish-check", "HEAD", cwd=repo.path)
    assert check.code == 1 and FINDING in check.out
    assert run_cli("publish-check", good, cwd=repo.path).code == 0


def test_a_terminal_bench_1_directory_is_skipped_with_a_note(repo: Repo) -> None:
    write_task(repo.path / TASK, GOOD_TOML, "Do it.\n")
    repo.commit({"evals/tasks/tb1/task.yaml": "instruction: hi\n"})
    note = ("gitevals: skipped evals/tasks/tb1: a Terminal-Bench 1 task.yaml directory; "
            "gitevals reads task.toml tasks (Harbor's format)\n")
    for where in ((), ("--staged",), ("--rev", "HEAD"), ("--staged", "evals/tasks/tb1"),
                  ("--format", "json")):
        r = run_cli("lint", *where, cwd=repo.path)
        assert (r.code, r.err) == (0, note), where  # a note, not a finding
    assert run_cli("lint", cwd=repo.path).out == "1 file checked: no problems\n"
    repo.commit({"evals/tasks/tb1/task.toml": GOOD_TOML})  # a task now: no note
    assert run_cli("lint", cwd=repo.path).err == ""


def test_a_staged_deletion_of_the_verifier_script(repo: Repo) -> None:
    write_task(repo.path / TASK, GOOD_TOML, "Do it.\n")
    repo.commit({"evals/cases/a.yaml": "scenarios:\n  - id: x\n    user: hi\n"}, msg="A")
    repo.git("rm", "-q", f"{TASK}/tests/test.sh")
    # pre-commit passes only added and modified files: here, an unrelated case file.
    r = run_cli("lint", "--staged", "evals/cases/a.yaml", cwd=repo.path)
    assert r.code == 1
    assert f"{TASK}/tests/test.sh:1:1: GE909 missing" in r.out


def test_the_plain_git_hook_refuses_a_broken_task(repo: Repo) -> None:
    env = {**os.environ, **GIT_ENV, "GITEVALS": f"{sys.executable} -m gitevals",
           "PYTHONPATH": str(PROJECT)}
    assert run_cli("hooks", "install", "pre-commit", cwd=repo.path).code == 0
    write_task(repo.path / TASK, SHELL, "Do it.\n")
    repo.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "bad task"], cwd=repo.path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and FINDING in proc.stdout + proc.stderr
    assert repo.git("rev-list", "--all") == ""  # nothing was committed
    (repo.path / TASK / "task.toml").write_text(GOOD_TOML)
    repo.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "good task"], cwd=repo.path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_findings_are_cached_by_blob(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    import gitevals.tasks.load as load
    from gitevals.git.trees import open_tree
    from gitevals.lint import lint_tree

    write_task(repo.path / TASK, SHELL, "Do it.\n")
    repo.commit(msg="bad")
    tree = open_tree(rev="HEAD", start=repo.path)
    first = lint_tree(tree)
    assert [f.code for f in first.findings] == ["GE907"]
    calls: list[str] = []
    real = load.load_task

    def counted(*args: Any, **kwargs: Any) -> Any:  # the real loader, counted
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(load, "load_task", counted)
    assert lint_tree(tree).findings == first.findings  # unchanged: from the cache
    assert calls == []
    (repo.path / TASK / "instruction.md").write_text("Do it now.\n")
    repo.commit(msg="edit")
    again = lint_tree(open_tree(rev="HEAD", start=repo.path))
    assert calls == [TASK] and again.findings == first.findings
