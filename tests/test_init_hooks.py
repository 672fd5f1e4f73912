"""The set-up ``gitevals init`` writes, installed with the commands it prints, under the
real pre-commit framework, against a local bare remote.

``gitevals`` on PATH is a shim that runs this interpreter's gitevals (``-m gitevals``,
PYTHONPATH kept), so the printed commands, the framework's ``language: system`` hooks
and the plain hooks all run the gitevals under test; the venv's bin dir follows it on
PATH for ``pre-commit``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, Repo, built_once, git, run_cli

BAD = "scenarios:\n  - suite: nightly\n    id: greets\n    user: Hello\n"
GOOD = "scenarios:\n  - id: greets\n    user: Hello\n"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return _env(tmp_path)


def _env(base: Path) -> dict[str, str]:
    """The shim on PATH and a pre-commit store of this test's own, under ``base``."""
    shim = base / "bin" / "gitevals"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gitevals "$@"\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(shim.parent), str(Path(sys.executable).parent),
                            os.environ["PATH"]])
    return {**os.environ, **GIT_ENV, "PATH": path,
            "PRE_COMMIT_HOME": str(base / "pre-commit-home")}


def sh(repo: Repo, env: dict[str, str], command: str) -> tuple[int, str]:
    proc = subprocess.run(command, shell=True, cwd=repo.path, env=env, capture_output=True,
                          text=True, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr


def printed_commands(out: str) -> list[str]:
    """The commands ``init`` tells a user to run: its ``  $ ...`` lines, in order."""
    return [line.split("$ ", 1)[1] for line in out.splitlines() if line.startswith("  $ ")]


def init_and_install(repo: Repo, env: dict[str, str], reverse: bool = False) -> None:
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    commands = printed_commands(r.out)
    assert commands == ["pre-commit install --hook-type pre-commit --hook-type pre-push",
                        "gitevals hooks install pre-push"]
    for command in reversed(commands) if reverse else commands:
        code, out = sh(repo, env, command)
        assert code == 0, out
    code, out = sh(repo, env, "git add -A && git commit -q -m scaffold")
    assert code == 0, out


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository set up as ``init`` prints (its commands in order), built once for
    the run: the tests that start from it copy it (``installed_copy``)."""
    def build(into: Path) -> None:
        path = into / "repo"
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        init_and_install(Repo(path), _env(into))

    return built_once(tmp_path_factory, "init-hooks-installed", build) / "repo"


def installed_copy(repo: Repo, installed: Path) -> None:
    """Make ``repo`` a copy of ``installed`` (hooks, scaffold commit and all)."""
    shutil.rmtree(repo.path)
    shutil.copytree(installed, repo.path, symlinks=True)


@pytest.mark.parametrize("reverse", [False, True], ids=["as-printed", "reversed"])
def test_release_tag_on_an_already_pushed_bad_commit_is_refused(
        repo: Repo, env: dict[str, str], tmp_path: Path, reverse: bool,
        installed: Path) -> None:
    if reverse:
        init_and_install(repo, env, reverse)
    else:  # the commands as printed: what ``installed`` ran once for the run
        installed_copy(repo, installed)
    remote = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.write({"evals/cases/bad.yaml": BAD})
    code, out = sh(repo, env, "git add -A && git commit -q --no-verify -m bad"
                              " && git push -q --no-verify origin main")
    assert code == 0, out
    bad = repo.git("rev-parse", "HEAD")
    repo.git("tag", "-a", "v1.1", bad, "-m", "x")
    code, out = sh(repo, env, "git push origin v1.1")
    assert code != 0, out
    assert f"refused: refs/tags/v1.1 at {bad}: 1 error" in out
    assert "evals/cases/bad.yaml:2:5: GE301" in out
    assert "refs/tags/v1.1" not in repo.git("ls-remote", "origin")
    # The framework's own pre-push hooks still run: the chain reaches them.
    repo.git("tag", "-d", "v1.1")
    repo.write({"evals/cases/bad.yaml": GOOD})
    code, out = sh(repo, env, "git commit -q -am fixed && git push origin main")
    assert code == 0, out
    assert "gitevals publish-check (pushed revisions)" in out and "Passed" in out
    assert f"ok: refs/heads/main at {repo.git('rev-parse', 'HEAD')}" in out


def test_deleting_a_grader_a_committed_case_names_is_refused(
        repo: Repo, env: dict[str, str], installed: Path) -> None:
    installed_copy(repo, installed)
    repo.git("rm", "-q", "evals/graders/example.py")
    code, out = sh(repo, env, "git commit -q -m 'drop grader'")
    assert code != 0, out
    assert ("evals/cases/example.yaml:15:24: GE502 grader module evals/graders/example.py "
            "not found") in out
    # With another eval file staged too (pre-commit names only that one).
    repo.write({"evals/cases/other.yaml": GOOD})
    repo.git("add", "-A")
    code, out = sh(repo, env, "git commit -q -m 'drop grader, add a case'")
    assert code != 0, out
    assert "evals/cases/example.yaml:15:24: GE502" in out
    assert repo.git("log", "--format=%s") == "scaffold"


def test_a_broken_settings_table_is_refused(repo: Repo, env: dict[str, str],
                                            installed: Path) -> None:
    installed_copy(repo, installed)
    with open(repo.path / "gitevals.toml", "a") as f:
        f.write('\n[target]\ncommand = "python3 harness.py"\n')
    code, out = sh(repo, env, "git commit -q -am 'target'")
    assert code != 0, out
    assert "gitevals.toml:15:1: GE701 bad setting target.command" in out
    assert repo.git("log", "--format=%s") == "scaffold"


def test_a_commit_without_eval_files_passes(repo: Repo, env: dict[str, str],
                                            installed: Path) -> None:
    installed_copy(repo, installed)
    repo.write({"README.md": "hi\n"})
    code, out = sh(repo, env, "git add README.md && git commit -q -m readme")
    assert code == 0, out
