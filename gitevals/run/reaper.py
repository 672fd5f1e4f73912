"""Processes end with their trial: every process a target starts is killed when its
conversation ends, whatever it did to get away.

Killing a target's process group is not enough. A child that calls ``setsid`` or
``setpgid`` leaves the group; a daemon that double forks is re-parented to init
when its parent exits, out of reach of anything that walks parent links; a child
that ignores SIGTERM outlives a polite kill. What no process can do is choose its
parent: on Linux an orphan goes to the nearest ancestor marked
``PR_SET_CHILD_SUBREAPER``, and to init only when there is none. So:

- **A supervisor per job slot** (``supervisor_main``: a fresh interpreter that
  imports only the standard library) marks itself a subreaper and starts that
  slot's targets, one conversation at a time. Everything beneath it therefore
  belongs to the slot's current conversation, however many run in parallel. When
  the conversation ends gitevals asks it to ``end``: it kills the target's group,
  then every process still beneath it (found through the parent links in
  ``/proc``, each kill aimed through a pidfd at the process that was seen, so a
  reused pid is never hit), and reaps them; it answers once it has no child left,
  which on a subreaper means nothing is left beneath it. If gitevals dies, the
  supervisor sees its socket close and does the same before it exits.
- **A python target's warm worker** (``gitevals/run/pyworker.py --zygote``) is a child
  of the slot's supervisor that outlives conversations: it imported the module once and
  forks each conversation's process, which it hands over (forking twice, so the
  supervisor adopts it). Sweeps leave the worker and what is beneath it alone; the
  conversation's process and its leftovers are beneath the supervisor as any target's.
- **gitevals itself is a subreaper for the whole run** (``subreaper``): what
  escapes elsewhere -- a grader's children, the subtree of a supervisor that a
  target killed -- is adopted by gitevals and swept when the run ends, before the
  materialized tree is removed.

Not chosen: a cgroup (``cgroup.kill``) needs a delegated, writable cgroup v2,
which an unprivileged process in a CI container rarely has; a PID namespace
(``unshare`` with a user namespace) is disabled for unprivileged users by several
distributions and would run the target as pid 1, with pid 1's signal rules;
gitevals as the only subreaper cannot tell which conversation an adopted orphan
came from, and killing it could break another conversation still running.

Cost (``benchmarks/bench_run.py``): one supervisor start per job slot, two round
trips on a socket pair per conversation, and a scan of ``/proc`` only when
something is still alive beneath the supervisor after its target was killed.

Where this cannot work (not Linux, no ``/proc``, ``prctl`` refused) ``available``
is false and targets are started directly in their own session and killed by
process group, as before: a process that leaves the group can then outlive its
trial. This module is imported by the supervisor: standard library only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket
    import subprocess

PR_SET_CHILD_SUBREAPER = 36
#: A sweep gives up on processes it cannot kill (uninterruptible sleep) after this long.
SWEEP_LIMIT = 5.0
#: How long a fresh supervisor may take to say it is ready (a loaded machine starts slowly).
START_LIMIT = 30.0
#: Beyond its own work, how long gitevals waits for any answer of a supervisor.
ANSWER_LIMIT = 30.0
_MAX_MESSAGE = 1 << 20
_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from gitevals.run.reaper import supervisor_main; supervisor_main()")


def available() -> bool:
    """Whether supervisors can work here (Linux with ``/proc``)."""
    return sys.platform == "linux" and os.path.exists("/proc/self/stat")


def set_subreaper(on: bool = True) -> bool:
    """Mark this process a child subreaper (or not); whether the kernel agreed."""
    if sys.platform != "linux":
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@contextmanager
def subreaper() -> Iterator[bool]:
    """Adopt this process's orphaned descendants while inside; on the way out kill and reap
    every process still beneath it but the children it had on the way in (and theirs): a
    program that calls gitevals keeps its own processes and their exit statuses. Yields
    whether the kernel made it a subreaper."""
    on = set_subreaper(True)
    theirs = frozenset(_children(os.getpid()) or ())
    try:
        yield on
    finally:
        if on:
            sweep(spare=theirs)
            set_subreaper(False)


# --- finding and killing what is beneath a process -----------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of ``pid`` from /proc, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()  # the name in parentheses may hold spaces
    return int(fields[1]), int(fields[19])


def _process_tree() -> dict[int, list[tuple[int, int]]]:
    """parent pid -> [(pid, start time)] of every process, read from /proc."""
    children: dict[int, list[tuple[int, int]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            children.setdefault(st[0], []).append((int(name), st[1]))
    return children


def _children(pid: int) -> list[int] | None:
    """The children of ``pid`` (of every thread of it), from /proc/PID/task/TID/children;
    None where the kernel has no such file (then the whole of /proc is read)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
                return None
        except OSError:
            continue
    return out


