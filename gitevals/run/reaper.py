"""Processes end with their trial: every process a target starts is killed when its
conversation ends, whatever it did to get away.

Killing a target's process group is not enough. A child that calls ``setsid`` or
``setpgid`` leaves the group; a daemon that double forks is re-parented to init
when its parent exits, out of reach of anything that walks parent links; a child
that ignores SIGTERM outlives a polite kill. What no process can do is choose its
parent: on Linux an orphan goes to the nearest ancestor marked
``PR_SET_CHILD_SUBREAPER``, and to init only when there is none. So:

- **A holder per conversation.** The target is started beneath a process of its own,
  marked a subreaper, that then waits as a small program (``cat`` reading a pipe: ~1.3 MB
  resident, not a Python interpreter) until it is killed. Everything the target starts,
  and every orphan of it, is beneath its holder. The holder never reaps: when the target
  exits it stays a zombie, so its pid -- its process group id -- stays reserved and its
  exit code readable in ``/proc`` until the conversation ends. Then gitevals kills the
  target's group and every process still alive beneath the holder (found through the
  parent links in ``/proc``, each kill aimed through a pidfd at the process that was
  seen, so a reused pid is never hit) until only the dead are left, which can no longer
  fork; the supervisor then kills the holder and reaps them all.
- **One supervisor for the run** (``supervisor_main``: a fresh interpreter that imports
  only the standard library, itself a subreaper) forks the holders, so they are its
  children, and keeps the python targets' warm workers. Every job slot asks it on one
  socket, in turn; each request is a fork or a kill, a millisecond or two. If gitevals
  dies, the supervisor sees the socket close and kills everything beneath it before it
  exits; if the supervisor dies, its holders read the end of their pipe and exit, and
  what was beneath them goes to gitevals' own subreaper.
- **A python target's warm worker** (``gitevals/run/pyworker.py --zygote``) is a child
  of the supervisor that outlives conversations: it imported the module once and forks
  each conversation's holder, which forks the conversation's process from the worker's
  memory and becomes a holder. The worker reaps a holder only when the supervisor, having
  killed it, asks: until then its pid is its own.
- **A kept holder per job slot, when the slots are few** (``_kept_holder``; gitevals
  asks for one when a run has no more slots than CPUs, ``targets.keeps_holders``): a copy
  of the supervisor forked once per slot, a subreaper in a session of its own, that
  gitevals asks directly (a socket of its own) to start each conversation's target and,
  at the conversation's end, to kill and reap everything beneath it (``_Kept``), so one
  conversation at a time is beneath it. No fork, no exec, no round trip to the
  supervisor per conversation; ~10 MB resident (~3 MB PSS: the rest is the supervisor's
  pages, shared) instead of ~1.3 MB, hence only for few slots. It exits when the
  supervisor is gone (the same pipe as ``cat``); one that dies or stops answering (a
  target killed or stopped it) is ended by the supervisor as any holder, and its slot
  gets a new one.
- **gitevals itself is a subreaper for the whole run** (``subreaper``): what
  escapes elsewhere -- a grader's children, the subtree of a holder that a target
  killed -- is adopted by gitevals and swept when the run ends, before the
  materialized tree is removed.

Why holders, not a supervisor per job slot (as before): an interpreter per slot kept
~11 MB resident, ~700 MB at ``--jobs 64``; a holder ~1.3 MB, and only while its
conversation runs. Why not the one supervisor as the only subreaper: the orphans of every
conversation would reach the same process, which could not tell whose they are.

Not chosen: a cgroup (``cgroup.kill``) needs a delegated, writable cgroup v2,
which an unprivileged process in a CI container rarely has; a PID namespace
(``unshare`` with a user namespace) is disabled for unprivileged users by several
distributions and would run the target as pid 1, with pid 1's signal rules;
gitevals as the only subreaper cannot tell which conversation an adopted orphan
came from, and killing it could break another conversation still running.

Cost (``benchmarks/bench_run.py``, ``benchmarks/bench_conversations.py``,
``benchmarks/bench_supervisor.py``): one supervisor start per run, ~1.5x the CPU of a
bare ``python -I -S -c pass`` (3.6x when it imported ``json``, ``typing``, ``socket`` and
what they import); per conversation a fork and an exec of its holder, two round trips on
a socket, and a few reads of ``/proc`` when it ends (~7 ms of CPU in all, measured with a
trivial target); with kept holders, two round trips with the slot's holder and its
``posix_spawn`` of the target (~0.5 ms).

Where this cannot work (not Linux, no ``/proc``, ``prctl`` refused) ``available``
is false and targets are started directly in their own session and killed by
process group, as before: a process that leaves the group can then outlive its
trial.

This module is imported by the supervisor, so at its top it imports only modules that
cost its start next to nothing (``os``, ``select``, ``_socket``, ``marshal``...): no
``typing``, ``json``, ``socket``, ``signal``, ``contextlib`` (each pulls in ``enum``,
``re``, ``collections`` or ``functools``: ``tests/run/test_reaper.py`` checks the lot).
gitevals and the supervisor talk ``marshal`` (one interpreter, ``sys.executable``, on
both ends); its link to a python target's warm worker, which may be another interpreter,
stays JSON, written and read without ``json`` (``_to_worker``, ``_from_worker``).
"""

from __future__ import annotations

import _socket
import marshal
import os
import select
import sys
import time

# Not ``typing.TYPE_CHECKING``: the supervisor imports this module at its start, in every
# run, and ``typing`` alone costs more CPU than the interpreter's own start. Type
# checkers read any constant of this name as true.
TYPE_CHECKING = False

