"""Targets: the harness under test, one process per conversation.

A ``command`` target is an argv started in the materialized commit; it reads one
JSON line per user turn on stdin and answers one JSON line on stdout. A
``python`` target (``module:function``) is driven through the same protocol by a
small worker script (``gitevals/run/pyworker.py``, run by path in the interpreter the
settings name), so the tree's code never runs inside gitevals and can always be
killed. Where there is a supervisor, the worker imports the module once per run and
forks a fresh child for each conversation.

Everything that can go wrong with a target is a ``TargetError`` carrying the
error kind of the run artifact; it ends that conversation only. When a
conversation ends, its target and every process the target started are killed:
on Linux the run's supervisor (``gitevals.run.reaper``) starts each target beneath a
holder of its own, and what is beneath the holder is swept; elsewhere the target's
process group is killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, NoReturn, NotRequired, Protocol, TypedDict

if TYPE_CHECKING:
    import queue
    import selectors
    import subprocess
    import threading
    from typing import TypeAlias

    from _typeshed import FileDescriptorLike
    from jsonschema import ValidationError

    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import ErrorRecord
    from gitevals.run.reaper import Channel, Request, Supervisor
    from gitevals.settings import Endpoint

    #: Where a shared target's reader puts one conversation's answer lines (or its end).
    Replies: TypeAlias = queue.Queue["bytes | TargetError"]

#: A reply line longer than this is a protocol error (a runaway target must not
#: eat the memory of the run).
MAX_LINE = 16 * 1024 * 1024
#: After the last turn a target gets this long to exit on its own after stdin closes.
EXIT_GRACE = 0.5
_STDERR_TAIL = 2048
#: Exit status of the python worker when the module:function cannot be loaded.
_START_FAILED = 97
#: The python target's worker, a standalone script (standard library only).
PYWORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyworker.py")
#: The endpoint targets' worker (``[target] openai``/``http``), standard library only.
HTTPWORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "httpworker.py")
#: How the endpoint worker's exit status names the trial's error (its stderr line says why).
_WORKER_KINDS = {97: "target_start", 98: "target_protocol"}


class Turn(TypedDict):
    """One user turn as a target reads it (``schemas/target-input.schema.json``); the task
    keys only for a task directory's iterations."""

    text: str
    turn: int
    case: str
    scenario: str
    trial: int
    task: NotRequired[str]
    workspace: NotRequired[str]
    iteration: NotRequired[int]
    choices: NotRequired[list[str]]  # only for a row of a multiple-choice drift slice
    max_tokens: NotRequired[int]     # its token budget (gitevals.goldens.choice)


