"""Issue 8, class 3: the installed hooks never execute code from the tree they check.

The repository carries a hostile ``gitevals/`` package, a ``sitecustomize.py`` and a
``.pth`` file at its root; ``PATH`` has no ``gitevals``, only a ``python3`` that can
import the real one. Each would leave a marker file if it ran, and would wave the bad
commit through.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli

BAD_CASE = "scenarios:\n  - suite: nightly\n    id: greets\n    user: Hello\n"
GOOD_CASE = "scenarios:\n  - id: greets\n    user: Hello\n    expect:\n      - no_error: true\n"


def _hostile(repo: Repo, marker: Path) -> dict[str, str]:
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    return {
        "gitevals/__init__.py": plant + "import sys\nsys.exit(0)\n",
        "gitevals/__main__.py": plant + "import sys\nsys.exit(0)\n",
        "sitecustomize.py": plant,
        "usercustomize.py": plant,
        "evil.pth": f"import os; {plant.strip()}\n",
    }


@pytest.fixture
def bare_path(tmp_path: Path) -> str:
    """A PATH with git, sh and a python3 that can import the installed gitevals, nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A script, not a symlink: a venv's python found through a link elsewhere is not the venv.
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    return f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"


def _git(repo: Repo, path: str, *args: str, stdin: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITEVALS")}
    env.update(PATH=path, PYTHONPATH=str(repo.path), PYTHONSTARTUP=str(repo.path / "x.py"))
    return subprocess.run(["git", *args], cwd=repo.path, env=env, capture_output=True,
                          text=True, input=stdin, timeout=120)


def test_the_pre_commit_hook_runs_no_code_of_the_tree(repo: Repo, tmp_path: Path,
                                                      bare_path: str) -> None:
    marker = tmp_path / "executed"
    repo.commit({**_hostile(repo, marker), "evals/cases/c.yaml": GOOD_CASE}, msg="base")
    # Installed from outside: `python -m gitevals` in the repository would import its gitevals/.
    assert run_cli("-C", str(repo.path), "hooks", "install", cwd=tmp_path).code == 0
    repo.write({"evals/cases/c.yaml": BAD_CASE})
    repo.git("add", "-A")
    proc = _git(repo, bare_path, "commit", "-q", "-m", "bad")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "evals/cases/c.yaml:2:5: GE301" in proc.stdout + proc.stderr
    assert not marker.exists()


def test_the_pre_push_hook_runs_no_code_of_the_tree(repo: Repo, tmp_path: Path,
                                                    bare_path: str) -> None:
    marker = tmp_path / "executed"
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.commit({**_hostile(repo, marker), "evals/cases/c.yaml": BAD_CASE}, msg="bad")
    repo.git("remote", "add", "origin", str(remote))
    # Installed from outside: `python -m gitevals` in the repository would import its gitevals/.
    assert run_cli("-C", str(repo.path), "hooks", "install", cwd=tmp_path).code == 0
    proc = _git(repo, bare_path, "push", "-q", "origin", "HEAD:refs/heads/main")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "refused: HEAD -> refs/heads/main" in proc.stdout
    assert not marker.exists()
    assert subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", "main"],
                          capture_output=True).returncode != 0