if TYPE_CHECKING:  # names for annotations only
    import mmap
    import signal as _signal  # (``_signal`` has no stub: ``signal`` re-exports its names)
    import socket
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
    from types import TracebackType
    from typing import TypedDict

    class Request(TypedDict, total=False):
        """One request to the supervisor (a ``marshal`` message on its socket, with ``fds``
        beside it): ``op`` is ``spawn``, ``warm``, ``boot``, ``keep`` or ``end``; each
        uses only its own keys."""

        op: str
        argv: list[str]
        boot: list[str]
        cwd: str
        env: dict[str, str] | None
        wait: float
        zygote: list[str]
        holder: int

    class Answer(TypedDict, total=False):
        """The supervisor's answer to a ``Request``: a started target (``pid``,
        ``holder``), a failure as ``OSError`` would say it (``errno``, ``error``), a warm
        worker's state (``ready``, ``slow``, ``start_failed``), or an ended holder
        (``ended``; a kept holder says the target's exit ``code``)."""

        pid: int
        holder: int
        code: int | None
        errno: int | None
        error: str
        start_failed: str
        ready: bool
        slow: bool
        ended: bool
        booting: bool
else:  # ``signal`` itself only wraps ``_signal``'s numbers in enums: ``enum`` is costly
    import _signal

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
    global _PRCTL
    try:
        if _PRCTL is None:  # loaded once: a holder forked from the supervisor calls it too
            import ctypes

            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        return bool(_PRCTL(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


_PRCTL: Callable[..., int] | None = None


class suppress:
    """``contextlib.suppress``, without importing ``contextlib`` (and with it
    ``collections`` and ``functools``) at the supervisor's start."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


class subreaper:
    """Adopt this process's orphaned descendants while inside; on the way out kill and reap
    every process still beneath it but the children it had on the way in (and theirs): a
    program that calls gitevals keeps its own processes and their exit statuses. ``as``
    gives whether the kernel made it a subreaper. (A class, not ``contextmanager``: see
    ``suppress``.)"""

    def __enter__(self) -> bool:
        self.on = set_subreaper(True)
        self.theirs = frozenset(_children(os.getpid()) or ())
        return self.on

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.on:
            sweep(spare=self.theirs)
            set_subreaper(False)


# --- finding and killing what is beneath a process -----------------------------------


def _read(path: str) -> bytes:
    """The whole of a small /proc file, read with bare file descriptors: a buffered file
    object costs several times the read, and each conversation's end reads a few of them
    in gitevals and again in the supervisor."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = [os.read(fd, 4096)]
        while parts[-1]:
            parts.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(parts)


def _fields(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat from the state on (field 3), or None once it is gone."""
    try:
        data = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return data[data.rindex(b")") + 2:].split()  # the name in parentheses may hold spaces


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of ``pid`` from /proc, or None once it is gone."""
    fields = _fields(pid)
    return None if fields is None else (int(fields[1]), int(fields[19]))


def _forked(worker: int, holder: int, target: int) -> bool:
    """Whether ``holder`` is a child of the warm worker and ``target`` a child of
    ``holder``, as a fork the worker made is. The worker runs the target's own code, so
    the pids it answers are checked, not trusted: the conversation's end kills them."""
    held, started = _stat(holder), _stat(target)
    return (held is not None and started is not None and held[0] == worker
            and started[0] == holder)


def _process_tree() -> dict[int, list[tuple[int, int, bytes]]]:
    """parent pid -> [(pid, start time, state)] of every process, read from /proc."""
    children: dict[int, list[tuple[int, int, bytes]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (f := _fields(int(name))) is not None:
            children.setdefault(int(f[1]), []).append((int(name), int(f[19]), f[0]))
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
            out += [int(c) for c in _read(f"/proc/{pid}/task/{tid}/children").split()]
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
    return {pid: started for pid, (started, _) in _beneath(roots, skip).items()}


def _beneath(roots: Sequence[int], skip: frozenset[int] = frozenset()
             ) -> dict[int, tuple[int, bytes]]:
    """pid -> (start time, state) of every process beneath ``roots`` (``descendants``):
    each process's stat is read once, its state with its start time."""
    found: dict[int, tuple[int, bytes]] = {}
    todo = list(roots)
    tree: dict[int, list[tuple[int, int, bytes]]] | None = None
    while todo:
        parent = todo.pop()
        kids = None if tree is not None else _children(parent)
        if kids is None:
            tree = tree if tree is not None else _process_tree()
            rows = tree.get(parent, [])
        else:
            rows = [(pid, int(f[19]), f[0]) for pid in kids if (f := _fields(pid)) is not None]
        for pid, started, state in rows:
            if pid not in found and pid not in skip:
                found[pid] = (started, state)
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
                os.kill(pid, _signal.SIGKILL)
        return
    try:
        if (st := _stat(pid)) is not None and st[1] == started:
            _signal.pidfd_send_signal(fd, _signal.SIGKILL)
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
    env = _environ() if env is None else env
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
                                  setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
        except (FileNotFoundError, NotADirectoryError) as exc:
            error = exc
        except OSError as exc:
            found = found or exc
    raise found or error


_ENVIRON: dict[str, str] = {}


def _environ() -> dict[str, str]:
    """This process's environment as a plain dict, made once: ``posix_spawn`` given
    ``os.environ`` decodes every variable again at each start (a tenth of a millisecond
    per conversation in a kept holder). The supervisor never changes its environment."""
    if not _ENVIRON:
        _ENVIRON.update(os.environ)
    return _ENVIRON


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


def zombie_code(pid: int) -> int | None:
    """The exit code (-signal when killed) of ``pid`` once it has exited and is not reaped
    (a target beneath its holder), read from ``/proc``: no need to be its parent. None
    while it runs."""
    fields = _fields(pid)
    if fields is None or fields[0] not in (b"Z", b"X") or len(fields) < 50:
        return None
    return os.waitstatus_to_exitcode(int(fields[49]))


def target_status(pid: int, wait: float) -> int | None:
    """A held target's exit code once it exits (within ``wait`` s)."""
    code = zombie_code(pid)
    if code is None and wait > 0:
        deadline = time.monotonic() + wait
        await_exit(pid, wait, lambda: zombie_code(pid) is not None)
        # The pidfd wakes as the kernel turns the process into a zombie: a moment more.
        settle = min(deadline, time.monotonic() + 0.05)
        while (code := zombie_code(pid)) is None and time.monotonic() < settle:
            time.sleep(0.0005)
    return code


def _alive_beneath(root: int) -> dict[int, int]:
    """pid -> start time of every process beneath ``root`` that is not yet dead."""
    return {pid: started for pid, (started, state) in _beneath((root,)).items()
            if state not in (b"Z", b"X")}


def sweep_beneath(holder: int, limit: float = SWEEP_LIMIT) -> list[int]:
    """Kill every process alive beneath ``holder`` until only the dead are left (which
    cannot fork any more); the pids still alive after ``limit`` s. Nothing is reaped: the
    supervisor does, once it has killed the holder."""
    deadline = time.monotonic() + limit
    pause = 0.0005
    while left := _alive_beneath(holder):
        for pid, started in left.items():
            _kill(pid, started)
        if time.monotonic() > deadline:
            return sorted(left)
        time.sleep(pause)  # killed processes take a moment to become zombies
        pause = min(pause * 2, 0.05)
    return []


def hold_program() -> str | None:
    """The small program a holder becomes: ``cat``, reading a pipe that only the
    supervisor writes to (so it exits when the supervisor is gone)."""
    return next((p for p in ("/bin/cat", "/usr/bin/cat") if os.access(p, os.X_OK)), None)


def _hold(lifeline: int, program: str | None, said: int) -> None:
    """Become a holder: wait until killed or the supervisor is gone. Never returns.
    ``said``, the close-on-exec pipe the holder wrote its target's pid to, closes as the
    program starts: once the supervisor read it to its end, the holder is that program
    (a target that looks at its parent on its first turn sees ``cat``).
    (``pyworker._hold`` is the same for the python targets' holders.)"""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(lifeline, 0)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for fd in [int(n) for n in os.listdir("/proc/self/fd")]:  # nothing else: a pipe
            if fd > 2 and fd != said:  # this process kept open would never end
                with suppress(OSError):
                    os.close(fd)
        if program:
            with suppress(OSError):
                os.execve(program, [program], {})
        os.close(said)
        while os.read(0, 4096):  # no such program here: wait as Python
            pass
    finally:
        os._exit(0)


def _kept_holder(link: int, lifeline: int) -> None:
    """Be a job slot's kept holder (forked by the supervisor): a subreaper in a session of
    its own that starts one conversation's target at a time beneath it, asked by gitevals
    on ``link``, and at the conversation's end kills and reaps everything beneath it
    (``sweep``), so the next conversation starts with nothing beneath it. Exits when the
    supervisor is gone (``lifeline``) or gitevals closes ``link``. Never returns."""
    try:
        os.setsid()
        if not set_subreaper(True):
            return
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        for fd in [int(n) for n in os.listdir("/proc/self/fd")]:  # the run's other pipes
            if fd > 2 and fd not in (link, lifeline):  # and sockets are not ours to hold
                with suppress(OSError):
                    os.close(fd)
        sock = _socket.socket(fileno=link)
        buffer = _buffer()
        kept = _Kept()
        while lifeline not in select.select([link, lifeline], [], [])[0]:
            data, fds = _request(sock, buffer)
            if not data:
                break  # gitevals is done with this slot (or gone)
            sock.send(marshal.dumps(kept.turn(marshal.loads(data), fds)))
            if kept.stuck:  # what cannot be killed must not be beneath the next
                os._exit(0)  # conversation: it goes to the supervisor, as from ``cat``
        else:  # the supervisor is gone: as a holder that waits as a program, go at once
            os._exit(0)  # (what is beneath goes to gitevals' subreaper)
    finally:  # a slot that closes leaves nothing beneath its holder
        with suppress(BaseException):
            sweep()
        os._exit(0)


class _Kept:
    """A kept holder's one conversation at a time: ``spawn`` starts its target beneath
    the holder (``{"pid"}`` or the error); ``end`` kills the target and everything else
    beneath the holder, reaps them all and says the target's exit code (``{"code"}``).
    The target is our unreaped child until then: its pid cannot have been reused."""

    def __init__(self) -> None:
        self.target: int | None = None
        self.stuck = False  # a sweep left processes it could not kill: retire

    def turn(self, request: Request, fds: list[int]) -> dict[str, object]:
        try:
            if request.get("op") == "spawn":
                return self._spawn(request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        return {"ended": True, "code": self._end()}

    def _spawn(self, request: Request, fds: list[int]) -> dict[str, object]:
        if self.target is not None:  # never ended (cannot happen): end it first
            self._end()
        try:
            self.target = _spawn(request["argv"], request["cwd"], request.get("env"), fds)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        return {"pid": self.target}

    def _end(self) -> int | None:
        target, self.target = self.target, None
        code = None
        if target is not None:
            with suppress(ProcessLookupError):
                os.kill(target, _signal.SIGKILL)
            with suppress(ChildProcessError):
                if (status := os.waitpid(target, os.WNOHANG))[0] == 0:
                    await_exit(target, SWEEP_LIMIT)  # dying; or stuck, and then bounded
                    status = os.waitpid(target, os.WNOHANG)
                if status[0] == target:
                    code = os.waitstatus_to_exitcode(status[1])
        self.stuck = bool(sweep())
        return code


# --- the warm worker's JSON -----------------------------------------------------------
#
# The warm worker's link is JSON, not ``marshal`` as gitevals' link to the supervisor: the
# worker may run another interpreter (``[target] interpreter``, from Python 3.8 on) whose
# ``marshal`` need not read ours, and it runs the target's code (``marshal`` is not for
# untrusted data). But ``json`` imports ``re``, and with it ``enum``, ``functools`` and
# ``collections``: about the CPU of the rest of the supervisor's start, in every run of a
# python target. Its messages are flat objects (``pyworker`` writes them with ``json.dumps``):
# these are written and read here with the C parts ``json`` itself uses; anything else
# goes to ``json`` whole, so what is read (or the error) is always ``json``'s.

if TYPE_CHECKING:
    _Value = str | int | list[int] | None
    _Message = dict[str, _Value]


def _to_worker(message: _Message) -> bytes:
    """``json.dumps(message).encode()``, byte for byte, for a flat message (strings,
    ints, None, lists of ints)."""
    try:
        from _json import encode_basestring_ascii as text
    except ImportError:  # an interpreter without json's C parts
        import json

        return json.dumps(message).encode()

    def value(v: _Value) -> str:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, list):
            return "[" + ", ".join(int.__repr__(i) for i in v) + "]"
        return "null" if v is None else int.__repr__(v)

    return ("{" + ", ".join(f"{text(k)}: {value(v)}" for k, v in message.items())
            + "}").encode()


def _from_worker(data: bytes) -> object:
    """``json.loads(data)``: a flat object as ``json.dumps`` writes it is read here (keys
    and strings by ``json``'s own C scanner), anything else by ``json``."""
    try:
        return _flat(data.decode("ascii"))
    except (ImportError, ValueError):  # UnicodeDecodeError and json's errors are ValueErrors
        import json

        return json.loads(data)


#: The literals a flat message's values may be, beside strings and ints.
_WORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}


def _flat(text: str) -> dict[str, object]:
    """The object ``text`` is if it is a flat one written by ``json.dumps`` (", " and ": "
    between its parts); ``ValueError`` for any other text, even valid JSON."""
    from _json import scanstring

    if text == "{}":
        return {}
    out: dict[str, object] = {}
    at, before = 0, "{"
    while text.startswith(before, at) and text.startswith('"', at + len(before)):
        key, at = scanstring(text, at + len(before) + 1)
        if not text.startswith(": ", at):
            break
        out[key], at = _flat_value(text, at + 2, scanstring)
        if at == len(text) - 1 and text[at] == "}":
            return out
        before = ", "
    raise ValueError("not a flat JSON object")


def _flat_value(text: str, at: int, scanstring: Callable[[str, int], tuple[str, int]]
                ) -> tuple[object, int]:
    """The string, int, true, false or null at ``text[at:]``, and where it ends."""
    if text.startswith('"', at):
        return scanstring(text, at + 1)
    end = digits = at + 1 if text.startswith("-", at) else at
    while end < len(text) and text[end].isdigit():
        end += 1
    if end > digits and (text[digits] != "0" or end == digits + 1) and (
            end == len(text) or text[end] not in ".eE"):
        return int(text[at:end]), end
    for word, meaning in _WORDS.items():
        if text.startswith(word, at):
            return meaning, at + len(word)
    raise ValueError("not a flat JSON value")


class _Zygote:
    """A warm python worker (``gitevals/run/pyworker.py --zygote``) started by this
    supervisor: it imported the target module once and forks one holder a conversation,
    its child until we have it reaped (see ``pyworker._fork``). Made by ``start``, or by
    ``load`` from a worker started with ``--boot`` before the tree was there."""

    def __init__(self, sock: _socket.socket, pid: int) -> None:
        self.sock, self.pid = sock, pid
        self.slow = False
        self.dead: list[int] = []  # holders we killed, for the worker to reap (``reap``)
        self._buffer = _buffer()
        self.error: str | None = "the python worker has imported nothing yet"

    @classmethod
    def spawn(cls, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None
              ) -> _Zygote:
        """``argv`` started in ``cwd`` on one end of a socket pair, the other end ours."""
        sock, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            pid = _spawn(argv, cwd, env, (theirs.fileno(), devnull, devnull))
        except OSError:
            sock.close()
            raise
        finally:
            theirs.close()
            os.close(devnull)
        return cls(sock, pid)

    @classmethod
    def start(cls, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None,
              wait: float, watch: _socket.socket | None = None) -> _Zygote:
        """A worker for ``argv`` (``--zygote SPEC``) started now, once it has imported."""
        return cls.spawn(argv, cwd, env).loaded(wait, watch)

    def load(self, cwd: str, spec: str, wait: float,
             watch: _socket.socket | None = None) -> _Zygote:
        """This ``--boot`` worker, told to import ``spec`` in ``cwd``, once it has."""
        with suppress(OSError):  # it died: ``loaded`` reads its end and says so
            self.sock.send(_to_worker({"op": "load", "cwd": cwd, "spec": spec}))
        return self.loaded(wait, watch)

    def loaded(self, wait: float, watch: _socket.socket | None = None) -> _Zygote:
        """Wait at most ``wait`` s for the worker's word on its import: ``error`` None
        once it imported, else why not (``slow`` when it took too long). Once ``watch``
        (gitevals' end of this supervisor) has closed -- gitevals was interrupted --
        nobody waits for the import: it ends at once, as ``slow``, and the supervisor
        goes on to see gitevals gone and sweep."""
        deadline = time.monotonic() + wait
        if not _first(self.sock, watch, wait):
            self.slow, self.error = True, "gitevals stopped waiting for the import"
            return self
        self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
        ready = self._receive()
        self.sock.settimeout(None)
        self.error = None if ready.get("ready") else str(
            ready.get("error") or "the python worker exited while importing the target")
        return self

    def _receive(self) -> dict[str, object]:
        try:
            size = self.sock.recv_into(self._buffer)
        except TimeoutError:
            self.slow = True
            size = 0
        except OSError:
            size = 0
        try:  # the target's own code runs in the worker: what it sends may be anything
            answer = _from_worker(self._buffer[:size]) if size else {}
        except (ValueError, RecursionError):  # not JSON, not text, nested past the parser
            answer = {}
        return answer if isinstance(answer, dict) else {}

    def fork(self, fds: Sequence[int], lifeline: int, program: str | None
             ) -> dict[str, object]:
        """One conversation on ``fds``: ``{"pid", "holder"}``, or what failed."""
        request: _Message = {"op": "fork", "hold": program, "reap": self.dead}
        self.dead = []
        try:
            _send_fds(self.sock, _to_worker(request), [*fds, lifeline])
        except OSError:
            return {}
        return self._receive()

    def reap(self, holder: int) -> None:
        """Have the worker reap ``holder``, its child, which we killed: it does before its
        next fork (one request a conversation, not two; until then the dead holder keeps
        its pid). What the holder held is ours once it has died (``_reap_strays``)."""
        self.dead.append(holder)

    def stop(self) -> None:
        self.sock.close()
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, _signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _first(sock: _socket.socket, watch: _socket.socket | None, wait: float) -> bool:
    """False when ``watch`` closes before ``sock`` has something to read (or ``wait`` s
    pass); True otherwise. A message on ``watch`` is left for its reader."""
    deadline = time.monotonic() + wait
    while watch is not None and (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock, watch], [], [], left)
        if sock in readable or not readable:
            return True
        try:
            closed = not watch.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT)
        except BlockingIOError:
            closed = False
        except OSError:
            closed = True
        if closed:
            return False
        watch = None  # a message, not the end: wait for the worker alone
    return True


def _boot_key(argv: Sequence[str], env: Mapping[str, str] | None) -> str:
    """What a ``--boot`` worker and a ``--zygote SPEC`` worker share when one can become
    the other: the interpreter, the worker script, the environment."""
    return _key(argv[:2], env)


def _key(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str = "") -> str:
    """One text for a warm worker's ``argv``, ``env`` and ``cwd``, whatever the order of
    the variables: equal for equal starts, as a dict key."""
    return repr((list(argv), cwd, None if env is None else sorted(env.items())))


class _Holders:
    """The supervisor's state: the holders of the conversations running now (each with
    its target's pid), and the warm workers of the python targets it started."""

    def __init__(self, gitevals: _socket.socket | None = None) -> None:
        self.gitevals = gitevals  # gitevals' end: a wait for an import ends when it closes
        # Only the supervisor holds the write end: holders read its end when it is gone.
        self.lifeline, self._lifeline_w = os.pipe()
        self.program = hold_program()
        self.held: dict[int, int] = {}  # holder pid -> its target's pid
        self.owners: dict[int, _Zygote] = {}  # holder pid -> the warm worker it is a child of
        self.zygotes: dict[str, _Zygote] = {}
        self.booted: dict[str, _Zygote] = {}  # started ``--boot``, told nothing yet
        self.started: set[str] = set()  # ``_boot_key`` of every warm worker started
        self.kept: set[int] = set()  # the job slots' kept holders (``_kept_holder``)
        self.handed: list[int] = []  # descriptors the answer carries (a kept holder's link)

    def serve(self, request: Request, fds: list[int]) -> dict[str, object]:
        op = request.get("op")
        try:
            if op == "spawn":
                return self._spawn(request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        holder = request.get("holder")
        if op == "end" and isinstance(holder, int) and holder in self.kept:
            # its link failed (the holder died, or hangs): ended as a holder of ours (its
            self.kept.discard(holder)  # target, ours once it died, is reaped as a stray)
            self.held[holder] = 0
        if op == "end" and isinstance(holder, int) and holder in self.held:
            return self._end(holder)
        if op == "keep":
            return self._keep()
        if op == "warm":
            return self._ready(request["zygote"], request["cwd"], request.get("env"),
                               float(request.get("wait", 0)))
        if op == "boot":
            return self._boot(request["boot"], request.get("env"))
        return {"error": f"unexpected request {op!r}"}

    def _boot(self, argv: list[str], env: Mapping[str, str] | None) -> dict[str, object]:
        """Start a python worker ``--boot`` now, before its tree is there (``argv`` is
        ``[INTERPRETER, pyworker.py, "--boot"]``); the first ``_zygote`` of the same
        interpreter, worker and environment makes it its warm worker instead of starting
        one. Asked again, or once that worker runs, nothing starts. Not waited for."""
        key = _boot_key(argv, env)
        if key in self.booted or key in self.started:
            return {"booting": True}
        try:
            self.booted[key] = _Zygote.spawn(argv, "/", env)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        return {"booting": True}

    def _ready(self, argv: list[str], cwd: str, env: Mapping[str, str] | None,
               wait: float) -> dict[str, object]:
        """Start the warm worker for ``argv`` now, before any conversation (the run's
        preflight): ``{"ready"}``, ``{"start_failed": line}``, or ``{"slow"}`` when its
        import takes longer than ``wait`` s (the conversations try again)."""
        try:
            zygote = self._zygote(argv, cwd, env, wait)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        if zygote is None:
            return {"slow": True}
        return {"ready": True} if zygote.error is None else {"start_failed": zygote.error}

    def _zygote(self, argv: list[str], cwd: str, env: Mapping[str, str] | None,
                wait: float) -> _Zygote | None:
        """The warm worker for ``argv`` (started now when there is none; one whose import
        failed is kept, with its line); None when its import took longer than ``wait``."""
        key = _key(argv, env, cwd)
        zygote = self.zygotes.get(key)
        if zygote is None:
            self.started.add(_boot_key(argv, env))
            booted = self.booted.pop(_boot_key(argv, env), None)
            zygote = (booted.load(cwd, argv[-1], wait, self.gitevals)
                      if booted is not None and argv[2:3] == ["--zygote"] and len(argv) == 4
                      else _Zygote.start(argv, cwd, env, wait, self.gitevals))
            self._stop_booted()  # one python target a run: any other start was a wrong guess
            if zygote.error is not None:
                zygote.stop()
                if zygote.slow:
                    return None
            self.zygotes[key] = zygote
        return zygote

    def _stop_booted(self) -> None:
        for booted in self.booted.values():
            booted.stop()
        self.booted.clear()

    def _spawn(self, request: Request, fds: list[int]) -> dict[str, object]:
        argv, cwd, env = request["argv"], request["cwd"], request.get("env")
        try:
            if request.get("zygote"):
                answer = self._warm(request["zygote"], cwd, env, fds,
                                    float(request.get("wait", 0)) + ANSWER_LIMIT / 2)
                if answer is not None:
                    return answer
            return self._cold(argv, cwd, env, fds)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}

    def _cold(self, argv: list[str], cwd: str, env: Mapping[str, str] | None,
              fds: list[int]) -> dict[str, object]:
        """Fork a holder that starts ``argv`` as its child, then waits as a small program."""
        r, w = os.pipe()
        holder = os.fork()
        if holder == 0:  # the holder (this process has one thread: forking is safe)
            try:
                os.close(r)
                os.close(self._lifeline_w)
                os.setsid()
                set_subreaper(True)
                try:
                    said: dict[str, object] = {"pid": _spawn(argv, cwd, env, fds)}
                except OSError as exc:
                    said = {"errno": exc.errno, "error": exc.strerror or str(exc)}
                os.write(w, marshal.dumps(said))
                if "pid" in said:
                    _hold(self.lifeline, self.program, w)
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as reader:
            said = marshal.loads(reader.read() or marshal.dumps({}))
        target = said.get("pid")
        if not isinstance(target, int):
            with suppress(ChildProcessError):
                os.waitpid(holder, 0)
            raise OSError(said.get("errno") or 0, said.get("error") or "the holder failed")
        self.held[holder] = target
        return {"pid": target, "holder": holder}

    def _warm(self, argv: list[str], cwd: str, env: Mapping[str, str] | None,
              fds: list[int], wait: float) -> dict[str, object] | None:
        """A conversation forked from the warm worker for ``argv`` (started now if it is not
        running); None when there cannot be one, and the target is started cold."""
        for _ in range(2):  # a worker a conversation killed is started again, once
            zygote = self._zygote(argv, cwd, env, wait)
            if zygote is None:
                return {"start_failed": "the python worker took longer than "
                        f"{wait:.0f} s to import the target"}  # tried again next time
            if zygote.error is not None:
                return {"start_failed": zygote.error}
            answer = zygote.fork(fds, self.lifeline, self.program)
            target, holder = answer.get("pid"), answer.get("holder")
            if isinstance(target, int) and isinstance(holder, int) and _forked(
                    zygote.pid, holder, target):
                self.held[holder] = target
                self.owners[holder] = zygote
                return {"pid": target, "holder": holder}
            self.zygotes.pop(_key(argv, env, cwd), None)
            zygote.stop()
        return None

    def _keep(self) -> dict[str, object]:
        """Fork a kept holder for a job slot (``_kept_holder``): its pid, and gitevals' end of the
        socket it listens on, handed over with the answer."""
        try:
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        except OSError as exc:
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        try:
            holder = os.fork()
        except OSError as exc:  # the slot forks a holder per conversation instead
            ours.close()
            theirs.close()
            return {"errno": exc.errno, "error": exc.strerror or str(exc)}
        if holder == 0:  # one thread here: forking is safe
            try:
                ours.close()
                _kept_holder(theirs.fileno(), self.lifeline)
            finally:
                os._exit(0)
        theirs.close()
        self.kept.add(holder)
        self.handed.append(ours.detach())
        return {"holder": holder}

    def _end(self, holder: int) -> dict[str, object]:
        """Kill the holder (gitevals killed what was alive beneath it; anything that came
        since is killed here) and reap it with the dead it leaves."""
        self.held.pop(holder)
        owner = self.owners.pop(holder, None)
        for pid, started in _alive_beneath(holder).items():
            _kill(pid, started)
        with suppress(ProcessLookupError):  # unreaped (ours, or a warm worker's child):
            os.kill(holder, _signal.SIGKILL)  # its pid is still its own
        try:
            os.waitpid(holder, 0)
        except ChildProcessError:  # a warm worker's child: it reaps it when asked
            if owner is not None:  # dead is enough: what it held is ours once it died
                await_exit(holder, SWEEP_LIMIT, lambda: zombie_code(holder) is not None)
                owner.reap(holder)
        self._reap_strays()
        return {"ended": True}

    def _reap_strays(self) -> None:
        """Reap our dead children that no running conversation owns: what a holder leaves
        to us when it dies. A running conversation's target keeps its pid, even when its
        holder was killed and it is ours."""
        kept = {*self.held, *self.held.values(), *self.kept,
                *(z.pid for z in self.zygotes.values()), *(z.pid for z in self.booted.values())}
        if any(zombie_code(pid) is not None for pid in self.kept):
            return  # a kept holder died: its target, ours now, is not known here yet
        kids = _children(os.getpid())
        if kids is None:
            kids = [row[0] for row in _process_tree().get(os.getpid(), [])]
        for pid in kids:
            if pid not in kept:
                with suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)


def _buffer() -> mmap.mmap:
    """A receive buffer as large as the largest message, reused for every message: a
    fresh megabyte a message cost a map, a remap and an unmap of memory each time. Pages
    are only touched as far as a message reaches, so it costs no resident megabyte."""
    import mmap

    return mmap.mmap(-1, _MAX_MESSAGE, flags=mmap.MAP_PRIVATE)


#: The size of a descriptor in ``SCM_RIGHTS`` (a C ``int``, as ``array("i")`` holds).
_FD_SIZE = 4


def _request(sock: _socket.socket, buffer: mmap.mmap) -> tuple[bytes, list[int]]:
    """One request and the (up to three) descriptors it carries, close-on-exec from
    the moment they arrive, or the holder would keep the pipes open."""
    fds: list[int] = []
    size, anc, _, _ = sock.recvmsg_into([buffer], _socket.CMSG_LEN(3 * _FD_SIZE),
                                        _socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + _FD_SIZE], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - _FD_SIZE + 1, _FD_SIZE)]
    return buffer[:size], fds