def descendants(*roots: int, skip: frozenset[int] = frozenset()) -> dict[int, int]:
    """pid -> start time of every process beneath ``roots``, by the parent links in /proc;
    the processes in ``skip`` and everything beneath them are left out.

    Walks the children files down from ``roots`` (a few reads for a small tree), or reads
    every process of /proc where there are none."""
    found: dict[int, int] = {}
    todo = list(roots)
    tree: dict[int, list[tuple[int, int]]] | None = None
    while todo:
        parent = todo.pop()
        kids = None if tree is not None else _children(parent)
        if kids is None:
            tree = tree if tree is not None else _process_tree()
            pairs = tree.get(parent, [])
        else:
            pairs = [(pid, st[1]) for pid in kids if (st := _stat(pid)) is not None]
        for pid, started in pairs:
            if pid not in found and pid not in skip:
                found[pid] = started
                todo.append(pid)
    return found


def kill_beneath(*roots: int) -> None:
    """SIGKILL every process beneath ``roots`` now, without reaping anything (an
    interrupt: what holds a target's pipes must go before its reader can stop)."""
    if available():
        for pid, started in descendants(*roots).items():
            _kill(pid, started)


def _kill(pid: int, started: int) -> None:
    """SIGKILL ``pid`` if it is still the process that started at ``started``.

    Between reading /proc and the kill the process may exit, be reaped by its parent
    and its pid be reused: the pidfd pins the process checked, never a newcomer.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):  # kernel before 5.3: the check narrows the window
        if (st := _stat(pid)) is not None and st[1] == started:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        if (st := _stat(pid)) is not None and st[1] == started:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    finally:
        os.close(fd)


def _reap_exited(spare: frozenset[int] = frozenset()) -> bool:
    """Reap every child that has exited but those in ``spare`` (another owner waits for
    them); whether any child (running) is left."""
    mine = _children(os.getpid()) if spare else None
    if mine is not None:
        running = False
        for pid in set(mine) - spare:
            with suppress(ChildProcessError):
                running = os.waitpid(pid, os.WNOHANG)[0] == 0 or running
        return running
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def sweep(limit: float = SWEEP_LIMIT, keep: frozenset[int] = frozenset(),
          spare: frozenset[int] = frozenset()) -> list[int]:
    """Kill and reap every process beneath this one but those in ``keep`` and ``spare``
    (and what is beneath them); the pids still there after ``limit`` s.

    Reaps every child but the ``spare`` ones (children another part of this program
    owns and waits for); a ``keep`` child that exited is reaped. On a subreaper "no child
    left" means nothing is left beneath it: orphans come here, not to init.
    """
    deadline = time.monotonic() + limit
    pause = 0.0005
    keep = keep | spare
    while _reap_exited(spare):
        mine = _children(os.getpid())
        if mine is not None and not set(mine) - keep:
            return []  # only the kept ones: nothing to sweep, and no scan of /proc
        left = descendants(os.getpid(), skip=keep)
        if not left:
            return []
        for pid, started in left.items():
            _kill(pid, started)
        if time.monotonic() > deadline:
            return sorted(left)
        time.sleep(pause)  # killed processes take a moment to become zombies
        pause = min(pause * 2, 0.05)
    return []


# --- the supervisor process ------------------------------------------------------------


def _spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str] | None,
           fds: Sequence[int]) -> int:
    """Start ``argv`` in its own session on stdin/stdout/stderr ``fds``, found on the
    PATH of ``env`` as ``subprocess`` would; raises ``OSError`` like ``Popen``."""
    if len(fds) != 3 or not argv:
        raise OSError(0, "the request carried no argv or not three pipes")
    os.chdir(cwd)
    env = os.environ if env is None else env
    actions = [(os.POSIX_SPAWN_DUP2, fd, i) for i, fd in enumerate(fds)]
    exe = argv[0]
    paths = ([exe] if os.path.dirname(exe)
             else [os.path.join(d, exe) for d in os.get_exec_path(env)])
    error: OSError = FileNotFoundError(2, os.strerror(2))
    found: OSError | None = None  # the first path that exists but cannot run says why
    for path in paths:
        try:
            # SIGPIPE and SIGXFSZ are ignored by Python: give the target the defaults back.
            return os.posix_spawn(path, list(argv), env, file_actions=actions, setsid=True,
                                  setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except (FileNotFoundError, NotADirectoryError) as exc:
            error = exc
        except OSError as exc:
            found = found or exc
    raise found or error


def await_exit(pid: int, wait: float, ended: Callable[[], bool] | None = None) -> None:
    """Return once process ``pid`` has exited, or after ``wait`` s. Without a pidfd
    (kernels before 5.3) ``ended`` is asked every 2 ms; by default: child ``pid`` exited.

    A pidfd wakes us the moment it exits: a sleeping poll would add its period to
    every conversation (``benchmarks/bench_run.py``).
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:  # gone already
        return
    except (OSError, AttributeError):  # kernel before 5.3: poll
        done = ended or (lambda: _exit_code(pid) is not None)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not done():
            time.sleep(0.002)
        return
    try:
        select.select([fd], [], [], wait)
    finally:
        os.close(fd)


