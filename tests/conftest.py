"""Shared fixtures: real git repos in tmp_path and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


def git(cwd: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    """Run real git in ``cwd``; returns stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          input=input, env={**os.environ, **GIT_ENV})
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


@dataclass
class Repo:
    """A real git work tree in a temp dir."""

    path: Path

    def write(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            p = self.path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)

    def remove(self, *rels: str) -> None:
        for rel in rels:
            (self.path / rel).unlink()

    def git(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return git(self.path, *args, input=input, check=check)

    def commit(self, files: dict[str, str | bytes] | None = None, msg: str = "change") -> str:
        """Write ``files``, stage everything, commit; returns the new commit SHA."""
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", msg)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    yield Repo(path)


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*args: str, cwd: Path, input: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 120,
            umask: int | None = None) -> Result:
    """Run the real ``gitevals`` CLI in a subprocess (as a user would); ``umask`` is set
    by a shell in front of it (this process's own umask is left alone)."""
    argv = [sys.executable, "-m", "gitevals", *args]
    if umask is not None:
        argv = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *argv]
    proc = subprocess.run(argv, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **GIT_ENV, **(env or {})})
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli() -> object:
    return run_cli


#: The README's main job on the bundled example (``--keep DIR`` keeps its repository).
DEMO_SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "demo" / "run_demo.py"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example's repository after the README's main job (v1 and v2 run)."""
    keep = tmp_path_factory.mktemp("demo") / "repo"
    proc = subprocess.run([sys.executable, str(DEMO_SCRIPT), "--keep", str(keep)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return keep