def _send_fds(sock: _socket.socket, data: bytes, fds: Sequence[int]) -> None:
    """Send ``data`` with the descriptors ``fds`` beside it (``socket.send_fds``, without
    importing ``socket``: it imports ``enum`` and ``selectors``)."""
    rights = b"".join(fd.to_bytes(_FD_SIZE, sys.byteorder) for fd in fds)
    sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)] if fds else [])


def supervisor_main() -> None:
    """Serve every job slot of ``gitevals run`` over the socket on fd 0, then sweep and exit."""
    if not set_subreaper(True):
        os._exit(3)
    sock = _socket.socket(fileno=os.dup(0))  # a socket pair end (dup: close-on-exec)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    holders = _Holders(sock)
    buffer = _buffer()
    sock.send(marshal.dumps({"ready": True}))
    try:
        while True:
            data, fds = _request(sock, buffer)
            if not data:
                break  # gitevals is done (or gone)
            _send_fds(sock, marshal.dumps(holders.serve(marshal.loads(data), fds)),
                      holders.handed)
            for fd in holders.handed:
                os.close(fd)
            holders.handed.clear()
    finally:  # whatever went wrong, nothing stays behind
        sweep()
        os._exit(0)


# --- gitevals' end of a supervisor -----------------------------------------------------