def _exit_code(pid: int) -> int | None:
    """Child ``pid``'s exit code (-signal when killed) if it has exited; it is not reaped."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _status(target: int, wait: float) -> int | None:
    """The target's exit code once it exits (within ``wait`` s), without reaping it:
    its pid, which is its process group id, stays reserved until ``_end``."""
    if (code := _exit_code(target)) is None and wait > 0:
        await_exit(target, wait)
        code = _exit_code(target)
    return code


def _end(target: int, keep: frozenset[int] = frozenset()) -> dict[str, Any]:
    """Kill the target's group and everything else beneath us but ``keep`` (the warm
    workers); reap it all."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(target, signal.SIGKILL)
    code = _status(target, SWEEP_LIMIT)
    return {"status": code, "left": sweep(keep=keep)}


class _Zygote:
    """A warm python worker (``gitevals/run/pyworker.py --zygote``) started by this
    supervisor: it imported the target module once and forks one child a conversation,
    which it hands over to us (see ``pyworker._fork``)."""

    def __init__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None) -> None:
        import socket

        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            self.pid = _spawn(argv, cwd, env, (theirs.fileno(), devnull, devnull))
        except OSError:
            self.sock.close()
            raise
        finally:
            theirs.close()
            os.close(devnull)
        ready = self._receive()
        self.error: str | None = None if ready.get("ready") else str(
            ready.get("error") or "the python worker exited while importing the target")

    def _receive(self) -> dict[str, object]:
        try:
            data = self.sock.recv(_MAX_MESSAGE)
        except OSError:
            data = b""
        answer = json.loads(data) if data else {}
        return answer if isinstance(answer, dict) else {}

    def fork(self, fds: Sequence[int]) -> dict[str, object]:
        """One conversation on ``fds``: ``{"pid"}`` (now our child), or what failed."""
        import socket

        try:
            socket.send_fds(self.sock, [b'{"op": "fork"}'], list(fds))
        except OSError:
            return {}
        return self._receive()

    def stop(self) -> None:
        self.sock.close()
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


class _Slot:
    """One job slot's state in its supervisor: the target of the conversation it serves
    (at most one at a time), and the warm workers of the python targets it started."""

    def __init__(self) -> None:
        self.target: int | None = None
        self.zygotes: dict[str, _Zygote] = {}

    def kept(self) -> frozenset[int]:
        return frozenset(z.pid for z in self.zygotes.values())

    def serve(self, request: dict[str, Any], fds: list[int]) -> dict[str, object]:
        op = request.get("op")
        try:
            if op == "spawn" and self.target is None:
                return self._spawn(request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        if op == "status" and self.target is not None:
            return {"status": _status(self.target, float(request.get("wait", 0)))}
        if op == "end" and self.target is not None:
            target, self.target = self.target, None
            return _end(target, self.kept())
        return {"error": f"unexpected request {op!r}"}

    def _spawn(self, request: dict[str, Any], fds: list[int]) -> dict[str, object]:
        argv, cwd, env = request["argv"], request["cwd"], request.get("env")
        try:
            if request.get("zygote"):
                answer = self._warm(request["zygote"], cwd, env, fds)
                if answer is not None:
                    return answer
            self.target = _spawn(argv, cwd, env, fds)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        return {"pid": self.target}

    def _warm(self, argv: list[str], cwd: str, env: Mapping[str, str] | None,
              fds: list[int]) -> dict[str, object] | None:
        """A child of the warm worker for ``argv`` (started now if it is not running);
        None when there cannot be one, and the target is started cold."""
        key = json.dumps([argv, cwd, env], sort_keys=True)
        for _ in range(2):  # a worker a conversation killed is started again, once
            zygote = self.zygotes.get(key)
            if zygote is None:
                zygote = self.zygotes[key] = _Zygote(argv, cwd, env)
            if zygote.error is not None:
                return {"start_failed": zygote.error}
            pid = zygote.fork(fds).get("pid")
            if isinstance(pid, int):
                self.target = pid
                return {"pid": pid}
            del self.zygotes[key]
            zygote.stop()
            sweep(keep=self.kept())
        return None


def supervisor_main() -> None:
    """Serve one job slot of ``gitevals run`` over the socket on fd 0, then sweep and exit."""
    import socket

    if not set_subreaper(True):
        os._exit(3)
    sock = socket.socket(fileno=os.dup(0))  # a socket pair end (dup: close-on-exec)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    sock.send(b'{"ready": true}')
    slot = _Slot()
    try:
        while True:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 3, socket.MSG_CMSG_CLOEXEC)
            if not data:
                break  # gitevals is done (or gone)
            sock.send(json.dumps(slot.serve(json.loads(data), fds)).encode())
    finally:  # whatever went wrong, nothing stays behind
        sweep()
        os._exit(0)


