"""Driving the run's supervisor (``gitevals.run.reaper.Supervisor``) directly: the
targets the reaper tests start, and how they find, wait for and clean up after them."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from gitevals.run import reaper

#: Leaves a process in a session of its own (its pid in argv[1]), then waits for stdin's
#: end and exits with code argv[2].
LEAVES = ("import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n"
          "    open(sys.argv[1], 'w').write(str(os.getpid()))\n    time.sleep(600)\n"
          "sys.stdin.read()\nsys.exit(int(sys.argv[2]))\n")


def warm_argv(spec: str = "agent:respond") -> list[str]:
    """The argv of a python target's warm worker for ``spec``, as a run starts it."""
    from gitevals.run import pyworker

    return [sys.executable, pyworker.__file__, "--zygote", spec]


def start(sup: reaper.Supervisor, cwd: Path, argv: list[str],
          zygote: list[str] | None = None) -> tuple[int, int]:
    """Start ``argv`` (a fork of the warm worker ``zygote`` when given, its import allowed
    30 s) with stdin a pipe and stdout/stderr /dev/null; (pid, stdin's fd)."""
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        return sup.spawn(argv, str(cwd), None, (r, null, null), zygote, 30 if zygote else 0), w
    finally:
        os.close(r)
        os.close(null)


def wait_for(path: Path) -> int:
    """The pid a process wrote to ``path`` (waiting up to 30 s for it)."""
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(path.read_text())


def kill_if_ours(pid: int, path: Path) -> None:
    """SIGKILL ``pid`` if it is still the process ``LEAVES`` started with ``path``."""
    cmd = Path(f"/proc/{pid}/cmdline")
    if cmd.exists() and str(path).encode() in cmd.read_bytes():
        os.kill(pid, signal.SIGKILL)


def gone(pid: int, grace: float = 2.0, period: float = 0.05) -> bool:
    """Whether ``pid`` is gone (not even a zombie), waiting up to ``grace`` s."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(period)


def start_leaving(sup: reaper.Supervisor, where: Path, name: str = "left",
                  code: int = 0) -> tuple[int, int, int, Path]:
    """Start ``LEAVES`` (as ``where/t.py``) exiting with ``code`` once its stdin ends, and
    wait for the process it leaves: (the target's pid, its stdin's fd, the leftover's
    pid, the file the leftover's pid is in -- for ``kill_if_ours``)."""
    script = where / "t.py"
    if not script.exists():
        script.write_text(LEAVES)
    pidfile = where / f"{name}.pid"
    pid, stdin = start(sup, where, [sys.executable, "t.py", str(pidfile), str(code)])
    return pid, stdin, wait_for(pidfile), pidfile