class SupervisorGone(Exception):
    """The supervisor died or stopped answering; it has been killed."""


class StartFailed(Exception):
    """A python target's module did not import in its warm worker (the worker's line)."""


class Channel:
    """gitevals' end of the run's supervisor: one socket the job slots ask in turn (each
    answer takes a millisecond or two; a python target's first import takes longer)."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        import threading

        self.proc = proc
        self.sock = sock
        self.gone = False
        self._lock = threading.Lock()
        self._buffer = _buffer()  # one answer at a time: read under ``_lock``

    @classmethod
    def start(cls) -> Channel | None:
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
        channel = cls(proc, ours)
        try:
            ready = channel._receive(START_LIMIT)
        except SupervisorGone:
            return None
        return channel if ready.get("ready") else None

    def _lost(self, why: str) -> SupervisorGone:
        """Kill the supervisor (what was beneath it is adopted by gitevals' own subreaper)."""
        self.gone = True
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, _signal.SIGKILL)
        self.proc.wait()
        self.sock.close()
        return SupervisorGone(why)

    def _receive(self, limit: float) -> Answer:
        try:
            self.sock.settimeout(limit)
            size = self.sock.recv_into(self._buffer)
        except OSError as exc:  # TimeoutError included
            raise self._lost(f"no answer: {exc}") from None
        if not size:
            raise self._lost("it exited")
        answer: Answer = marshal.loads(self._buffer[:size])  # the supervisor's (``serve``)
        return answer

    def ask(self, request: Request, limit: float, fds: Sequence[int] = ()) -> Answer:
        """Send ``request`` (with ``fds``) and wait at most ``limit`` s more than usual for
        the answer; ``SupervisorGone`` when none comes."""
        with self._lock:
            if self.gone:
                raise SupervisorGone("it was killed before")
            try:
                _send_fds(self.sock, marshal.dumps(dict(request)), fds)
            except OSError as exc:
                raise self._lost(f"cannot send: {exc}") from None
            return self._receive(limit + ANSWER_LIMIT)

    def keep(self) -> tuple[int, socket.socket] | None:
        """A kept holder for a job slot (``_kept_holder``): its pid and the socket it
        listens on; None when the supervisor could not make one."""
        import socket

        with self._lock:
            if self.gone:
                raise SupervisorGone("it was killed before")
            try:
                self.sock.send(marshal.dumps({"op": "keep"}))
                self.sock.settimeout(ANSWER_LIMIT)
                data, fds = _request(self.sock, self._buffer)
            except OSError as exc:
                raise self._lost(f"no answer: {exc}") from None
            if not data:
                raise self._lost("it exited")
        holder = marshal.loads(data).get("holder")
        if isinstance(holder, int) and len(fds) == 1:
            return holder, socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        return None

    def close(self) -> None:
        """Let the supervisor sweep and exit; kill it if it does not."""
        import subprocess

        with self._lock:
            if self.gone:
                return
            self.gone = True
            self.sock.close()
        try:
            self.proc.wait(timeout=SWEEP_LIMIT + ANSWER_LIMIT)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, _signal.SIGKILL)
            self.proc.wait()


