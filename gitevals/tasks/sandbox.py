"""Run a task's verifier in a sandbox: bubblewrap, or (``--no-sandbox``) directly.

Under bubblewrap (``bwrap``) the verifier sees a small root of its own:

- the host system read-only (``/usr``, ``/etc``, ``/opt`` and the ``/bin``/``/lib``
  entries, as links where the host has links) and nothing else of the host: no home,
  no repository, no ``/work``, no ``/run``;
- the trial's workspace read-write at the task's ``workdir`` (default ``/app``), the
  task's ``tests/`` read-only at ``/tests``, a fresh writable ``/logs/verifier/``, a
  fresh ``/tmp``, its own ``/proc`` and ``/dev``;
- every namespace unshared (``--unshare-all``): no network unless the task says
  ``allow_internet = true`` (``--share-net``), its own pid namespace, so when the
  verifier's first process ends the kernel kills everything it left behind;
- a scrubbed environment (``--clearenv``) plus ``[verifier.env]``;
- ``--die-with-parent`` and ``--new-session``; on the timeout gitevals kills the
  process group of ``bwrap``, which takes the pid namespace with it.

``--no-sandbox`` runs the same argv on the host with the workspace as its working
directory; the mount points ``/tests``, ``/logs/verifier`` and the workdir are rewritten
to their host copies where they start an argv member, and the environment names them
(``GITEVALS_TESTS``, ``GITEVALS_LOGS``, ``GITEVALS_WORKSPACE``, set in the sandbox too).
A script that writes ``/logs/verifier`` literally only works sandboxed. There is no
isolation then: it is recorded in the artifact (``sandbox: "none"``).

``bwrap_argv`` and ``direct_call`` are pure; ``Pending`` (``prepare``) is the IO: the
sandbox is started while the target works and waits for the go-ahead (``WAITER``); the
outcome is read from the waiter's status line, and the sandbox ends after (``release``,
``close``), off the caller's path.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import platform
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass

from gitevals.tasks.confine import Sealed, reopen, seal_tests, sealed, seccomp_program
from gitevals.tasks.pids import Group

#: ``[verifier] timeout_sec`` when the task gives none (Harbor's default verifier budget).
DEFAULT_TIMEOUT = 600.0
#: Bytes of the verifier's output (stdout and stderr, interleaved) kept for the artifact.
TAIL_BYTES = 4096
#: Environment variable naming the bubblewrap executable (else ``bwrap`` on PATH).
BWRAP_ENV = "GITEVALS_BWRAP"
TESTS = "/tests"
LOGS = "/logs/verifier"
#: Where a task's ``solution/`` appears for its oracle (Harbor's place for it).
SOLUTION = "/solution"
#: The environment every verifier starts from (then ``[verifier.env]``).
BASE_ENV: tuple[tuple[str, str], ...] = (
    ("HOME", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
)
#: Bytes of the verifier's ``/tmp``, ``/logs/verifier`` and ``/dev/shm``, each a tmpfs
#: (memory): a verifier cannot fill the machine's memory through them.
TMP_BYTES = 512 << 20
LOGS_BYTES = 64 << 20
SHM_BYTES = 64 << 20
#: Whom a verifier runs as when gitevals runs as root (``nobody``): capabilities are
#: dropped either way, but uid 0 still owns root's files (one of ``/opt`` that only root
#: may read, say), and the kernel counts no process limit against uid 0.
NOBODY = (65534, 65534)
#: The most processes (and threads) a verifier's sandbox holds at once: a fork bomb
#: stops there. It is ``RLIMIT_NPROC`` set inside the sandbox's user namespace, which
#: the kernel counts per user and namespace (Linux 5.14 and later): one sandbox's count,
#: not the user's. It does not hold for uid 0 (see ``sandbox_user``).
PIDS = 1024
#: The most a task's ``tests/`` may hold: it is sealed in memory per trial and copied
#: into each sandbox as it starts (``seal_tests``).
TESTS_BYTES = 64 << 20
TESTS_FILES = 4096
#: Host directories the sandbox sees read-only; the ``_LINKS`` entries follow the host
#: (a link on merged-/usr systems, else a read-only bind).
_SYSTEM = ("/usr", "/etc", "/opt")
_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: A workdir may not hide these (the verifier needs them as the sandbox makes them).
_RESERVED = ("/usr", "/etc", "/opt", "/proc", "/dev", "/tmp", TESTS, SOLUTION, "/logs",
             *_LINKS)


@dataclass(frozen=True)
class Mounts:
    """Host paths of what a verifier call sees: workspace (rw), tests (ro), logs (rw)."""

    workspace: str
    tests: str
    logs: str


@dataclass(frozen=True)
class Call:
    """One verifier call as the task defines it."""

    argv: tuple[str, ...]
    workdir: str = "/app"
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    allow_internet: bool = False
    #: Where the sealed files appear: ``/tests``, or ``/solution`` for a task's oracle
    #: (``gitevals.tasks.controls``).
    mount: str = TESTS
    #: The task's image, unpacked (``gitevals.tasks.image``): the sandbox's system
    #: instead of the host's. None: the host's, read-only.
    root: str | None = None
    #: The cgroup v2 settings of the call (``gitevals.tasks.cgroup2.values``): None, the
    #: task's limits are rlimits in its argv (or it names none).
    cgroup: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Outcome:
    """How a verifier call ended: exit code (None when killed on its timeout), the tail
    of its output, whether it timed out, and how long it took."""

    exit_code: int | None
    tail: str
    timed_out: bool
    duration_ms: int


def find_bwrap() -> str | None:
    """The bubblewrap executable: ``$GITEVALS_BWRAP`` when set (an empty value or a path
    that is not executable means none), else ``bwrap`` on PATH."""
    given = os.environ.get(BWRAP_ENV)
    if given is not None:
        return given if given and os.access(given, os.X_OK) and os.path.isfile(given) else None
    return shutil.which("bwrap")


def workdir_problem(workdir: str) -> str | None:
    """Why ``workdir`` cannot be the workspace's mount point, or None."""
    norm = os.path.normpath(workdir) if workdir.startswith("/") else ""
    if not norm or norm != workdir.rstrip("/") or norm in ("/", "//"):
        return f"workdir {workdir!r} is not a normalized absolute path below /"
    hit = next((r for r in _RESERVED if norm == r or norm.startswith(r + "/")), None)
    if hit is not None:
        return f"workdir {workdir!r} would hide {hit}, which the sandbox provides"
    return None


