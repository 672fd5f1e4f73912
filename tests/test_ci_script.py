"""``.ci/run``: the checks (``.ci/lint``: ruff, import order, mypy --strict, the layers,
the Any/cast budget and the size of a function) run before the tests and fail CI when
they fail; the last command is exactly the README's test command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def commands(script: Path) -> list[str]:
    """The script's command lines, continuation lines joined, comments and blanks dropped."""
    text = re.sub(r"\\\n\s*", "", script.read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def readme_test_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if ".venv/bin/python -m pytest" in line]


def test_ci_runs_the_readme_test_command_last_after_the_checks() -> None:
    run = commands(ROOT / ".ci" / "run")
    readme = readme_test_commands()
    assert readme and all(line == run[-1] for line in readme), (readme, run[-1])
    assert run.index(".ci/lint") < len(run) - 1
    assert "pip install -q -e '.[test,ray]'" in run[run.index(".ci/lint") - 1]


def test_the_checks_are_ruff_import_order_strict_mypy_the_layers_and_function_size() -> None:
    lint = [c for c in commands(ROOT / ".ci" / "lint") if not c.startswith(("echo", "set", "cd"))]
    assert lint == [".venv/bin/ruff check gitevals tests benchmarks",
                    ".venv/bin/ruff check --select I gitevals tests benchmarks",
                    ".venv/bin/mypy",
                    ".venv/bin/python -m pytest -q -p no:randomly -p no:cacheprovider "
                    "tests/test_layers.py tests/test_typing_budget.py tests/test_function_size.py"]
    assert 'strict = true\npython_version = "3.11"\nfiles = ["gitevals"]' in (
        ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_ci_installs_what_a_brand_new_debian_lacks() -> None:
    apt = next(c for c in commands(ROOT / ".ci" / "run") if "apt-get install" in c)
    assert {"git", "python3", "python3-venv", "bubblewrap", "chromium",
            "chromium-driver", "podman"} <= set(apt.split())
    run = commands(ROOT / ".ci" / "run")
    first_git = next(i for i, c in enumerate(run) if c.startswith("git "))
    assert run.index(apt) < first_git  # git is installed before it is used


def _copy(tmp_path: Path, mypy_cache: bool) -> Path:
    """The parts of the repository the checks read, with this checkout's venv and (when
    ``mypy_cache``) its mypy cache (so mypy only checks what a test changes)."""
    if not (ROOT / ".venv" / "bin" / "mypy").is_file():
        pytest.skip("the checks need this checkout's .venv with '.[test]' installed")
    dest = tmp_path / "repo"
    for name in ("gitevals", "tests", "benchmarks", ".ci"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    if mypy_cache and (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", dest / ".mypy_cache")
    shutil.copy2(ROOT / "pyproject.toml", dest)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return _copy(tmp_path, mypy_cache=True)


@pytest.fixture
def copy_for_ruff(tmp_path: Path) -> Path:
    """A copy for a test whose checks stop at ruff: mypy never runs, so no mypy cache (a
    copy of ~100 MB, most of the copy's cost)."""
    return _copy(tmp_path, mypy_cache=False)


def lint(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(repo / ".ci" / "lint")], cwd=repo, capture_output=True,
                          text=True, timeout=280, env={**os.environ, "NO_COLOR": "1"})


def test_a_ruff_finding_fails_the_checks_before_mypy(copy_for_ruff: Path) -> None:
    (copy_for_ruff / "tests" / "test_probe.py").write_text("import sys\nimport os\n")
    proc = lint(copy_for_ruff)
    assert proc.returncode == 1
    assert "F401" in proc.stdout and "I001" in proc.stdout
    assert "== mypy" not in proc.stdout


def test_a_type_error_fails_the_checks(copy: Path) -> None:
    (copy / "gitevals" / "probe.py").write_text('"""Probe."""\n\nCOUNT: int = "three"\n')
    proc = lint(copy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "== mypy" in proc.stdout
    assert 'gitevals/probe.py:3: error: Incompatible types in assignment' in proc.stdout