class Supervisor:
    """One job slot's use of the run's supervisor: starts, asks about and ends one target
    at a time (with its holder). Not thread-safe: one slot, one thread."""

    def __init__(self, channel: Channel, owner: bool = False, keep: bool = False) -> None:
        self.channel = channel
        self.owner = owner  # closing the slot stops the supervisor
        self.target: int | None = None
        self.holder: int | None = None
        #: the slot keeps one holder for all its conversations (``_kept_holder``): no
        #: fork and exec of a holder, no round trip to the supervisor, per conversation
        self.keep = keep
        self._kept: tuple[int, socket.socket] | None = None  # its pid and socket
        self._by_kept = False  # the running target is beneath the kept holder

    @classmethod
    def start(cls) -> Supervisor | None:
        """A slot on a supervisor of its own, stopped by ``close``; None where there cannot
        be one."""
        channel = Channel.start()
        return None if channel is None else cls(channel, owner=True)

    @property
    def gone(self) -> bool:
        return self.channel.gone

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None,
              fds: Sequence[int], zygote: Sequence[str] | None = None,
              wait: float = 0) -> int:
        """Start a target on ``fds`` (its stdin, stdout, stderr); its pid. A target that
        cannot start raises ``OSError`` as ``Popen`` would.

        With ``zygote`` (a python target's warm worker argv), the target is a fresh fork
        of that worker, which the supervisor starts on first use and keeps; ``wait`` is
        how long its import may take. A module that does not import raises
        ``StartFailed`` with the worker's one line."""
        request: Request = {"op": "spawn", "argv": list(argv), "cwd": cwd,
                   "env": None if env is None else dict(env), "wait": wait}
        if zygote:
            request["zygote"] = list(zygote)
        elif self.keep and (pid := self._spawn_kept(request, fds)) is not None:
            return pid
        answer = self.channel.ask(request, wait, fds)
        if "start_failed" in answer:
            raise StartFailed(str(answer["start_failed"]))
        if "pid" not in answer:
            raise OSError(answer.get("errno") or 0, answer.get("error", "cannot start"))
        self.target, self.holder = int(answer["pid"]), int(answer["holder"])
        return self.target

    def _spawn_kept(self, request: Request, fds: Sequence[int]) -> int | None:
        """Start the target beneath the slot's kept holder (forked on first use); None
        when there is none to be had (then this conversation gets a holder of its own)."""
        if self._kept is None:
            self._kept = self.channel.keep()
            if self._kept is None:
                self.keep = False
                return None
        answer = self._ask_kept(request, fds)
        if answer is None:  # killed (by a target of its) between conversations
            self._lose_kept()
            return None
        if "pid" not in answer:
            raise OSError(answer.get("errno") or 0, answer.get("error", "cannot start"))
        self.target, self.holder = int(answer["pid"]), self._kept[0]
        self._by_kept = True
        return self.target

    def _ask_kept(self, request: Request, fds: Sequence[int] = ()) -> Answer | None:
        """The kept holder's answer; None when it is dead or does not answer in time."""
        assert self._kept is not None
        link = self._kept[1]
        try:
            link.settimeout(ANSWER_LIMIT + SWEEP_LIMIT)
            _send_fds(link, marshal.dumps(dict(request)), fds)
            data = link.recv(4096)
        except OSError:
            return None
        answer: Answer | None = marshal.loads(data) if data else None
        return answer

    def _lose_kept(self) -> None:
        """The kept holder is dead or stuck: the supervisor ends it as any holder of its
        own (what it held is beneath the supervisor now); the next conversation gets a
        new one."""
        assert self._kept is not None
        (holder, link), self._kept = self._kept, None
        link.close()
        sweep_beneath(holder)
        self.channel.ask({"op": "end", "holder": holder}, SWEEP_LIMIT)

    def warm(self, zygote: Sequence[str], cwd: str, env: Mapping[str, str] | None,
             wait: float) -> str | None:
        """Start a python target's warm worker before any conversation: None once it
        imported the module, else the worker's one line saying why it does not import.
        An import longer than ``wait`` s raises ``TimeoutError`` (the conversations try
        again); an interpreter that cannot start, ``OSError`` as ``Popen`` would."""
        answer = self.channel.ask({"op": "warm", "zygote": list(zygote), "cwd": cwd,
                                   "env": None if env is None else dict(env), "wait": wait},
                                  wait)
        if "errno" in answer:
            raise OSError(answer["errno"] or 0, answer.get("error", "cannot start"))
        if answer.get("slow"):
            raise TimeoutError(f"the import took longer than {wait:g} s")
        failed = answer.get("start_failed")
        return None if failed is None else str(failed)

    def status(self, wait: float) -> int | None:
        """The target's exit code if it exits within ``wait`` s (it is not reaped)."""
        return None if self.target is None else target_status(self.target, wait)

    def end(self) -> int | None:
        """Kill the target and everything beneath its holder; the target's exit code."""
        target, holder = self.target, self.holder
        if target is None or holder is None:
            return None
        self.target = self.holder = None
        by_kept, self._by_kept = self._by_kept, False
        if by_kept and (answer := self._ask_kept({"op": "end"})) is not None:
            return answer.get("code")  # it killed and reaped all that was beneath it
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(target, _signal.SIGKILL)  # unreaped until the holder goes: still its own
        code = target_status(target, SWEEP_LIMIT)
        if by_kept:  # the kept holder is dead or stuck
            self._lose_kept()
            return code
        sweep_beneath(holder)
        self.channel.ask({"op": "end", "holder": holder}, SWEEP_LIMIT)
        return code

    def close(self) -> None:
        """Let go of the kept holder (it sweeps what is beneath it and exits); a slot of
        its own supervisor stops it (which first kills what is beneath it)."""
        if self._kept is not None:
            self._kept[1].close()
            self._kept = None
        if self.owner:
            self.channel.close()
