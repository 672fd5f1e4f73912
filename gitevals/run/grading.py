"""Graders at run time: long-lived worker processes the job slots share.

The worker runs in the materialized commit, imports ``<root>/graders/<file>.py``
by path and calls ``fn(t, case, run)``. The parent talks to it over two pipes
with length-prefixed JSON frames, so a grader that prints (even from C) cannot
corrupt the protocol: the worker keeps private copies of its stdin/stdout and
points fds 0 and 1 at /dev/null.

Only raw answers are recorded here; deciding what they mean (malformed,
``pass_below``) is ``scoring.judge_grader``'s job.

This module is imported by the worker, so it imports the standard library only,
and the parent-only modules (subprocess, threading) lazily: the worker starts fast.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import struct
import sys
import time
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, NotRequired, TypedDict, TypeGuard

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Iterator
    from types import ModuleType

    from gitevals.graderfile import GraderFile
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import ErrorRecord
    from gitevals.run.judge import T
    from gitevals.run.targets import ProcessRegistry

#: A grader's own time (its code: importing its module and the call, not the time it
#: waits for the judge): past it the grader is stopped and its worker replaced. The whole
#: call's ceiling adds the judge's budget for a module that asks the judge (``ceiling``).
GRADER_TIMEOUT = 30.0
MAX_FRAME = 16 * 1024 * 1024
#: Both ends busy-wait this long for the other's next frame before sleeping in poll:
#: a wake-up across CPUs costs tens of microseconds, more than a trivial grader call.
SPIN = 0.0003
_HEADER = struct.Struct(">I")
_BOOT = ("import sys; sys.path.pop(0); "
         "from gitevals.run.grading import worker_main; worker_main(sys.argv[1])")


class WorkerGone(Exception):
    """The worker exited or sent a broken frame."""


class NoGrader(Exception):
    """The grader file or function to call is not there (a ``LookupError`` raised while
    importing a grader module is that module's error, not this)."""


class WorkerAnswer(TypedDict):
    """A grader worker's frame for one call: what the grader returned (JSON) or the error
    that stopped it, and the judge calls it made (only when it asked the judge)."""

    raw: JSON
    error: ErrorRecord | None
    usage: NotRequired[JSON]


class GraderReply(TypedDict):
    """One grader call as the parent records it (``GraderWorker.call``)."""

    name: str
    raw: JSON
    error: ErrorRecord | None
    duration_ms: int
    usage: NotRequired[JSON]


def _err(kind: str, message: str) -> ErrorRecord:
    return {"kind": kind, "message": message}


def split_name(name: str) -> tuple[str, str]:
    """``quality.answers`` -> (``quality``, ``answers``): read to the first dot."""
    file, _, fn = name.partition(".")
    return file, fn


# --- parent side ---------------------------------------------------------------


class GraderWorker:
    """One worker process; ``call`` returns a grader record (without ``index``)."""

    def __init__(self, tree_dir: str, root: str, judge: JSONObject | None,
                 timeout: float = GRADER_TIMEOUT,
                 registry: ProcessRegistry | None = None,
                 on_ready: Callable[[GraderWorker], None] | None = None) -> None:
        self.tree_dir = tree_dir
        self.on_ready = on_ready  # told when a started process has sent its ready frame
        self._ready = False
        self.root = root
        self.judge = judge
        self.config = json.dumps({"root": root, "judge": judge, "timeout": timeout})
        self.timeout = timeout
        self._limits: dict[str, float] = {}  # grader file -> seconds a call may take
        self.registry = registry
        self.proc: subprocess.Popen[bytes] | None = None
        self._in = -1
        self._out = -1
        self._buf = bytearray()
        self._poll: select.poll | None = None

    def _start(self) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, self.config], cwd=self.tree_dir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        if self.registry is not None:
            self.registry.add(self.proc)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buf = bytearray()
        self._ready = False
        os.set_blocking(self._out, False)
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN)

    def call(self, name: str, case: JSONObject, run: JSONObject) -> GraderReply:
        """Run grader ``name`` once; returns ``{"name", "raw", "error", "duration_ms"}``."""
        started = time.monotonic()
        raw, error, used = self._call(name, case, run)
        ms = int((time.monotonic() - started) * 1000)
        out: GraderReply = {"name": name, "raw": raw, "error": error, "duration_ms": ms}
        if used is not None:
            out["usage"] = used
        return out

    def _call(self, name: str, case: JSONObject,
              run: JSONObject) -> tuple[JSON, ErrorRecord | None, JSON]:
        if self.proc is None:
            try:
                self._start()
            except OSError as exc:
                return None, _err("grader_error", f"grader {name}: cannot start the grader "
                                                  f"worker: {exc.strerror or exc}"), None
        file, fn = split_name(name)
        frame = json.dumps({"file": file, "fn": fn, "case": case, "run": run},
                           ensure_ascii=False).encode()
        limit = self.limit(file)
        try:
            _write_all(self._in, _HEADER.pack(len(frame)) + frame)
            reply = self._read(time.monotonic() + limit)
        except TimeoutError:
            self.stop()
            return None, _err("grader_timeout", f"grader {name} ran past {limit:g} s, its "
                                                "whole ceiling; its worker was killed and "
                                                "restarted"), None
        except (WorkerGone, OSError) as exc:
            code = self.stop()
            why = f" ({exc})" if str(exc) else ""
            return None, _err("grader_error", f"grader {name}: worker exited"
                                              f"{f' with code {code}' if code else ''}{why}"), None
        from gitevals.run.artifact import is_error_record

        error = reply.get("error")
        if error is None or is_error_record(error):
            if error is not None and error["kind"] == "grader_timeout":
                self.stop()  # stopped mid-way by its own clock: its module state is suspect
            return reply.get("raw"), error, reply.get("usage")
        return None, _err("grader_error", f"grader {name}: its worker sent a malformed "
                                          "error record"), None

    def limit(self, file: str) -> float:
        """A call's ceiling (``ceiling``): the grader's own limit, plus the judge's budget
        (every attempt and wait, ``judge.budget``) for a grader file that asks the judge:
        a slow judge must end as the ``judge_error`` it is, not as this grader's timeout."""
        if file not in self._limits:
            from gitevals.run.judge import module_budget

            extra = 0.0
            if self.judge is not None and file.isidentifier():
                path = os.path.join(self.tree_dir, self.root, "graders", f"{file}.py")
                with suppress(OSError), open(path, "rb") as f:
                    extra = module_budget(self.judge, f.read())
            self._limits[file] = self.timeout + extra
        return self._limits[file]

    def _fill(self, need: int, deadline: float) -> bytes:
        while len(self._buf) < need:
            chunk = self._chunk(need - len(self._buf), deadline)
            if not chunk:
                raise WorkerGone("")
            self._buf += chunk
        data = bytes(self._buf[:need])
        del self._buf[:need]
        return data

    def _chunk(self, want: int, deadline: float) -> bytes:
        """Read what the worker sent: spin briefly (a fast answer then costs no wake-up
        across cores), then wait in poll until ``deadline``."""
        spin_until = time.perf_counter() + SPIN
        while True:
            try:
                return os.read(self._out, max(1 << 16, want))
            except BlockingIOError:
                pass
            if time.perf_counter() < spin_until:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            assert self._poll is not None  # set by _start with the pipes it watches
            self._poll.poll(math.ceil(remaining * 1000))

    def _read(self, deadline: float) -> JSONObject:
        if not self._ready:  # a fresh process sends an empty frame once it has started
            (size,) = _HEADER.unpack(self._fill(_HEADER.size, deadline))
            if size:
                raise WorkerGone("no ready frame")
            self._ready = True
            if self.on_ready is not None:
                self.on_ready(self)
        (size,) = _HEADER.unpack(self._fill(_HEADER.size, deadline))
        if size > MAX_FRAME:
            raise WorkerGone(f"answer larger than {MAX_FRAME} bytes")
        reply: JSONObject = json.loads(self._fill(size, deadline))  # the worker's own frame
        return reply

    def stop(self) -> int | None:
        """Kill the worker (the next call starts a fresh one); its exit code if known."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if self.registry is not None:
            self.registry.discard(proc)  # before reaping, when its pid may be reused
        code = proc.wait()
        for f in (proc.stdin, proc.stdout):
            with suppress(OSError):
                assert f is not None
                f.close()
        self._poll = None
        return None if code == -9 else code


class GraderPool:
    """Warm workers the job slots share: a call takes an idle worker, else starts one,
    but only once it has waited as long as a start takes (a worker freed by then serves
    it sooner than a new one would), and no more than ``at_once`` (the CPUs) start at a
    time. Most graders answer in a millisecond or two, while a start is a Python
    (~60-75 ms of CPU): two slots asking at once started two workers where one served
    both; sixteen slots started sixteen. Slow graders (a judge's seconds) still soon get
    a worker per slot, each start only a start's time later than it would have been."""

    def __init__(self, tree_dir: str, root: str, judge: JSONObject | None,
                 timeout: float = GRADER_TIMEOUT,
                 registry: ProcessRegistry | None = None,
                 at_once: int | None = None) -> None:
        import threading

        self.args = (tree_dir, root, judge, timeout, registry)
        self.at_once = max(1, at_once or os.cpu_count() or 1)
        self._cond = threading.Condition()
        self._idle: list[GraderWorker] = []  # the last one used on top: it is warm
        self._workers: list[GraderWorker] = []
        self._starting: dict[GraderWorker, float] = {}  # started, no ready frame yet: when
        self._patience: float | None = None  # how long the last start took to get ready
        self._known = 0.0  # when the first start got ready (a wait before it counts not)

    def call(self, name: str, case: JSONObject, run: JSONObject) -> GraderReply:
        worker = self._take()
        try:
            return worker.call(name, case, run)
        finally:
            with self._cond:
                self._starting.pop(worker, None)  # it never got ready: its start is over
                self._idle.append(worker)
                self._cond.notify_all()

    def _take(self) -> GraderWorker:
        with self._cond:
            since = time.monotonic()
            while not self._idle:
                left = self._left(since)
                if not self._workers or (left == 0 and len(self._starting) < self.at_once):
                    worker = GraderWorker(*self.args, on_ready=self._started)
                    self._workers.append(worker)
                    self._starting[worker] = time.monotonic()
                    return worker
                self._cond.wait(left or None)  # woken by a worker freed or started
            return self._idle.pop()

    def _left(self, since: float) -> float | None:
        """How much longer a call that began waiting at ``since`` waits before it may start
        a worker: 0 once it has waited a start's time; None (no limit) while the first
        start has not told how long a start takes (a worker freed or started wakes it).
        Waiting for that first start does not count: its worker, just ready, is about to
        serve the call that started it, and may be free a millisecond later."""
        if self._patience is None:
            return None
        return max(0.0, max(since, self._known) + self._patience - time.monotonic())

    def _started(self, worker: GraderWorker) -> None:
        with self._cond:
            began = self._starting.pop(worker, None)
            if began is not None:
                now = time.monotonic()
                if self._patience is None:
                    self._known = now
                self._patience = now - began
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            workers, self._workers, self._idle = self._workers, [], []
            self._starting.clear()
        for w in workers:
            w.stop()


# --- worker side (a separate process in the materialized tree) ----------------------


def _json_safe(value: object) -> TypeGuard[JSON]:
    """Whether ``json.dumps`` takes ``value`` (no NaN): what the frame can carry as JSON."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


class _Graders:
    """Grader modules of the tree, each read and run once, handing out only what the
    resolver (``gitevals.graderfile``, as lint and diff use it) says the file defines."""

    def __init__(self, tree_dir: str, root: str) -> None:
        self.dir = os.path.join(tree_dir, root, "graders")
        self.rel = f"{root}/graders"
        self.files: dict[str, tuple[bytes, GraderFile]] = {}  # file -> its bytes, as read
        self.modules: dict[str, ModuleType] = {}
        # (file, fn) -> module, line
        self.found: dict[tuple[str, str], tuple[ModuleType, int]] = {}

    def find(self, file: str, fn: str) -> Callable[..., object]:
        """The function, or :class:`NoGrader` saying why there is none to call.

        Checked at every call, not just the first: a grader may rebind another's name."""
        found = self.found.get((file, fn))
        if found is None:
            found = self.found[(file, fn)] = self._resolve(file, fn)
        module, line = found
        func: object = getattr(module, fn, None)
        if not callable(func) or not _defined_at(func, module, fn, line):
            raise NoGrader(f"{self.rel}/{file}.py has no function {fn!r}: once the module "
                           f"has run it is not the def on line {line} (something rebound it)")
        return func

    def _resolve(self, file: str, fn: str) -> tuple[ModuleType, int]:
        """The module that defines grader ``fn`` (run once) and the line of its def."""
        from gitevals.graderfile import why_not

        if file not in self.files:
            self.files[file] = self._read(file)
        source, gf = self.files[file]
        rel = f"{self.rel}/{file}.py"
        if gf.error is not None:  # reported as the import error it would have been
            raise SyntaxError(f"{gf.error.message} ({rel}, line {gf.error.line})")
        binding = gf.function(fn)
        if binding is None:
            raise NoGrader(f"{rel} has no function {fn!r}: {why_not(gf, fn)}")
        if file not in self.modules:
            self.modules[file] = self._run(file, source)
        return self.modules[file], binding.line

    def _read(self, file: str) -> tuple[bytes, GraderFile]:
        """The file's bytes and what the resolver reads in them (executes nothing)."""
        import stat

        from gitevals.graderfile import read

        path = os.path.join(self.dir, f"{file}.py")
        try:
            st = os.lstat(path) if file.isidentifier() else None
        except OSError:
            st = None
        if st is None or stat.S_ISLNK(st.st_mode):
            # A link is not followed (lint refuses it as GE113): it may lead anywhere.
            why = " (it is a symlink; graders are regular files)" if st is not None else ""
            raise NoGrader(f"no grader file {self.rel}/{file}.py in this commit{why}")
        if not stat.S_ISREG(st.st_mode):
            raise NoGrader(f"{self.rel}/{file}.py is not a regular file")
        with open(path, "rb") as f:
            source = f.read()
        return source, read(source)

    def _run(self, file: str, source: bytes) -> ModuleType:
        """Execute exactly the bytes the resolver read (never a cached .pyc of the tree)."""
        import importlib.util

        path = os.path.join(self.dir, f"{file}.py")
        spec = importlib.util.spec_from_file_location(f"gitevals_graders.{file}", path)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
        return module


def _defined_at(func: object, module: ModuleType, name: str, line: int) -> bool:
    """Whether ``func`` is the ``def name`` on ``line`` of ``module``'s own source."""
    code = getattr(func, "__code__", None)
    return (code is not None and getattr(func, "__globals__", None) is module.__dict__
            and code.co_name == name and code.co_firstlineno == line
            and code.co_filename == module.__file__)


def _where(exc: BaseException, graders_dir: str, rel: str) -> str:
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.startswith(graders_dir)]
    if not frames:
        return ""
    f = frames[-1]
    return f" ({rel}/{os.path.relpath(f.filename, graders_dir)}:{f.lineno})"


