"""Running the real CLI as root and as an unprivileged user, for the sandbox's tests.

CI runs as root, where bubblewrap keeps the sandbox's capabilities unless told
otherwise; a developer runs as a user, where the kernel's user namespaces do the work.
The sandbox must hold both ways, so each test of it runs once as each ``Who``:

- ``root``: this process's own user when that is root (skipped otherwise: nobody else
  can become root);
- ``user``: uid/gid 65534 (``nobody``) through ``setpriv`` when this process is root,
  else this process's own (unprivileged) user.

A user's repository lives in a fresh directory it owns under the system temporary
directory (pytest's own is private to root), and its interpreter is one the user may
execute: this one, or the system's ``python3`` of the same version with this
environment's packages on ``PYTHONPATH``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, Repo, Result, git, run_cli

UID = GID = 65534
ROOT = Path(__file__).resolve().parents[2]
USERNS = ("user.max_user_namespaces", "kernel.unprivileged_userns_clone",
          "kernel.apparmor_restrict_unprivileged_userns")


@dataclass
class Who:
    """Whom a test runs the CLI as: the repository, the prefix that becomes that user,
    and the Python that user runs gitevals (and the targets) with."""

    name: str
    repo: Repo
    prefix: list[str] = field(default_factory=list)
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)

    def cli(self, *args: str, timeout: float = 120) -> Result:
        """The real ``gitevals`` CLI in the repository, as this user: as this process's
        own user in this process (``run_cli``: no Python start, no re-import), as
        another user in a child that becomes it."""
        if not self.prefix:
            return run_cli(*args, cwd=self.repo.path, env=self.env, timeout=timeout)
        self.hand_over()
        argv = [*self.prefix, self.python, "-m", "gitevals", *args]
        proc = subprocess.run(argv, cwd=self.repo.path, capture_output=True, text=True,
                              timeout=timeout,
                              env={**os.environ, **GIT_ENV, **self.env})
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def hand_over(self) -> None:
        """Give the repository (written as root) to the user."""
        if self.prefix:
            subprocess.run(["chown", "-R", f"{UID}:{GID}", str(self.repo.path.parent)],
                           check=True)


def _as_user(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups",
                           *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, cwd="/")


def _user_python(env: dict[str, str]) -> tuple[str, dict[str, str]] | None:
    """A Python the unprivileged user can import gitevals with, and its environment."""
    probe = ["-c", "import os, sys, gitevals, pygit2, yaml, jsonschema, rich; "
             "sys.exit(not os.path.exists(sys.executable))"]
    if _as_user([sys.executable, *probe], env).returncode == 0:
        return sys.executable, {}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return None
    extra = {"PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])}
    if _as_user([system, *probe], {**env, **extra}).returncode == 0:
        return system, extra
    return None


def _user_problem(env: dict[str, str], python: str) -> str | None:
    """Why bubblewrap cannot run for the unprivileged user here, or None."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    done = _as_user([python, "-c", "import sys; from gitevals.tasks.sandbox import probe; "
                     f"sys.exit(probe({bwrap!r}) or 0)"], env)
    if done.returncode == 0:
        return None
    return (f"bubblewrap cannot run unprivileged on this kernel ({done.stderr.strip()}): "
            f"raise sysctl {USERNS[0]} (or set {USERNS[1]}=1, {USERNS[2]}=0)")


def _user_home() -> Path:
    """A fresh directory the unprivileged user may enter (under the system's temp dir)."""
    home = Path(tempfile.mkdtemp(prefix="gitevals-user-"))
    os.chmod(home, 0o755)
    return home


@functools.cache
def _user_setup() -> tuple[str, dict[str, str]] | str:
    """The unprivileged user's Python and the environment it needs, or why the user's
    tests skip. Probed once per test process: the answer is the machine's, not a test's,
    and the probe starts two or three interpreters (importing gitevals) and bubblewrap."""
    home = _user_home()
    try:
        env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
        found = _user_python(env)
        if found is None:
            return "no Python the unprivileged user may run gitevals with"
        python, extra = found
        problem = _user_problem({**env, **extra}, python)
        return (python, extra) if problem is None else problem
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(params=["root", "user"])
def who(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Who]:
    """The CLI as root and as an unprivileged user, each with a fresh repository."""
    yield from _who(request.param, tmp_path)


@pytest.fixture
def me(tmp_path: Path) -> Iterator[Who]:
    """The CLI as this process's own user (for what does not depend on the user)."""
    yield from _who("me", tmp_path)


def _who(name: str, tmp_path: Path) -> Iterator[Who]:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (Debian: bubblewrap)")
    root = os.geteuid() == 0
    if name == "root" and not root:
        pytest.skip("only root can run the sandbox as root")
    if name in ("root", "me") or not root:
        path = tmp_path / "repo"
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        yield Who(name, Repo(path), env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
        return
    setup = _user_setup()
    if isinstance(setup, str):
        pytest.skip(setup)
    python, extra = setup
    home = _user_home()
    try:
        env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), **extra}
        path = home / "repo"
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        prefix = ["setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups"]
        yield Who("user", Repo(path), prefix, python, env)
    finally:
        shutil.rmtree(home, ignore_errors=True)