# --- gitevals' end of a supervisor -----------------------------------------------------


class SupervisorGone(Exception):
    """The supervisor died or stopped answering; it has been killed."""


class StartFailed(Exception):
    """A python target's module did not import in its warm worker (the worker's line)."""


class Supervisor:
    """gitevals' end of one supervisor: starts, asks about and ends one target at a time.

    Not thread-safe: one supervisor serves one job slot (one thread).
    """

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.proc = proc
        self.sock = sock
        self.gone = False

    @classmethod
    def start(cls) -> Supervisor | None:
        """A ready supervisor, or None where there cannot be one."""
        if not available():
            return None
        import socket
        import subprocess

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _BOOT, package_parent],
                                    stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        sup = cls(proc, ours)
        try:
            ready = sup._receive(START_LIMIT)
        except SupervisorGone:
            return None
        return sup if ready.get("ready") else None

    def _lost(self, why: str) -> SupervisorGone:
        """Kill the supervisor (what was beneath it is adopted by gitevals' own subreaper)."""
        self.gone = True
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.sock.close()
        return SupervisorGone(why)

    def _receive(self, limit: float) -> dict[str, Any]:
        try:
            self.sock.settimeout(limit)
            data = self.sock.recv(_MAX_MESSAGE)
        except OSError as exc:  # TimeoutError included
            raise self._lost(f"no answer: {exc}") from None
        if not data:
            raise self._lost("it exited")
        answer: dict[str, Any] = json.loads(data)
        return answer

    def _ask(self, request: dict[str, Any], limit: float, fds: Sequence[int] = ()
             ) -> dict[str, Any]:
        import socket

        if self.gone:
            raise SupervisorGone("it was killed before")
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
        except OSError as exc:
            raise self._lost(f"cannot send: {exc}") from None
        return self._receive(limit + ANSWER_LIMIT)

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None,
              fds: Sequence[int], zygote: Sequence[str] | None = None,
              wait: float = 0) -> int:
        """Start a target on ``fds`` (its stdin, stdout, stderr); its pid. A target that
        cannot start raises ``OSError`` as ``Popen`` would.

        With ``zygote`` (a python target's warm worker argv), the target is a fresh fork
        of that worker, which this supervisor starts on first use and keeps; ``wait`` is
        how long its import may take. A module that does not import raises
        ``StartFailed`` with the worker's one line."""
        request = {"op": "spawn", "argv": list(argv), "cwd": cwd,
                   "env": None if env is None else dict(env)}
        if zygote:
            request["zygote"] = list(zygote)
        answer = self._ask(request, wait, fds)
        if "start_failed" in answer:
            raise StartFailed(str(answer["start_failed"]))
        if "pid" not in answer:
            raise OSError(answer.get("errno") or 0, answer.get("error", "cannot start"))
        return int(answer["pid"])

    def status(self, wait: float) -> int | None:
        """The target's exit code if it exits within ``wait`` s (it is not reaped)."""
        code = self._ask({"op": "status", "wait": wait}, wait).get("status")
        return None if code is None else int(code)

    def end(self) -> int | None:
        """Kill the target and everything beneath the supervisor; the target's exit code."""
        code = self._ask({"op": "end"}, 2 * SWEEP_LIMIT).get("status")
        return None if code is None else int(code)

    def close(self) -> None:
        """Let the supervisor sweep and exit; kill it if it does not."""
        import subprocess

        if self.gone:
            return
        self.gone = True
        self.sock.close()
        try:
            self.proc.wait(timeout=SWEEP_LIMIT + ANSWER_LIMIT)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