def _exc_kind(exc: BaseException) -> str:
    from gitevals.run.judge import JudgeError, JudgeParseError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, JudgeParseError):
            return "judge_unparseable"
        if isinstance(seen, JudgeError):
            return "judge_error"
        seen = seen.__cause__ or seen.__context__
    return "grader_error"


class _OwnTimeUp(BaseException):
    """The grader's own time ran out (a BaseException: ``except Exception`` in a grader
    does not swallow it)."""


class OwnClock:
    """The grader's own time, as a real-time interval timer that stops while the judge
    answers (``paused``): SIGALRM interrupts the grader with ``_OwnTimeUp`` when it runs
    out. Code that never returns to the interpreter (a C loop) is the parent's to stop,
    at the call's ceiling."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def _up(self, signum: int, frame: object) -> None:
        raise _OwnTimeUp

    def start(self) -> None:
        signal.signal(signal.SIGALRM, self._up)
        signal.setitimer(signal.ITIMER_REAL, self.limit)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    @contextmanager
    def paused(self) -> Iterator[None]:
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            yield
        finally:
            if left > 0:  # 0: the clock was not running (nothing to resume)
                signal.setitimer(signal.ITIMER_REAL, left)


def _answer(graders: _Graders, t: T, req: JSONObject, clock: OwnClock | None = None
            ) -> WorkerAnswer:
    """Call the grader ``req`` names, on its own clock (module import included)."""
    name = f"{req['file']}.{req['fn']}"
    try:
        try:
            if clock is not None:
                clock.start()
            return _call_grader(graders, t, req)
        finally:
            if clock is not None:
                clock.stop()
    except _OwnTimeUp:
        limit = clock.limit if clock is not None else GRADER_TIMEOUT
        return {"raw": None, "error": _err("grader_timeout", f"grader {name} ran past "
                                           f"{limit:g} s of its own time (waiting for the "
                                           "judge not counted); its worker was restarted")}


def _call_grader(graders: _Graders, t: T, req: JSONObject) -> WorkerAnswer:
    file, fn = str(req["file"]), str(req["fn"])
    name = f"{file}.{fn}"
    try:
        func = graders.find(file, fn)
    except NoGrader as exc:
        return {"raw": None, "error": _err("grader_missing", f"grader {name}: {exc}")}
    except Exception as exc:  # importing the grader file raised
        where = _where(exc, graders.dir, graders.rel)
        return {"raw": None, "error": _err("grader_error", f"grader {name}: importing it "
                                                           f"raised {type(exc).__name__}: "
                                                           f"{exc}{where}")}
    try:
        raw = func(t, req["case"], req["run"])
    except Exception as exc:
        where = _where(exc, graders.dir, graders.rel)
        return {"raw": None, "error": _err(_exc_kind(exc), f"grader {name} raised "
                                                           f"{type(exc).__name__}: {exc}{where}")}
    if _json_safe(raw):
        return {"raw": raw, "error": None}
    text = repr(raw)[:300]
    return {"raw": text, "error": _err("grader_malformed", f"grader {name} returned "
                                                           f"{text}, which is not JSON; "
                                       'return True/False or {"pass": bool, "score": number, '
                                       '"why": str}')}


def _private_pipes() -> tuple[int, int]:
    """Keep the protocol fds; point 0 and 1 at /dev/null so prints cannot reach the parent."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- lives as long as the worker
    return proto_in, proto_out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Inbox:
    """Frames from the parent, read from a non-blocking fd with a short spin first."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        os.set_blocking(fd, False)

    def read(self, n: int) -> bytes | None:
        """Exactly ``n`` bytes, or None at end of input."""
        while len(self.buf) < n:
            chunk = self._chunk(n - len(self.buf))
            if not chunk:
                return None
            self.buf += chunk
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def _chunk(self, want: int) -> bytes:
        spin_until = time.perf_counter() + SPIN
        while True:
            try:
                return os.read(self.fd, max(1 << 16, want))
            except BlockingIOError:
                pass
            if time.perf_counter() >= spin_until:
                select.select([self.fd], [], [])


def worker_main(config: str) -> None:
    """Serve grader calls until stdin closes (run by ``GraderWorker`` in its own process)."""
    from gitevals.run.judge import T

    proto_in, proto_out = _private_pipes()
    cfg = json.loads(config)
    tree_dir = os.getcwd()
    graders = _Graders(tree_dir, cfg["root"])
    sys.path[:0] = [graders.dir, tree_dir]
    limit = cfg.get("timeout")
    clock = OwnClock(float(limit) if isinstance(limit, int | float) and limit > 0
                     else GRADER_TIMEOUT)
    t = T(cfg.get("judge"), clock.paused)
    inbox = _Inbox(proto_in)
    _write_all(proto_out, _HEADER.pack(0))  # ready: an empty frame before the first answer
    while (head := inbox.read(_HEADER.size)) is not None:
        body = inbox.read(_HEADER.unpack(head)[0])
        if body is None:
            break
        t.reset()
        answer = _answer(graders, t, json.loads(body), clock)
        used = t.usage()
        if used is not None:
            answer["usage"] = used
        reply = json.dumps(answer, ensure_ascii=False).encode()
        _write_all(proto_out, _HEADER.pack(len(reply)) + reply)
