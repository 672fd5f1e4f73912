"""The real pre-commit framework over this checkout's committed ``.pre-commit-hooks.yaml``."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Repo, built_once, git
from tests.support.paths import PROJECT as _PROJECT

PROJECT = _PROJECT


def project_rev() -> str:
    if not (PROJECT / ".git").exists():
        pytest.skip("the project is not a git checkout: pre-commit needs a committed rev")
    rev = git(PROJECT, "rev-parse", "HEAD")
    probe = subprocess.run(["git", "cat-file", "-e", f"{rev}:.pre-commit-hooks.yaml"],
                           cwd=PROJECT, capture_output=True)
    assert probe.returncode == 0, ".pre-commit-hooks.yaml must be committed for pre-commit"
    return rev


def run(cwd: Path, env: dict[str, str], *args: str, timeout: float = 120) -> tuple[int, str]:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def config(rev: str) -> str:
    """A ``.pre-commit-config.yaml`` using this checkout's two hooks at ``rev``."""
    return (f"repos:\n  - repo: {PROJECT}\n    rev: {rev}\n    hooks:\n"
            "      - id: gitevals-lint\n      - id: gitevals-publish-check\n")


def _install(into: Path, env: dict[str, str]) -> None:
    """A repository set up as a user's first time does: the config committed ("config"),
    ``pre-commit install`` for both hook types, then ``install-hooks``, which clones the
    rev and builds the hook environment from scratch (a pip install of gitevals from it)
    in the run's store when no test has yet."""
    path = into / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    Repo(path).commit({".pre-commit-config.yaml": config(project_rev())}, msg="config")
    pc = (sys.executable, "-m", "pre_commit")
    code, out = run(path, env, *pc, "install", "--hook-type", "pre-commit",
                    "--hook-type", "pre-push")
    assert code == 0, out
    started = time.monotonic()
    code, out = run(path, env, *pc, "install-hooks", timeout=900)
    assert code == 0, out
    print(f"pre-commit install-hooks took {time.monotonic() - started:.1f}s")


def installed_copy(factory: pytest.TempPathFactory, repo: Repo, env: dict[str, str]) -> None:
    """Make ``repo`` a copy of the repository ``_install`` sets up, once a run (its hook
    scripts, config commit and all; the hook environment is in the store): the tests that
    commit and push through it share one ``pre-commit install`` and ``install-hooks``.
    Needs ``precommit_home`` (the run's store) set in ``env``."""
    assert env.get("PRE_COMMIT_HOME"), "use the precommit_home fixture"
    installed = built_once(factory, "precommit-installed",
                           lambda into: _install(into, env)) / "repo"
    shutil.rmtree(repo.path)
    shutil.copytree(installed, repo.path, symlinks=True)
