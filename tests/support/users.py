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

The user's CLI is ``gitevals.cli.entry`` (what ``python -m gitevals`` runs) in a process
of that user forked from a zygote: one process per test process, started as the user,
that imported gitevals (and what a run imports) once and never ran a command. Each call
is a fresh fork of it with the call's working directory, environment, argv and fds 0-2,
which ends as ``python -m gitevals`` ends; the interpreter's start and ~300 imports (most
of a small run's CPU) are not paid again per call.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import suppress
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
        zygote = _user_setup()
        assert not isinstance(zygote, str), zygote
        return zygote.call(list(args), self.repo.path, {**os.environ, **GIT_ENV, **self.env},
                           timeout)

    def hand_over(self) -> None:
        """Give the repository (written as root) to the user."""
        if self.prefix:
            subprocess.run(["chown", "-R", f"{UID}:{GID}", str(self.repo.path.parent)],
                           check=True)


#: The zygote (``python -c ZYGOTE FD MODULE...``): import gitevals' CLI and ``MODULE``s
#: (what the user needs to import: a Python that cannot, or that cannot see its own
#: executable -- one under a directory private to root -- exits here), say so, then for
#: each request on the control socket FD (a JSON object: ``argv``, ``cwd``, ``env``; with
#: fds 0-2) fork a child that takes them and runs ``entry`` (its ``SystemExit`` ends the
#: child as it ends ``python -m gitevals``), or ``code`` when the request has it; send the
#: child's pid, then its exit status. Nothing runs in the zygote itself but imports.
ZYGOTE = """\
import json, os, socket, sys
if not os.path.exists(sys.executable):
    sys.exit(1)
import gitevals.cli
for name in sys.argv[2:]:
    __import__(name)
control = socket.socket(fileno=int(sys.argv[1]))
control.send(b"ready")
while True:
    msg, fds, _flags, _addr = socket.recv_fds(control, 1 << 20, 3)
    if not msg:
        break
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        control.close()
        request = json.loads(msg)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["gitevals", *request["argv"]]
        if "code" in request:
            exec(request["code"])
        gitevals.cli.entry()
    for fd in fds:
        os.close(fd)
    control.send(str(pid).encode())
    control.send(str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])).encode())
"""

#: What the user must be able to import, and what ``gitevals run`` of a task imports
#: beyond the CLI: imported once, by the zygote.
WARM = ("pygit2", "yaml", "jsonschema", "rich", "gitevals.api", "gitevals.run.runner",
        "gitevals.run.tasks", "gitevals.run.draft", "gitevals.run.keep",
        "gitevals.report.suite", "gitevals.report.calibration", "gitevals.diff.power")
PREFIX = ("setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups")


class _Zygote:
    """The user's gitevals, imported once and forked per call (``ZYGOTE``)."""

    def __init__(self, python: str, extra: dict[str, str]) -> None:
        """Start it as the user with ``python`` and ``extra`` in its environment; ``ready``
        says whether it imported everything."""
        self.python, self.extra = python, extra
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = _user_home()
        self.proc = subprocess.Popen(
            [*PREFIX, python, "-c", ZYGOTE, str(theirs.fileno()), *WARM],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
            env={**os.environ, **GIT_ENV, "HOME": str(self.home),
                 "XDG_CACHE_HOME": str(self.home / "cache"), **extra})
        theirs.close()
        self.ready = False
        atexit.register(self.close)
        self.control.settimeout(120)
        try:
            self.ready = self.control.recv(16) == b"ready"
        except TimeoutError:
            self.ready = False
        self.control.settimeout(None)
        if not self.ready:
            self.close()

    def call(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float,
             code: str | None = None) -> Result:
        """``gitevals ARGV`` (or ``code``) in ``cwd`` with exactly ``env``, as the user;
        a call past ``timeout`` is killed and raises ``TimeoutExpired``, as
        ``subprocess.run``'s."""
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": env,
                              **({} if code is None else {"code": code})}).encode()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                open(os.devnull, "rb") as nothing:
            socket.send_fds(self.control, [request],
                            [nothing.fileno(), out.fileno(), err.fileno()])
            started = self.control.recv(32)
            assert started, "the unprivileged user's zygote is gone"
            pid = int(started)
            self.control.settimeout(timeout)
            try:
                status = self.control.recv(32)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self.control.settimeout(None)
                self.control.recv(32)
                raise subprocess.TimeoutExpired(["gitevals", *argv], timeout) from None
            finally:
                self.control.settimeout(None)
            out.seek(0)
            err.seek(0)
            return Result(int(status), *(_text(f.read()) for f in (out, err)))

    def close(self) -> None:
        self.control.close()
        if self.proc.poll() is None and not self.ready:
            self.proc.kill()
        with suppress(subprocess.TimeoutExpired):
            self.proc.communicate(timeout=10)
        shutil.rmtree(self.home, ignore_errors=True)


def _text(data: bytes) -> str:
    """Output as ``subprocess.run(text=True)`` gave it: UTF-8, universal newlines."""
    return data.decode("utf-8", "surrogateescape").replace("\r\n", "\n").replace("\r", "\n")


def _user_zygote() -> _Zygote | None:
    """The user's zygote on a Python the user can import gitevals with: this one, or the
    system's of the same version with this environment's packages on ``PYTHONPATH``."""
    zygote = _Zygote(sys.executable, {})
    if zygote.ready:
        return zygote
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return None
    extra = {"PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])}
    zygote = _Zygote(system, extra)
    return zygote if zygote.ready else None


def _user_problem(zygote: _Zygote) -> str | None:
    """Why bubblewrap cannot run for the unprivileged user here, or None."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    done = zygote.call([], zygote.home, {**os.environ, **GIT_ENV, **zygote.extra,
                                         "HOME": str(zygote.home)}, 60,
                       code="from gitevals.tasks.sandbox import probe; "
                            f"sys.exit(probe({bwrap!r}) or 0)")
    if done.code == 0:
        return None
    return (f"bubblewrap cannot run unprivileged on this kernel ({done.err.strip()}): "
            f"raise sysctl {USERNS[0]} (or set {USERNS[1]}=1, {USERNS[2]}=0)")


def _user_home() -> Path:
    """A fresh directory the unprivileged user may enter (under the system's temp dir)."""
    home = Path(tempfile.mkdtemp(prefix="gitevals-user-"))
    os.chmod(home, 0o755)
    return home


@functools.cache
def _user_setup() -> _Zygote | str:
    """The unprivileged user's zygote (its Python, the environment it needs), or why the
    user's tests skip. Made once per test process: the answer is the machine's, not a
    test's, and each call of the user's CLI is a fork of it."""
    zygote = _user_zygote()
    if zygote is None:
        return "no Python the unprivileged user may run gitevals with"
    problem = _user_problem(zygote)
    if problem is not None:
        zygote.close()
        return problem
    return zygote


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
    zygote = _user_setup()
    if isinstance(zygote, str):
        pytest.skip(zygote)
    home = _user_home()
    try:
        env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), **zygote.extra}
        path = home / "repo"
        path.mkdir()
        git(path, "init", "-q", "-b", "main")
        yield Who("user", Repo(path), list(PREFIX), zygote.python, env)
    finally:
        shutil.rmtree(home, ignore_errors=True)