def environment(call: Call, mounts: Mounts | None = None) -> dict[str, str]:
    """The verifier's environment: ``BASE_ENV``, the locations, then ``[verifier.env]``."""
    places = ((mounts.tests, mounts.logs, mounts.workspace) if mounts
              else (TESTS, LOGS, call.workdir))
    env = dict(BASE_ENV)
    env.update(zip(("GITEVALS_TESTS", "GITEVALS_LOGS", "GITEVALS_WORKSPACE"), places,
                   strict=True))
    env.update(call.env)
    return env


@dataclass(frozen=True)
class Inside:
    """What a sandboxed call is given by descriptor (numbers as bubblewrap inherits them):
    the workspace (an ``O_PATH`` directory), each file of ``/tests`` (a fresh read of a
    sealed memory file) with its directories and links, and the seccomp filter (None:
    none for this machine)."""

    workspace: int
    tests: tuple[tuple[str, bool, int], ...] = ()
    test_dirs: tuple[str, ...] = ()
    test_links: tuple[tuple[str, str], ...] = ()
    seccomp: int | None = None

    def fds(self) -> tuple[int, ...]:
        extra = () if self.seccomp is None else (self.seccomp,)
        return (self.workspace, *(fd for _, _, fd in self.tests), *extra)


def bwrap_argv(bwrap: str, call: Call, inside: Inside,
               host_links: dict[str, str | None] | None = None,
               hidden: tuple[tuple[str, bool], ...] | None = None) -> list[str]:
    """The bubblewrap command line of ``call``. ``host_links`` maps each ``_LINKS`` entry
    to its link target on the host (None: a directory or absent), ``hidden`` names what
    of ``/etc`` is masked (``confine.hidden_etc``); both read from the host when not
    given. No host path of the workspace or the tests is on it: they come by
    descriptor, and ``/logs/verifier`` is the sandbox's own."""
    from gitevals.tasks.confine import hidden_etc

    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
    if call.allow_internet:
        out.append("--share-net")
    if call.root is not None:
        out += image_binds(call.root, top_entries(call.root), call.workdir)
    else:
        out += _host_system(host_links, hidden if hidden is not None else hidden_etc())
    out += ["--proc", "/proc", "--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
            "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
            "--size", str(LOGS_BYTES), "--tmpfs", LOGS, "--dir", call.mount]
    out += [x for d in inside.test_dirs for x in ("--dir", f"{call.mount}/{d}")]
    for rel, executable, fd in inside.tests:
        out += ["--perms", "0555" if executable else "0444", "--ro-bind-data", str(fd),
                f"{call.mount}/{rel}"]
    out += [x for rel, target in inside.test_links
            for x in ("--symlink", target, f"{call.mount}/{rel}")]
    out += ["--bind", f"/proc/self/fd/{inside.workspace}", call.workdir,
            # uid 0 may write /proc/sys (kernel.core_pattern...) by file mode alone
            "--remount-ro", "/", "--remount-ro", "/proc", "--remount-ro", "/dev",
            "--chdir", call.workdir, "--clearenv"]
    if inside.seccomp is not None:
        out += ["--seccomp", str(inside.seccomp)]
    for k, v in sorted(environment(call).items()):
        out += ["--setenv", k, v]
    return [*out, "--", *call.argv]


