"""Issue 25 (12, 13, 15): every number a task gives is bounded, and what no process can be
given is a finding -- through lint, publish-check, task compile and run, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli
from tests.support.task_dirs import GOOD_TOML, write_task

NINES = GOOD_TOML.replace("memory_mb = 2048", f'memory = "{"9" * 400}G"')
BAD = {
    "nines": (NINES, "environment.memory '9999"),
    "iterations": ("max_iterations = 1000000000\n" + GOOD_TOML, "must be at most 100"),
    "timeout": (GOOD_TOML.replace("timeout_sec = 30.0", "timeout_sec = 2200000.0"),
                "verifier.timeout_sec is 2200000.0, must be at most 86400"),
    "nulcmd": (GOOD_TOML.replace("[verifier]\n", '[verifier]\ncommand = ["bash", '
                                 '"/tests/test.sh\\u0000"]\n'), "holds a NUL character"),
    "nulenv": (GOOD_TOML + '[verifier.env]\nK = "a\\u0000"\n', "holds a NUL character"),
    "nulworkdir": (GOOD_TOML + 'workdir = "/a\\u0000"\n', "environment.workdir"),
    "emptyenv": (GOOD_TOML + '[verifier.env]\n"" = "x"\n', "the name '' is empty"),
}


@pytest.fixture
def bad_repo(repo: Repo) -> Repo:
    for name, (toml, _) in BAD.items():
        write_task(repo.path / "evals" / "tasks" / name, toml, "Do it.\n")
    repo.commit({"pyproject.toml": '[tool.gitevals.target]\ncommand = ["true"]\n',
                 "evals/.gitignore": "results/\n"})
    return repo


def _clean(err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err


def test_lint_and_publish_check_refuse_each_in_one_line(bad_repo: Repo) -> None:
    res = run_cli("lint", cwd=bad_repo.path)
    assert res.code == 1, res.out + res.err
    _clean(res.err)
    for name, (_, words) in BAD.items():
        (line,) = [x for x in res.out.splitlines() if f"evals/tasks/{name}/" in x]
        assert " GE905 " in line and words in line, line
    check = run_cli("publish-check", cwd=bad_repo.path)
    _clean(check.err)
    assert "1 of 1 revision(s) refused" in check.out + check.err


@pytest.mark.parametrize("name", list(BAD))
def test_task_compile_refuses_each_without_a_crash(bad_repo: Repo, name: str) -> None:
    res = run_cli("task", "compile", name, cwd=bad_repo.path)
    assert res.code == 1, res.out + res.err
    _clean(res.err)
    assert BAD[name][1] in res.err and "does not compile" in res.err


def test_run_does_not_run_them_and_loses_nothing(bad_repo: Repo) -> None:
    res = run_cli("run", "nines", "timeout", cwd=bad_repo.path)
    _clean(res.err)
    assert "task 'nines' does not lint and was not run" in res.err, res.err
    assert "task 'timeout' does not lint and was not run" in res.err


def test_task_compile_of_the_filesystem_root_says_so(tmp_path: Path, repo: Repo) -> None:
    repo.commit({"README": "x\n"})
    res = run_cli("task", "compile", "/", cwd=repo.path)
    assert res.code == 2
    assert res.err == ("gitevals: error: /: the filesystem's root, not a task directory; "
                       "name a task (a directory under <root>/tasks/) or a path to one\n")