class TargetError(Exception):
    """A conversation that could not go on: ``kind`` is the artifact error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def as_dict(self) -> ErrorRecord:
        return {"kind": self.kind, "message": self.message}


def target_argv(command: Sequence[str] | None, python: str | None,
                interpreter: str | None = None, endpoint: Endpoint | None = None) -> list[str]:
    """The argv that starts one conversation with the configured target (a python target
    in ``interpreter``, by default gitevals' own; an endpoint through gitevals' worker)."""
    if command:
        return list(command)
    if python:
        return [interpreter or sys.executable, PYWORKER, python]
    if endpoint is not None:
        config = {"url": endpoint.url, "model": endpoint.model,
                  "api_key_env": endpoint.api_key_env}
        return [sys.executable, HTTPWORKER, endpoint.kind, json.dumps(config)]
    raise ValueError("no target configured")


def zygote_argv(argv: Sequence[str]) -> list[str]:
    """The warm worker's argv for a python target's ``target_argv``."""
    return [*argv[:2], "--zygote", *argv[2:]]


def resolve_interpreter(written: str | None, repo_dir: str | None) -> str:
    """The interpreter a python target runs in: ``[target] interpreter`` as written (a
    path with a ``/`` is relative to the repository's working directory, a bare name is
    looked up on PATH), else the repository's own ``.venv`` when it has one, else
    gitevals' own. The path is kept as given (a venv's python is a link that must stay
    one: the venv is found from where it is called)."""
    import shutil

    base = repo_dir or os.getcwd()
    if written is None:
        venv = os.path.join(base, ".venv", "bin", "python")
        return venv if os.path.isfile(venv) and os.access(venv, os.X_OK) else sys.executable
    if "/" in written:
        return os.path.join(base, os.path.expanduser(written))
    return shutil.which(written) or written


class HasPid(Protocol):
    """A process that can be killed by process group: a target or a grader worker."""

    @property
    def pid(self) -> int: ...


class ProcessRegistry:
    """Every live target/worker process group, so an interrupt can kill them all; and the
    run's supervisor (``gitevals.run.reaper``), started on first use, with a slot for each
    conversation running at a time (so one per job slot), until ``close``."""

    def __init__(self) -> None:
        import threading

        from gitevals.run.reaper import available

        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._procs: set[HasPid] = set()
        self.closed = False
        self._channels: list[Channel] = []  # the supervisor, and any that replaced it
        self._idle: list[Supervisor] = []
        self._direct = not available()  # no supervisors here: start targets directly
        self._prestarted = False
        #: each slot keeps a holder for all its conversations (``keeps_holders``)
        self.keep_holders = False

    def add(self, proc: HasPid) -> None:
        with self._lock:
            self._procs.add(proc)
            closed = self.closed
        if closed:
            kill_group(proc)

    def discard(self, proc: HasPid) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        """Kill every registered group and every process beneath a registered process or
        the supervisor (which stays, to reap them); later ``add``s are killed on arrival."""
        from gitevals.run.reaper import kill_beneath

        with self._lock:
            self.closed = True
            procs = list(self._procs)
            roots = [p.pid for p in procs]
            roots += [c.proc.pid for c in self._channels if not c.gone]
        kill_beneath(*roots)  # first: killing a parent first would hide its children
        for proc in procs:
            kill_group(proc)

    def acquire(self) -> Supervisor | None:
        """A slot on the run's supervisor (started when there is none, or it died); None
        where there can be none.

        A slot serves one conversation at a time, from ``acquire`` to ``release``.
        """
        from gitevals.run.reaper import Supervisor

        with self._lock:
            while self._idle:
                if not (sup := self._idle.pop()).gone:
                    return sup
        channel = self._channel()
        return None if channel is None else Supervisor(channel, keep=self.keep_holders)

    def prestart(self) -> None:
        """Start the supervisor in the background now (it takes a Python start): the first
        conversation finds it ready, or waits for the start under way. Once per registry:
        ``run`` asks before it reads the plan, the run again before it materializes."""
        import threading

        with self._lock:
            if self._prestarted:
                return
            self._prestarted = True
        threading.Thread(target=self._channel, daemon=True, name="gitevals-supervisor").start()

    def preboot(self, interpreter: str, env: Mapping[str, str] | None) -> None:
        """Have the supervisor start a python target's warm worker in ``interpreter`` now,
        before the commit is materialized (#27: the start): its interpreter's start
        overlaps the plan, and the preflight's ``warm`` tells it only where and what to
        import. In the background; a guess that turns out wrong is stopped by the
        supervisor. Not when ``env`` (None: ours) names a relative ``PYTHONPATH`` entry:
        it would be resolved against where the worker starts, which the tree is not yet."""
        import threading

        path = (os.environ if env is None else env).get("PYTHONPATH", "")
        if any(not os.path.isabs(p) for p in path.split(os.pathsep)) and path:
            return
        request: Request = {"op": "boot", "boot": [interpreter, PYWORKER, "--boot"],
                            "env": None if env is None else dict(env)}

        def ask() -> None:
            from gitevals.run.reaper import SupervisorGone

            with self._starting:  # after a start under way (``prestart``); never one more
                channel = self._channels[-1] if self._channels else None
            if channel is not None and not channel.gone:
                with suppress(SupervisorGone):  # (closed meanwhile: nothing to boot)
                    channel.ask(request, 0)

        threading.Thread(target=ask, daemon=True, name="gitevals-preboot").start()

    def _channel(self) -> Channel | None:
        from gitevals.run.reaper import Channel

        with self._starting:  # one start at a time: every slot shares it
            if self._direct:
                return None
            if self._channels and not self._channels[-1].gone:
                return self._channels[-1]
            started = Channel.start()
            if started is None:
                self._direct = True  # it will not start next time either
                return None
            with self._lock:
                self._channels.append(started)
            return started

    def release(self, sup: Supervisor) -> None:
        """``sup`` has ended its conversation and can serve the next."""
        with self._lock:
            if not sup.gone:
                self._idle.append(sup)

    def close(self) -> None:
        """Stop the supervisor; it first kills whatever is still beneath it. A start under
        way (``prestart``) is waited for, so what it starts is stopped too."""
        with self._starting, self._lock:
            channels, self._channels = self._channels, []
            idle, self._idle = self._idle, []
        for sup in idle:
            sup.close()  # its kept holder, if any, goes
        for channel in channels:
            channel.close()


#: At most this many job slots keep a holder each: a kept holder is a copy of the
#: supervisor (~10 MB resident, ~3 MB PSS, against ~1.3 MB for a holder that waits as
#: ``cat``): 8 of them and the run stay under the 150 MB of ``--jobs 64``.
KEPT_HOLDERS = 8


def keeps_holders(jobs: int) -> bool:
    """Whether a run of ``jobs`` slots keeps a holder per slot rather than one per
    conversation: when there are no more slots than CPUs (conversations then compete for
    the CPU, and a holder's fork and exec cost a tenth of a trivial target's start), at
    most ``KEPT_HOLDERS``. More slots than CPUs mean conversations that mostly wait, where
    memory counts and CPU does not (``benchmarks/bench_run.py``,
    ``bench_conversations.py --rss``)."""
    cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1)
    return jobs <= min(cpus, KEPT_HOLDERS)


def kill_group(proc: HasPid) -> None:
    """SIGKILL the process group ``proc`` leads (it was started in its own session)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class _Process:
    """A started target: its pid and gitevals' ends of its stdin, stdout and stderr.

    Its pid is also its process group id, and stays reserved (the process is not
    reaped) until ``end``: killing the group can never reach a process that reused it.
    """

    def __init__(self, pid: int, fds: tuple[int, int, int]) -> None:
        self.pid = pid
        self.stdin, self.stdout, self.stderr = fds

    def status(self, wait: float) -> int | None:
        """The exit code once the target exits (within ``wait`` s), without reaping it."""
        raise NotImplementedError

    def _finish(self) -> None:
        """Kill the target (and what it started) and reap it."""
        raise NotImplementedError

    def close_stdin(self) -> None:
        if self.stdin >= 0:
            with suppress(OSError):
                os.close(self.stdin)
            self.stdin = -1

    def end(self) -> None:
        """Kill and reap the target and, where supervised, everything it started."""
        self._finish()
        self.close_stdin()
        for fd in (self.stdout, self.stderr):
            with suppress(OSError):
                os.close(fd)


class _Supervised(_Process):
    """A target started by its job slot's supervisor, which sweeps its subtree at the end."""

    def __init__(self, sup: Supervisor, pid: int, fds: tuple[int, int, int],
                 registry: ProcessRegistry) -> None:
        super().__init__(pid, fds)
        self.sup = sup
        self.registry = registry

    def status(self, wait: float) -> int | None:
        from gitevals.run.reaper import SupervisorGone

        try:
            return self.sup.status(wait)
        except SupervisorGone:
            return None

    def _finish(self) -> None:
        from gitevals.run.reaper import SupervisorGone

        try:
            self.sup.end()
        except SupervisorGone:
            # Something killed the supervisor: the target is gitevals' own child now
            # (its subreaper), unreaped, and everything else is swept when the run ends.
            kill_group(self)
        self.registry.release(self.sup)


class _Direct(_Process):
    """A target started by gitevals itself (no supervisor here): its group is killed."""

    def __init__(self, proc: subprocess.Popen[bytes], fds: tuple[int, int, int]) -> None:
        super().__init__(proc.pid, fds)
        self.proc = proc

    def status(self, wait: float) -> int | None:
        deadline = time.monotonic() + wait
        while True:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return self.proc.returncode
            if info is not None:
                exited = info.si_code == os.CLD_EXITED
                return info.si_status if exited else -info.si_status
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)

    def _finish(self) -> None:
        kill_group(self)
        self.proc.wait()