def _host_system(host_links: dict[str, str | None] | None,
                 masked: tuple[tuple[str, bool], ...]) -> list[str]:
    """The host's system, read-only, less what ``/etc`` keeps from other users."""
    links = host_links if host_links is not None else _host_links()
    out: list[str] = []
    for d in _SYSTEM:
        out += ["--ro-bind-try", d, d]
    for path, is_dir in masked:
        out += (["--tmpfs", path, "--remount-ro", path] if is_dir
                else ["--ro-bind", "/dev/null", path])
    for d in _LINKS:
        target = links.get(d)
        out += ["--symlink", target, d] if target else ["--ro-bind-try", d, d]
    return out


#: Top-level names of an image's root the sandbox makes itself (never the image's).
_OWN = frozenset(("proc", "dev", "tmp", "logs", TESTS[1:], SOLUTION[1:]))


def image_binds(root: str, entries: Sequence[tuple[str, str | None]],
                workdir: str) -> list[str]:
    """An image's root as the sandbox's system: each top-level entry of ``root`` (name,
    link target or None) bound read-only at ``/name``, a link as the same link; not
    what the sandbox makes itself (``/proc``, ``/dev``, ``/tmp``, ``/logs``, ``/tests``,
    ``/solution``) nor the top of ``workdir``, where the workspace is bound."""
    skip = _OWN | {workdir.strip("/").split("/")[0]}
    out: list[str] = []
    for name, target in sorted(entries):
        if not name or "/" in name or name in (".", "..") or name in skip:
            continue
        out += (["--symlink", target, "/" + name] if target is not None
                else ["--ro-bind", f"{root}/{name}", "/" + name])
    return out


def top_entries(root: str) -> list[tuple[str, str | None]]:
    """The top-level entries of an unpacked image: name and link target (None: not a link)."""
    out: list[tuple[str, str | None]] = []
    with os.scandir(root) as it:
        for e in it:
            out.append((e.name, os.readlink(e.path) if e.is_symlink() else None))
    return out


def _host_links() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for d in _LINKS:
        out[d] = os.readlink(d) if os.path.islink(d) else None
    return out


def direct_call(call: Call, mounts: Mounts) -> tuple[list[str], dict[str, str], str]:
    """``call`` without a sandbox: argv with the mount points rewritten to host paths,
    environment, working directory."""
    places = ((LOGS, mounts.logs), (TESTS, mounts.tests), (call.workdir, mounts.workspace))

    def host(arg: str) -> str:
        for inside, outside in places:
            if arg == inside or arg.startswith(inside + "/"):
                return outside + arg[len(inside):]
        return arg

    return [host(a) for a in call.argv], environment(call, mounts), mounts.workspace


#: What runs first in the sandbox. Its subshell waits for one line ``go`` on stdin, then
#: becomes the verifier (stdin ``/dev/null``); the shell around it writes the verifier's
#: exit status back on stdin, a socket. Starting bubblewrap (namespaces, mounts) costs
#: more than a trivial verifier, and so does its exit (``bench_tasks.py``), so a run
#: starts the sandbox while the target is still working, lets the verifier go when the
#: target answers, takes its outcome from that status line, and waits for the sandbox to
#: be gone (``Pending.close``) at the end of the trial, while the target shuts down.
WAITER = ("/bin/sh", "-c",
          '(read -r go && [ "$go" = go ] && exec "$@" </dev/null); echo "$?" >&0; read -r _',
          "gitevals-verifier")
#: ``WAITER`` in a sandbox: first the process limit (``ulimit -u`` in bash, ``-p`` in
#: dash and busybox), inside the sandbox's user namespace so that it counts only the
#: sandbox's processes. Not on the host (``--no-sandbox``), where it would count all of
#: yours.
SANDBOX_WAITER = (WAITER[0], WAITER[1],
                  f"{{ ulimit -u {PIDS} || ulimit -p {PIDS}; }} 2>/dev/null; {WAITER[2]}",
                  WAITER[3])
#: Seconds ``close`` waits for a sandbox whose verifier exited to wind down by itself
#: before it kills what is left.
GRACE = 5.0


