"""Graders at run time: long-lived worker processes the job slots share.

The worker (``gitevals.run.graderworker``) runs in the materialized commit and calls
``fn(t, case, run)`` of ``<root>/graders/<file>.py``. This side reads each grader file once
and resolves it (``GraderSources``: ``gitevals.graderfile`` says which line defines the
function, executing nothing); the worker executes exactly those bytes. A name the file
does not define, a file that is not there or does not parse, is answered here, with no
worker. The two talk over two pipes with length-prefixed frames, so a grader that prints
(even from C) cannot corrupt the protocol: the worker keeps private copies of its
stdin/stdout and points fds 0 and 1 at /dev/null.

Only raw answers are recorded here; deciding what they mean (malformed,
``pass_below``) is ``scoring.judge_grader``'s job.
"""

from __future__ import annotations

import math
import os
import select
import signal
import sys
import time
from contextlib import suppress
from typing import TYPE_CHECKING, NotRequired, TypedDict

from gitevals.run.graderworker import (
    GRADER_TIMEOUT,
    MARSHAL_VERSION,
    MAX_FRAME,
    SPIN,
    decode,
    encode,
    frame,
)
from gitevals.run.graderworker import write_all as _write_all

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

    from gitevals.graderfile import GraderFile
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import ErrorRecord
    from gitevals.run.targets import ProcessRegistry

__all__ = ["GRADER_TIMEOUT", "GraderPool", "GraderReply", "GraderSources", "GraderWorker",
           "NoGrader", "split_name"]

_BOOT = ("import sys; sys.path.pop(0); "
         "from gitevals.run.graderworker import worker_main; worker_main()")


class WorkerGone(Exception):
    """The worker exited or sent a broken frame."""


class NoGrader(Exception):
    """The grader file or function to call is not there (a ``LookupError`` raised while
    importing a grader module is that module's error, not this)."""


class GraderReply(TypedDict):
    """One grader call as the parent records it (``GraderWorker.call``)."""

    name: str
    raw: JSON
    error: ErrorRecord | None
    duration_ms: int
    usage: NotRequired[JSON]


def _err(kind: str, message: str) -> ErrorRecord:
    return {"kind": kind, "message": message}


def _request(req: JSONObject) -> bytes:
    """A call's frame body: the request as a JSON round trip leaves it (what graders
    always received), carried by marshal. Both passes run in C: walking the value in
    Python (``plain``) would cost more than the call of a quick grader."""
    import json
    import marshal

    text = json.dumps(req, ensure_ascii=False).encode()
    return b"M" + marshal.dumps(json.loads(text), MARSHAL_VERSION)


def split_name(name: str) -> tuple[str, str]:
    """``quality.answers`` -> (``quality``, ``answers``): read to the first dot."""
    file, _, fn = name.partition(".")
    return file, fn


class GraderSources:
    """The grader files of one materialized tree, each read and resolved once (by the
    first call that names it) and shared by every worker of a pool: what a worker
    executes is exactly what was resolved, whatever the tree becomes later."""

    def __init__(self, tree_dir: str, root: str) -> None:
        import threading

        self.dir = os.path.join(tree_dir, root, "graders")
        self.rel = f"{root}/graders"
        self._lock = threading.Lock()
        self._files: dict[str, tuple[bytes, GraderFile] | Exception] = {}

    def find(self, file: str, fn: str) -> tuple[bytes, int]:
        """The file's bytes and the line of ``def fn`` in them; :class:`NoGrader` (there
        is no such function to call) or another exception (reading or parsing the file
        failed, reported as the import error it would have been)."""
        from gitevals.graderfile import why_not

        with self._lock:
            read = self._files.get(file)
            if read is None:
                try:
                    read = self._read(file)
                except Exception as exc:  # kept: every call asks the same, and is told so
                    read = exc
                self._files[file] = read
        if isinstance(read, Exception):
            raise read
        source, gf = read
        rel = f"{self.rel}/{file}.py"
        if gf.error is not None:
            raise SyntaxError(f"{gf.error.message} ({rel}, line {gf.error.line})")
        binding = gf.function(fn)
        if binding is None:
            raise NoGrader(f"{rel} has no function {fn!r}: {why_not(gf, fn)}")
        return source, binding.line

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


class GraderWorker:
    """One worker process; ``call`` returns a grader record (without ``index``)."""

    def __init__(self, tree_dir: str, root: str, judge: JSONObject | None,
                 timeout: float = GRADER_TIMEOUT,
                 registry: ProcessRegistry | None = None,
                 on_ready: Callable[[GraderWorker], None] | None = None,
                 sources: GraderSources | None = None) -> None:
        self.tree_dir = tree_dir
        self.on_ready = on_ready  # told when a started process has sent its ready frame
        self._ready = False
        self.judge = judge
        self.sources = sources or GraderSources(tree_dir, root)
        self._sent: set[str] = set()  # files whose bytes this process has been sent
        self.config = encode({"root": root, "judge": judge, "timeout": timeout})
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
            [sys.executable, "-c", _BOOT], cwd=self.tree_dir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        if self.registry is not None:
            self.registry.add(self.proc)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buf = bytearray()
        self._ready = False
        self._sent = set()
        os.set_blocking(self._out, False)
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN)
        _write_all(self._in, frame(self.config))  # a pipe buffer holds it: no wait

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
        file, fn = split_name(name)
        try:
            source, line = self.sources.find(file, fn)
        except NoGrader as exc:
            return None, _err("grader_missing", f"grader {name}: {exc}"), None
        except Exception as exc:  # reading or parsing the grader file failed
            return None, _err("grader_error", f"grader {name}: importing it raised "
                                              f"{type(exc).__name__}: {exc}"), None
        if self.proc is None:
            try:
                self._start()
            except OSError as exc:
                return None, _err("grader_error", f"grader {name}: cannot start the grader "
                                                  f"worker: {exc.strerror or exc}"), None
        req: JSONObject = {"file": file, "fn": fn, "line": line, "case": case, "run": run}
        if file not in self._sent:
            req["source"] = source.decode("latin-1")  # any bytes, back as they were
        body = _request(req)
        limit = self.limit(file, source)
        try:
            _write_all(self._in, frame(body))
            self._sent.add(file)
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

    def limit(self, file: str, source: bytes) -> float:
        """A call's ceiling (``ceiling``): the grader's own limit, plus the judge's budget
        (every attempt and wait, ``judge.budget``) for a grader file (``source``, the bytes
        the worker runs) that asks the judge: a slow judge must end as the
        ``judge_error`` it is, not as this grader's timeout."""
        if file not in self._limits:
            extra = 0.0
            if self.judge is not None:
                from gitevals.run.judge import module_budget

                extra = module_budget(self.judge, source)
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
            if int.from_bytes(self._fill(4, deadline), "big"):
                raise WorkerGone("no ready frame")
            self._ready = True
            if self.on_ready is not None:
                self.on_ready(self)
        size = int.from_bytes(self._fill(4, deadline), "big")
        if size > MAX_FRAME:
            raise WorkerGone(f"answer larger than {MAX_FRAME} bytes")
        try:
            reply = decode(self._fill(size, deadline))  # the worker's own frame
        except ValueError as exc:  # marshal's and JSON's errors (EOFError is not one)
            raise WorkerGone(f"a broken frame: {exc}") from None
        except EOFError:
            raise WorkerGone("a broken frame") from None
        if not isinstance(reply, dict):
            raise WorkerGone("a frame that is not an answer")
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
        self.sources = GraderSources(tree_dir, root)
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
                    worker = GraderWorker(*self.args, on_ready=self._started,
                                          sources=self.sources)
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
