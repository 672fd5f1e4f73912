"""The real pre-commit framework over this checkout's committed ``.pre-commit-hooks.yaml``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import git
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