def _pipes() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Three pipes: the target's ends (stdin, stdout, stderr), then gitevals' ends."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    return (in_r, out_w, err_w), (in_w, out_r, err_r)


def _short(data: bytes, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


class Conversation:
    """One target process: ``ask`` sends a turn and reads its one-line reply by a deadline."""

    def __init__(self, argv: Sequence[str], cwd: str, *, env: Mapping[str, str] | None = None,
                 registry: ProcessRegistry | None = None, python_target: bool = False) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        # Without a registry of the run the conversation has one (and a supervisor) of its own.
        self._own_registry = registry is None
        self.registry = registry if registry is not None else ProcessRegistry()
        self.python_target = python_target
        self.proc: _Process | None = None
        self._buf = bytearray()
        self._stderr = bytearray()
        self._sel: selectors.BaseSelector | None = None
        self.failed = False

    def start(self, deadline: float | None = None) -> None:
        import selectors

        theirs, ours = _pipes()
        try:
            self.proc = self._spawn(theirs, ours, deadline or time.monotonic())
        except (OSError, TargetError) as exc:
            for fd in ours:
                os.close(fd)
            if isinstance(exc, TargetError):
                raise
            raise TargetError("target_start",
                              f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from exc
        finally:
            for fd in theirs:
                os.close(fd)
        self.registry.add(self.proc)
        for fd in ours:
            os.set_blocking(fd, False)
        self._sel = _selector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self._sel.register(self.proc.stderr, selectors.EVENT_READ)

    def _spawn(self, theirs: tuple[int, int, int], ours: tuple[int, int, int],
               deadline: float) -> _Process:
        """Start the target through the run's supervisor (a python target as a fork of
        the run's warm worker), or directly where there is none."""
        from gitevals.run.reaper import StartFailed, SupervisorGone

        sup = self.registry.acquire()
        if sup is not None:
            zygote = zygote_argv(self.argv) if self.python_target else None
            try:
                pid = sup.spawn(self.argv, self.cwd, self.env, theirs, zygote,
                                max(0.0, deadline - time.monotonic()))
            except SupervisorGone:
                pass  # started directly: what escapes is swept when the run ends
            except StartFailed as exc:
                self.registry.release(sup)
                raise TargetError("target_start",
                                  f"cannot load the python target: {exc}") from None
            except OSError:
                self.registry.release(sup)
                raise
            else:
                return _Supervised(sup, pid, ours, self.registry)
        import subprocess

        proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=theirs[0],
                                stdout=theirs[1], stderr=theirs[2], start_new_session=True)
        return _Direct(proc, ours)

    def ask(self, message: Turn, deadline: float) -> JSONObject:
        """Send ``message`` as one JSON line; the parsed reply object, or ``TargetError``."""
        if self.proc is None:
            self.start(deadline)
        line = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        try:
            self._write(line, deadline)
            return parse_reply(self._read_line(deadline))
        except TargetError:
            self.failed = True  # the conversation is over: no grace period on close
            self.kill()
            raise

    def _write(self, data: bytes, deadline: float) -> None:
        assert self.proc is not None
        fd = self.proc.stdin
        view = memoryview(data)
        while view:
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                n = 0
            except BrokenPipeError:
                raise self._exited("exited before reading its turn") from None
            view = view[n:]
            if view and not _wait_writable(fd, deadline):
                raise self._timeout()

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc is not None and self._sel
        out_fd = self.proc.stdout
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                return line
            if len(self._buf) > MAX_LINE:
                raise TargetError("target_protocol",
                                  f"reply line longer than {MAX_LINE} bytes without a newline")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout()
            for key, _ in self._sel.select(remaining):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if key.fd != out_fd:
                    self._stderr_chunk(key.fileobj, chunk)
                elif chunk:
                    self._buf += chunk
                elif self._buf:
                    raise TargetError("target_protocol", "exited after writing half a line: "
                                      f"{_short(bytes(self._buf))!r}")
                else:
                    raise self._exited("exited before answering")

    def _stderr_chunk(self, fileobj: FileDescriptorLike, chunk: bytes) -> None:
        if not chunk:
            assert self._sel is not None
            self._sel.unregister(fileobj)
            return
        self._stderr += chunk
        if len(self._stderr) > _STDERR_TAIL:
            del self._stderr[:-_STDERR_TAIL]

    def _timeout(self) -> TargetError:
        self.kill()
        return TargetError("target_timeout",
                           "no answer before the scenario timeout; its process group was killed")

    def _exited(self, what: str) -> TargetError:
        assert self.proc is not None
        code = self.proc.status(1.0)
        self._drain_stderr()
        lines = bytes(self._stderr).strip().splitlines()
        said = f": {_short(lines[-1])}" if lines else ""  # its last words, e.g. the exception
        if self.python_target and code == _START_FAILED:
            return TargetError("target_start", f"cannot load the python target{said}")
        if self.argv[1:2] == [HTTPWORKER] and lines:  # the endpoint worker's own line
            return TargetError(_WORKER_KINDS.get(code or 0, "target_crash"),
                               _short(lines[-1], 500))
        status = f"exited with code {code}" if code is not None else "closed its output"
        return TargetError("target_crash", f"{what} ({status}){said}")

    def _drain_stderr(self) -> None:
        assert self.proc is not None
        with suppress(OSError, ValueError):
            while chunk := os.read(self.proc.stderr, 1 << 16):
                self._stderr_chunk(self.proc.stderr, chunk)

    def kill(self) -> None:
        if self.proc is not None:
            kill_group(self.proc)

    def close(self) -> None:
        """End the conversation: close stdin, give the target a moment, then kill it and
        every process it started (``gitevals.run.reaper``)."""
        proc = self.proc
        if proc is not None:
            proc.close_stdin()
            if not self.failed:
                self._await_eof(time.monotonic() + EXIT_GRACE)
            # Before reaping: once reaped its pid may be reused, and kill_all must not hit it.
            self.registry.discard(proc)
            proc.end()
            if self._sel is not None:
                self._sel.close()
            self.proc = None
        if self._own_registry:
            self.registry.close()

    def _await_eof(self, deadline: float) -> None:
        """Wait (bounded) for stdout to close, i.e. for the target to exit on its own."""
        assert self.proc is not None and self._sel
        out_fd = self.proc.stdout
        while (remaining := deadline - time.monotonic()) > 0:
            events = self._sel.select(remaining)
            if not events:
                return
            for key, _ in events:
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except OSError:
                    return
                if key.fd == out_fd and not chunk:
                    return
                if key.fd != out_fd:
                    self._stderr_chunk(key.fileobj, chunk)

    def __enter__(self) -> Conversation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _selector() -> selectors.BaseSelector:
    """A selector for one conversation's two pipes: ``poll`` where there is one (a
    conversation's two descriptors cost no ``epoll`` instance of their own to create,
    fill and close, four system calls a conversation for nothing), else the default."""
    import selectors

    return (selectors.PollSelector if hasattr(selectors, "PollSelector")
            else selectors.DefaultSelector)()


def _wait_writable(fd: int, deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_WRITE)
        return bool(sel.select(remaining))


REPLY_SCHEMA = "target-reply"
#: A reply's keys in reading order: of several problems, the first is the one reported.
_REPLY_KEYS = ("final_answer", "error", "tool_calls", "hooks")


class _Constant(Exception):
    pass


def _no_constant(name: str) -> NoReturn:
    raise _Constant(name)


#: One decoder for every reply: ``json.loads`` given ``parse_constant`` builds a decoder
#: and its scanner on each call, most of the cost of reading a short reply. (Shared by
#: the job threads as ``json.loads`` shares its own: a decode holds no state between calls.)
_REPLY_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_reply(line: bytes) -> JSONObject:
    """One reply line -> its object, or ``TargetError('target_protocol')`` saying what is wrong."""
    try:
        # as ``json.loads`` reads bytes: UTF-8, -16 or -32, told apart by their first bytes
        obj: JSON = _REPLY_DECODER.decode(line.decode(json.detect_encoding(line),
                                                      "surrogatepass"))
    except _Constant as exc:
        raise TargetError("target_protocol", f"reply holds {exc}, which JSON does not allow "
                                             "(artifacts must stay valid JSON)") from None
    except (ValueError, UnicodeDecodeError):
        raise TargetError("target_protocol", f"reply is not JSON: {_short(line)!r}") from None
    except RecursionError:
        raise TargetError("target_protocol", "reply cannot be kept in the run: it is nested "
                                             "too deep to parse") from None
    problem = _unkept(obj) or reply_problem(obj)
    if problem or not isinstance(obj, dict):  # the schema wants an object: never both
        raise TargetError("target_protocol", problem or "reply is not a JSON object")
    obj.setdefault("tool_calls", [])
    obj.setdefault("hooks", [])
    obj.setdefault("error", None)
    return obj


def _unkept(obj: object) -> str | None:
    """A reply gitevals could not store faithfully is a protocol error of its trial."""
    from gitevals.run.artifact import unkeepable

    why = unkeepable(obj)
    return f"reply cannot be kept in the run: {why}" if why else None


def reply_problem(obj: JSON) -> str | None:
    """What makes ``obj`` an invalid reply (schemas/target-reply.schema.json), or None."""
    from gitevals import validation

    if validation.is_valid(REPLY_SCHEMA, obj):
        return None
    return _reply_phrase(min(validation.errors(REPLY_SCHEMA, obj), key=_reading_order))


def _reading_order(err: ValidationError) -> tuple[int, tuple[str | int, ...]]:
    path = tuple(err.absolute_path)
    if not path:  # the reply as a whole comes first
        return 0, path
    known = path[0] in _REPLY_KEYS
    return 1 + (_REPLY_KEYS.index(path[0]) if known else len(_REPLY_KEYS)), path


def _reply_phrase(err: ValidationError) -> str:
    """A schema error in the words of the protocol's documentation."""
    path = tuple(err.absolute_path)
    if not path and err.validator == "type":
        return f"reply is a JSON {type(err.instance).__name__}, not an object"
    if not path and err.validator == "required":
        return "reply has no 'final_answer' (use null when there is none)"
    if path in (("final_answer",), ("error",)):
        return f"reply '{path[0]}' must be a string or null"
    if path[:1] in (("tool_calls",), ("hooks",)) and len(path) == 1:
        return f"reply '{path[0]}' must be a list"
    if path[:1] in (("tool_calls",), ("hooks",)):
        return f"reply '{path[0]}'[{path[1]}] must be an object with a string 'name'"
    from gitevals.validation import json_path

    return f"reply at {json_path(path)}: {err.message}"  # a rule the schema gained later


# --- one command target, many conversations ([target] conversations = "many") -----------


class SharedTarget:
    """One long-lived command target that serves many conversations at once, for a target
    that declares it can (``[target] conversations = "many"``).

    Every line gitevals writes carries ``"conversation": ID``; the target answers each
    turn with one line carrying the same ID, in any order, and gets
    ``{"conversation": ID, "end": true}`` (no answer) when that conversation is over. A
    reader thread routes each answer to the conversation waiting for it.

    The crash rule: when the process exits, or writes a line that names no conversation
    of this run, every conversation in flight -- waiting for an answer or between turns --
    ends with ``target_crash``, and the next conversation starts a new process. A
    conversation that times out ends alone (the process serves the others on). What the
    process starts is swept when the run ends, not per conversation.
    """

    def __init__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None,
                 registry: ProcessRegistry) -> None:
        import threading

        self.argv, self.cwd, self.env, self.registry = list(argv), cwd, env, registry
        self._lock = threading.Lock()
        self._proc: Conversation | None = None
        self.generation = 0  # how many processes were started
        self._waiting: dict[str, Replies] = {}  # conversation id -> its queue
        self._closed = False
        self._reader: threading.Thread | None = None

    def conversation(self, cid: str) -> SharedConversation:
        return SharedConversation(self, cid)

    def _ensure(self, deadline: float) -> tuple[Conversation, int]:
        """The running process (started now when there is none) and its generation."""
        import threading

        if self._proc is None:
            proc = Conversation(self.argv, self.cwd, env=self.env, registry=self.registry)
            proc.start(deadline)
            self._proc = proc
            self.generation += 1
            # The reader alone closes a process's pipes (once it saw their end), so a
            # descriptor number is never read after another conversation reused it.
            self._reader = threading.Thread(target=self._read, args=(proc, self.generation),
                                            daemon=True, name="gitevals-shared-target")
            self._reader.start()
        return self._proc, self.generation

    def send(self, cid: str, message: Turn, deadline: float, since: int | None,
             queue: Replies) -> int:
        """Write one turn of conversation ``cid``; the generation of the process it went
        to. ``since``: the generation the conversation began on (None: it begins now)."""
        with self._lock:
            if self._closed:
                raise TargetError("target_crash", "the run is over")
            if since is not None and since != self.generation:
                raise TargetError("target_crash", "the shared target was restarted during "
                                  "this conversation; its state is gone")
            proc, generation = self._ensure(deadline)
            if since is not None and since != generation:
                raise TargetError("target_crash", "the shared target was restarted during "
                                  "this conversation; its state is gone")
            self._waiting[cid] = queue
            line = json.dumps({**message, "conversation": cid}, ensure_ascii=False)
            try:
                proc._write(line.encode() + b"\n", deadline)
            except TargetError as exc:
                proc.kill()  # its reader sees the end and applies the crash rule
                raise TargetError("target_crash", f"the shared target failed: {exc.message}"
                                  ) from None
            return generation

    def end(self, cid: str, generation: int) -> None:
        """Conversation ``cid`` is over: tell the target (best effort), stop routing to it."""
        with self._lock:
            self._waiting.pop(cid, None)
            if self._proc is None or generation != self.generation or self._closed:
                return
            line = json.dumps({"conversation": cid, "end": True}).encode() + b"\n"
            with suppress(TargetError):
                self._proc._write(line, time.monotonic() + EXIT_GRACE)

    def _read(self, proc: Conversation, generation: int) -> None:
        """The reader thread: route each answer line to its conversation."""
        while True:
            try:
                line = proc._read_line(time.monotonic() + 7 * 86400)  # as long as it lives
                cid = _conversation_of(line)
            except TargetError as exc:
                self._crash(generation, exc)
                return
            except OSError as exc:
                self._crash(generation, TargetError("target_crash", str(exc)))
                return
            with self._lock:
                queue = self._waiting.get(cid) if cid is not None else None
            if queue is None:
                self._crash(generation, TargetError("target_protocol", "an answer for no "
                            f"conversation in flight: {_short(line)!r}"))
                return
            queue.put(line)

    def _crash(self, generation: int, exc: TargetError) -> None:
        """The crash rule (in the reader thread): every conversation in flight ends, the
        process is killed with what it started, and the next conversation starts anew."""
        with self._lock:
            if generation != self.generation:
                return  # a process replaced since (cannot happen while this one reads)
            proc: Conversation | None
            if self._proc is not None:
                proc, self._proc = self._proc, None
            else:  # closed by ``close``: end it here
                proc, self._closing = self._closing, None
            waiting, self._waiting = self._waiting, {}
        failed = TargetError("target_crash", f"the shared target ended: {exc.message}")
        for queue in waiting.values():
            queue.put(failed)
        if proc is not None:
            proc.failed = True
            proc.close()

    _closing: Conversation | None = None

    def close(self) -> None:
        """End the process: its stdin closed, a moment to exit, then killed with what it
        started (the reader thread reaps it)."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
            self._closing = proc
            reader = self._reader
        if proc is None or reader is None:
            return
        if proc.proc is not None:
            proc.proc.close_stdin()
        reader.join(EXIT_GRACE)
        if reader.is_alive():
            proc.kill()
            reader.join()


def _conversation_of(line: bytes) -> str | None:
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise TargetError("target_protocol", f"reply is not JSON: {_short(line)!r}") from None
    cid = obj.get("conversation") if isinstance(obj, dict) else None
    return cid if isinstance(cid, str) else None


class SharedConversation:
    """One conversation on a ``SharedTarget``: ``ask`` and ``close`` as ``Conversation``."""

    def __init__(self, shared: SharedTarget, cid: str) -> None:
        import queue

        self.shared, self.cid = shared, cid
        self.generation: int | None = None
        self._queue: Replies = queue.Queue()
        self.failed = False

    def ask(self, message: Turn, deadline: float) -> JSONObject:
        import queue

        if self.failed:
            raise TargetError("target_crash", "this conversation already ended")
        try:
            self.generation = self.shared.send(self.cid, message, deadline, self.generation,
                                               self._queue)
            try:
                got = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TargetError("target_timeout", "no answer before the scenario timeout "
                                  "(the shared target serves the other conversations on)"
                                  ) from None
            if isinstance(got, TargetError):
                raise got
            reply = parse_reply(got)
        except TargetError:
            self.failed = True
            raise
        reply.pop("conversation", None)
        return reply

    def close(self) -> None:
        if self.generation is not None:
            self.shared.end(self.cid, self.generation)

    def __enter__(self) -> SharedConversation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