class Pending:
    """A verifier call started ahead: its sandbox is up and waits for ``run``. ``cancel``
    ends it without running; ``close`` waits for it to be gone. Either kills every
    process of it that is left."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, timeout: float,
                 info: bool = False, fds: tuple[int, ...] = (), logs: str | None = None,
                 problem: str | None = None, kind: str = "verifier_error",
                 user: tuple[int, int] | None = None, workspace: int = -1,
                 group: Group | None = None) -> None:
        """``fds`` are handed to the process and closed here; ``logs`` is the host
        directory of ``/logs/verifier`` (None: the sandbox's own); ``problem`` says why
        it cannot start at all (nothing is started then). ``user``: the uid and gid the
        sandbox is started as (None: gitevals' own); ``workspace`` (a descriptor, owned
        here from now) is then handed over to them as the verifier goes."""
        self.timeout = timeout
        self.user = user
        self.group = group  # the call's cgroup v2 (its limits), removed when it is gone
        self.workspace = workspace
        self.problem: str | None = problem
        self.kind = kind  # the trial's error kind when ``problem`` ends it
        self.logs = logs
        self.pid: int | None = None  # the sandbox's pid 1, once known
        self.proc: subprocess.Popen[bytes] | None = None
        self.read = self.info = -1
        read, write = os.pipe()
        self.status, theirs = socket.socketpair()
        # ready before the go-ahead: after it, the verifier is what the call waits for
        self.sel = selectors.DefaultSelector()
        # bubblewrap's --info-fd names the sandbox's pid 1, which ``close`` waits for
        info_read, info_write = os.pipe() if info else (-1, -1)
        if info:
            argv = [argv[0], "--info-fd", str(info_write), *argv[1:]]
        self.argv = argv
        try:
            if problem is not None:
                raise OSError(problem)
            uid, gid = user if user is not None else (None, None)
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=theirs.fileno(),
                                         stdout=write, stderr=write, start_new_session=True,
                                         pass_fds=((info_write,) if info else ()) + fds,
                                         user=uid, group=gid,
                                         extra_groups=None if user is None else [])
            self.read, self.info = read, info_read
            os.set_blocking(read, False)
            self.status.setblocking(False)
            self.sel.register(read, selectors.EVENT_READ)
            self.sel.register(self.status, selectors.EVENT_READ)
        except OSError as exc:
            os.close(read)
            if info:
                os.close(info_read)
            self.problem = problem or f"cannot start {argv[0]!r}: {exc.strerror or exc}"
        finally:
            os.close(write)
            theirs.close()
            if info:
                os.close(info_write)
            for fd in fds:
                os.close(fd)

    def __enter__(self) -> Pending:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def run(self) -> Outcome:
        """Let the verifier go; its outcome once it exits or its timeout passes. The
        sandbox is left up until ``release`` or ``close`` (killed at once on a timeout)."""
        started = time.monotonic()
        if self.proc is None or self.read < 0:
            self.cancel()
            return Outcome(None, self.problem or "cancelled before it ran", False, 0)
        if self.user is not None and self.workspace >= 0:
            hand_over(self.workspace, *self.user)  # what the target made, as it is now
        if self.group is not None:  # all the verifier starts is in the call's cgroup
            from gitevals.tasks.cgroup2 import move_tree

            move_tree(self.proc.pid, self.group.procs)
        with suppress(OSError):
            self.status.send(b"go\n")
        tail: deque[bytes] = deque()
        kept = [0]
        sel = self.sel
        timed_out = True  # until a status or an exit says otherwise
        code: int | None = None
        try:
            reported, code = _await_status(self.status, sel, self.read,
                                           started + self.timeout, tail, kept)
            if reported and code is None:  # it ended without one (bwrap could not set up)
                timed_out = _pump(self.proc, sel, self.read, started + self.timeout, tail,
                                  kept)
            else:
                timed_out = not reported
        finally:
            if code is None:
                self._end(beneath=timed_out)
        if code is None and not timed_out:
            code = self.proc.returncode
        text = b"".join(tail)[-TAIL_BYTES:].decode("utf-8", "replace")
        return Outcome(code, text, timed_out, int((time.monotonic() - started) * 1000))

    def open_logs(self) -> int:
        """A descriptor (``O_PATH``) of the verifier's ``/logs/verifier`` once its verifier
        ran and before ``release``: the host directory of a direct call, else the
        sandbox's own tmpfs, reached through its pid 1's root -- no host path holds it.
        Raises ``OSError`` when there is none (any more)."""
        flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
        if self.logs is not None:
            return os.open(self.logs, flags | os.O_NOFOLLOW)
        if self.pid is None and self.info >= 0:
            self.pid = _sandbox_pid(self.info, block=False)
        if self.pid is None or self.proc is None or self.proc.returncode is not None:
            raise OSError(errno.ESRCH, "the sandbox is gone")
        root = os.open(f"/proc/{self.pid}/root", flags)
        try:
            logs = os.open("logs", flags | os.O_NOFOLLOW, dir_fd=root)
        finally:
            os.close(root)
        try:
            return os.open("verifier", flags | os.O_NOFOLLOW, dir_fd=logs)
        finally:
            os.close(logs)

    def cancel(self) -> None:
        """End it without running the verifier (its trial ended first)."""
        self._end(beneath=True)
        self._gone()

    def release(self) -> None:
        """Let the sandbox end now that its outcome is read (``run`` leaves it waiting for
        this, so that its ending is not in the way of the caller reading the outcome):
        the kernel kills what the verifier left behind as it does. Does not wait."""
        with suppress(OSError):
            self.status.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Release it, wait (at most ``GRACE`` seconds) for it to end by itself, then end
        it; under bubblewrap, return once its pid namespace is gone: bwrap exits as soon
        as the verifier's shell does, while the kernel may still be killing what was left
        in the sandbox."""
        if self.proc is not None and self.proc.returncode is None:
            from gitevals.run.reaper import await_exit

            self.release()
            await_exit(self.proc.pid, GRACE)
        self._end(beneath=True)
        self._gone()

    def _gone(self) -> None:
        """Under bubblewrap: wait for the sandbox's pid 1, and so its pid namespace; then
        remove the call's cgroup."""
        if self.info >= 0:
            _wait_gone(self.pid or _sandbox_pid(self.info), GRACE)
            os.close(self.info)
            self.info = -1
        if self.group is not None:
            self.group.remove()
            self.group = None

    def _end(self, beneath: bool) -> None:
        # Not reaped until here: its pid, which is its group's id, cannot be reused
        # before the group is killed.
        self.sel.close()
        self.status.close()
        if self.proc is not None and self.proc.returncode is None:
            _kill(self.proc.pid, beneath=beneath and not _exited(self.proc.pid))
            self.proc.wait()
        if self.read >= 0:
            os.close(self.read)
            self.read = -1
        if self.workspace >= 0:
            os.close(self.workspace)
            self.workspace = -1


def prepare(call: Call, mounts: Mounts, bwrap: str | None,
            tests: Sealed | None = None) -> Pending:
    """Start ``call`` under ``bwrap`` (None: directly, ``--no-sandbox``), waiting to run.

    Under bubblewrap the workspace is bound by descriptor (``mounts.workspace`` is opened
    as a directory here; a caller that checked it passes ``/proc/self/fd/N``), ``/tests``
    is copied in from ``tests`` (sealed memory; None: sealed from ``mounts.tests`` now)
    and ``/logs/verifier`` is the sandbox's own (``mounts.logs`` is not used). A call
    that cannot be set up comes back as a ``Pending`` whose ``run`` says why."""
    if bwrap is None:
        argv, env, cwd = direct_call(call, mounts)
        return Pending([*WAITER, *argv], env, cwd, call.timeout, logs=mounts.logs)
    waiting = dataclasses.replace(call, argv=(*SANDBOX_WAITER, *call.argv))
    opened: list[int] = []
    own = tests is None
    user = sandbox_user(bwrap)
    handed = -1
    group = None
    try:
        if call.cgroup is not None:
            from gitevals.tasks.cgroup2 import make

            group = make(dict(call.cgroup))
            if group is None:
                raise ValueError("cannot make the verifier's cgroup (cgroup v2) for the "
                                 "task's cpus and memory_mb")
        if tests is None:
            tests = seal_tests(mounts.tests, TESTS_BYTES, TESTS_FILES)
        opened.append(os.open(mounts.workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
        if user is not None:
            _reachable(os.readlink(f"/proc/self/fd/{opened[0]}"), *user)
            handed = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC,
                             dir_fd=opened[0])
        files = []
        for rel, executable, fd in tests.files:
            opened.append(reopen(fd))
            files.append((rel, executable, opened[-1]))
        program = _filter()
        if program is not None:
            opened.append(reopen(program))
        inside = Inside(opened[0], tuple(files), tests.dirs, tests.links,
                        opened[-1] if program is not None else None)
        argv = bwrap_argv(bwrap, waiting, inside)
    except (OSError, ValueError) as exc:
        for fd in (*opened, *([handed] if handed >= 0 else [])):
            os.close(fd)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if group is not None:
            group.remove(0)
        return Pending([bwrap], {}, "/", call.timeout, problem=f"cannot set up the sandbox: "
                       f"{why}")
    finally:
        if own and tests is not None:
            tests.close()
    return Pending(argv, {}, "/", call.timeout, info=True, fds=tuple(opened), user=user,
                   workspace=handed, group=group)


@functools.cache
def sandbox_user(bwrap: str) -> tuple[int, int] | None:
    """Whom ``bwrap`` is started as: ``NOBODY`` when gitevals runs as root and the kernel
    lets that user make a sandbox (an unprivileged user namespace), else None (gitevals'
    own user: as root, uid 0 without capabilities). Asked once a process."""
    if os.geteuid() != 0:
        return None
    return NOBODY if probe(bwrap, NOBODY) is None else None


def _reachable(path: str, uid: int, gid: int) -> None:
    """Raise ``ValueError`` when ``uid``:``gid`` cannot reach directory ``path``: bubblewrap
    started as them resolves the workspace's path (even given by descriptor)."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        above = "/".join(parts[:i]) or "/"
        st = os.stat(above)
        bit = (0o100 if st.st_uid == uid else 0o010 if st.st_gid == gid else 0o001)
        if not st.st_mode & bit:
            raise ValueError(f"the workspace {path} is out of reach of uid {uid}, whom the "
                             f"verifier runs as (gitevals runs as root): {above} lets only "
                             "its owner through; make it traversable (chmod o+x) or put the "
                             "workspace elsewhere")


def hand_over(top: int, uid: int, gid: int) -> None:
    """Give the workspace (directory ``top``) and what is in it to ``uid``:``gid``, so
    that a verifier running as them may write there as the target did. Only what is the
    workspace's own is changed: directories and files of its file system, a file only
    when it has no other link (a hard link the target made to a host file is left as it
    is), each through a descriptor of what was checked; links are not followed. Best
    effort: what cannot be changed stays as it was."""
    try:
        dev = os.fstat(top).st_dev
    except OSError:
        return
    with suppress(OSError):
        for _, dirs, files, at in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            _own(at, uid, gid, dev)
            dirs[:] = [d for d in dirs if _same_dev(d, at, dev)]
            for name in files:
                _own_file(name, at, uid, gid, dev)


def _same_dev(name: str, at: int, dev: int) -> bool:
    try:
        return os.stat(name, dir_fd=at, follow_symlinks=False).st_dev == dev
    except OSError:
        return False


def _own(fd: int, uid: int, gid: int, dev: int) -> None:
    with suppress(OSError):
        st = os.fstat(fd)
        if st.st_dev == dev and (st.st_uid, st.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)


def _own_file(name: str, at: int, uid: int, gid: int, dev: int) -> None:
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=at)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if (stat.S_ISLNK(st.st_mode) or st.st_nlink != 1 or st.st_dev != dev
                or (st.st_uid, st.st_gid) == (uid, gid)):
            return
        with suppress(OSError):  # the inode checked, reached through its descriptor
            os.chown(f"/proc/self/fd/{fd}", uid, gid)
    finally:
        os.close(fd)


@functools.cache
def _filter() -> int | None:
    """The seccomp filter of this machine, sealed in memory once a process."""
    program = seccomp_program(platform.machine())
    return None if program is None else sealed(program, "gitevals-seccomp")


def run_verifier(call: Call, mounts: Mounts, bwrap: str | None) -> Outcome:
    """Run ``call`` under ``bwrap`` (None: directly, ``--no-sandbox``) now, to its end."""
    with prepare(call, mounts, bwrap) as pending:
        return pending.run()


def _await_status(status: socket.socket, sel: selectors.BaseSelector, fd: int,
                  deadline: float, tail: deque[bytes],
                  kept: list[int]) -> tuple[bool, int | None]:
    """Read output into ``tail`` until the waiter reports the verifier's exit status:
    ``(True, status)``, with the output that is there drained. ``(True, None)`` when the
    status socket closed without one, ``(False, None)`` when the deadline passed."""
    got = b""
    while (left := deadline - time.monotonic()) > 0:
        for key, _ in sel.select(left):
            if key.fileobj is not status:
                if not _read(fd, tail, kept):
                    sel.unregister(fd)
                continue
            try:
                chunk = status.recv(64)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            got += chunk
            if chunk and not got.endswith(b"\n"):
                continue
            sel.unregister(status)
            if not chunk or not got.strip().isdigit():
                return True, None
            while _read(fd, tail, kept, drain=True):
                pass
            return True, int(got)
    return False, None


def _wait_gone(pid: int | None, timeout: float) -> None:
    """Wait at most ``timeout`` seconds for process ``pid`` (not a child) to be gone."""
    from gitevals.run.reaper import await_exit

    if pid is not None:
        await_exit(pid, timeout, lambda: _state(pid) in ("", "Z"))


def _state(pid: int) -> str:
    """Process ``pid``'s state letter (``Z`` a zombie), or "" when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError):
        return ""


def _sandbox_pid(fd: int, block: bool = True) -> int | None:
    """The host pid of the sandbox's pid 1, from bubblewrap's ``--info-fd`` (read to its
    end: bwrap has closed it by the time it exits; ``block=False``: what is there now,
    which is all of it once the verifier ran); None when it never wrote one."""
    data = b""
    os.set_blocking(fd, block)
    with suppress(OSError):
        while chunk := os.read(fd, 4096):
            data += chunk
    try:
        pid = json.loads(data).get("child-pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and pid > 0 else None


def _pump(proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, fd: int,
          deadline: float, tail: deque[bytes], kept: list[int]) -> bool:
    """Read output into ``tail`` until the process exits (and its output is drained) or
    the deadline passes; True when the deadline passed first."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return not _exited(proc.pid)
        exited = _exited(proc.pid)
        # Once it exited, read only what is already there: a leftover process holding
        # the pipe must not keep the call waiting.
        for _ in sel.select(0 if exited else min(left, 0.2)):
            if not _read(fd, tail, kept):
                return False
        if exited:
            while _read(fd, tail, kept, drain=True):
                pass
            return False


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _read(fd: int, tail: deque[bytes], kept: list[int], drain: bool = False) -> bool:
    """Read one chunk into ``tail`` (bounded); False at end of file or nothing left."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return not drain
    except OSError:
        return False
    if not chunk:
        return False
    tail.append(chunk)
    kept[0] += len(chunk)
    while kept[0] - len(tail[0]) >= TAIL_BYTES:
        kept[0] -= len(tail.popleft())
    return True


def _kill(pid: int, beneath: bool) -> None:
    """SIGKILL ``pid``'s process group and, when ``beneath`` (it is still running: a
    timeout), first every process beneath it. Once it has exited its children have
    been re-parented already (to gitevals, a subreaper for the run, which sweeps them;
    under bubblewrap the pid namespace took them), so the scan of /proc -- tens of ms
    on a busy machine (``benchmarks/bench_tasks.py``) -- would find nothing."""
    if beneath:
        from gitevals.run.reaper import kill_beneath

        kill_beneath(pid)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def probe(bwrap: str, user: tuple[int, int] | None = None) -> str | None:
    """Why ``bwrap`` cannot start a sandbox here (user namespaces refused, a bubblewrap too
    old for ``--cap-drop``, ``--size``, ``--remount-ro`` or ``--seccomp``, ...), or None.
    ``user``: started as that uid and gid (gitevals being root)."""
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr", *[x for d in _LINKS for x in _link_args(d)],
            "--proc", "/proc", "--dev", "/dev", "--size", "4096", "--tmpfs", "/tmp",
            "--remount-ro", "/"]
    fds: tuple[int, ...] = ()
    try:
        program = _filter()
        if program is not None:
            fds = (reopen(program),)
            argv += ["--seccomp", str(fds[0])]
        uid, gid = user if user is not None else (None, None)
        done = subprocess.run([*argv, "--", "true"], capture_output=True, timeout=30,
                              check=False, pass_fds=fds, user=uid, group=gid,
                              extra_groups=None if user is None else [], cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        for fd in fds:
            os.close(fd)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
    return None


def _link_args(d: str) -> list[str]:
    if os.path.islink(d):
        return ["--symlink", os.readlink(d), d]
    return ["--ro-bind-try", d, d]


# -- the target's side of a task trial ---------------------------------------------------

#: What a target running as root keeps of its capabilities (a Docker container's default
#: set, less ``CAP_MKNOD`` and ``CAP_NET_RAW``): it owns and changes files as root did,
#: but cannot mount or unmount (and so uncover the host's ``/proc``), trace, load kernel
#: code, read raw memory or sniff the verifier's network.
TARGET_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
               "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
               "CAP_SYS_CHROOT", "CAP_SETFCAP", "CAP_AUDIT_WRITE")
#: The target's process limit, as ``PIDS`` (not enforced for uid 0: a pids cgroup then,
#: where one can be made, ``gitevals.tasks.pids``).
TARGET_PIDS = 4096
#: Run first in the target's namespace: the process limit, then the target.
_TARGET_START = (f'{{ ulimit -u {TARGET_PIDS} || ulimit -p {TARGET_PIDS}; }} 2>/dev/null; '
                 'exec "$@"')
#: Run first on the host when the target gets a pids cgroup: join it, then bubblewrap.
_JOIN = 'echo "$$" > "$1" && shift && exec "$@"'


def target_argv(bwrap: str, argv: list[str], root: bool, protected: tuple[str, ...] = (),
                host_links: dict[str, str | None] | None = None,
                pids_procs: str | None = None) -> list[str]:
    """The command line that runs a task trial's target (``argv``) in a pid namespace of
    its own, so that nothing it starts can see, trace or signal a verifier's processes
    (or gitevals'): the host as it is (``--dev-bind / /``: its files, devices, network,
    environment, working directory), but its own ``/proc``, read-only, and read-only
    what a verifier runs (``_SYSTEM`` and ``_LINKS``, ``/sys``) and ``protected`` (the
    installed gitevals and its interpreter). As ``root`` it keeps only ``TARGET_CAPS``;
    a user has none (bubblewrap's user namespace). When the trial's target ends, its
    namespace ends, and everything it left running with it. ``pids_procs``: the
    ``cgroup.procs`` file of the pids cgroup to start it in."""
    links = host_links if host_links is not None else _host_links()
    out = [bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent",
           "--proc", "/proc", "--remount-ro", "/proc", "--ro-bind-try", "/sys", "/sys"]
    for d in _SYSTEM:
        out += ["--ro-bind-try", d, d]
    out += [x for d in _LINKS if not links.get(d) for x in ("--ro-bind-try", d, d)]
    for path in protected:
        out += ["--ro-bind-try", path, path]
    if root:
        out += ["--cap-drop", "ALL", *[x for c in TARGET_CAPS for x in ("--cap-add", c)]]
    out += ["--", "/bin/sh", "-c", _TARGET_START, "gitevals-target", *argv]
    if pids_procs is not None:
        out = ["/bin/sh", "-c", _JOIN, "gitevals-target", pids_procs, *out]
    return out


def protected_paths() -> tuple[str, ...]:
    """What a target may not change because gitevals runs it: the installed ``gitevals``
    package and the interpreter's prefix (its virtual environment), outside ``_SYSTEM``."""
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = {os.path.realpath(p) for p in (here, sys.prefix)}
    return tuple(sorted(p for p in found
                        if not any(p == d or p.startswith(d + "/") for d in _SYSTEM)))


#: What ``agent_argv``'s sandbox replaces with empty directories of its own.
AGENT_HIDDEN = ("/tmp", "/dev/shm")


def hidden_program(argv: Sequence[str], env: Mapping[str, str] | None
                   ) -> tuple[str, str] | None:
    """The target's program (``argv[0]`` looked up on the target's PATH, as given and
    with its links resolved) and the directory of ``AGENT_HIDDEN`` it lies in, when the
    agent's sandbox has an empty one of its own there: the program cannot start in it, or
    a bare name would start another program further down PATH. None when it is
    elsewhere or not found (the start then says so)."""
    if not argv:
        return None
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    found = shutil.which(argv[0], path=path)
    if found is None:
        return None
    for where in (os.path.abspath(found), os.path.realpath(found)):
        for hidden in AGENT_HIDDEN:
            if where == hidden or where.startswith(hidden + "/"):
                return os.path.abspath(found), hidden
    return None


def agent_argv(bwrap: str, argv: Sequence[str], tree_dir: str, workspace: str, workdir: str,
               top: Sequence[str] | None = None, root: str | None = None) -> list[str]:
    """The target of a task trial in a sandbox of its own (``[agent] sandbox = true``).

    It sees the host read-only (every top-level directory of ``/``, or of ``top``: its
    interpreter may be installed anywhere), its own ``/tmp``, ``/proc``, ``/dev`` and pid
    namespace, the materialized commit read-only at its own path (its working
    directory) and the trial's ``workspace`` read-write at ``workdir``; the network is
    shared (a target calls its model) and the environment is the target's own. No
    capability. So it can write nothing but its workspace (not the installed gitevals),
    and sees no process of the host (nothing to trace: not gitevals, not a verifier's
    sandbox). It is started before it sees anything (the workspace is bound by path).
    ``root``: the task's image, unpacked, is its system instead of the host's (its
    command must then exist in the image)."""
    names = sorted(os.listdir("/")) if top is None else list(top)
    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--share-net",
           "--cap-drop", "ALL"]
    if root is not None:
        names = []
        out += image_binds(root, top_entries(root), workdir)
    for name in names:
        path = "/" + name
        if name in ("proc", "dev", "tmp") or not name or "/" in name:
            continue
        out += (["--symlink", os.readlink(path), path] if os.path.islink(path)
                else ["--ro-bind-try", path, path])
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm",
            "--ro-bind", tree_dir, tree_dir, "--bind", workspace, workdir,
            "--remount-ro", "/", "--chdir", tree_dir]
    return [*out, "--", *argv]
