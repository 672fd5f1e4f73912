"""The grader worker: the process ``grading.GraderWorker`` talks to, in the materialized
commit. It runs the grader modules the parent hands it and calls ``fn(t, case, run)``.

The parent reads each grader file once and resolves it (``gitevals.graderfile``: which
line defines the function, executing nothing); the worker executes exactly those bytes,
never a file it reads itself, and checks at every call that the name still is that def.

A run that grades starts a worker, and a busy run more than one, so this module imports
only what a start needs: ``os``, ``sys``, ``marshal``, ``select``, ``_signal`` and
``time``; nothing that brings ``typing``, ``json``, ``re`` or ``ast`` (a worker started in
~79 ms of CPU with them, ~40 without). The judge's ``t`` loads its machinery at the first
question (``_LazyT``).

Frames are a 4-byte big-endian length and a body: empty (the worker is ready), or a
tag and a payload: ``M`` and ``marshal`` (format 2: no shared references), the parent
being the same interpreter, or ``J`` and UTF-8 JSON, as every frame was before. A call
is the request after a JSON round trip, as marshal (``grading._request``: both passes in
C); an answer is marshal when it is plain JSON (``plain``), which marshal carries exactly
as JSON would, else JSON. A grader therefore sees, and returns, what JSON carries: a
tuple arrives as a list either way.
"""

from __future__ import annotations

import marshal
import os
import select
import sys
import time

# Not ``typing.TYPE_CHECKING``: importing ``typing`` would be a part of every worker's
# start. Type checkers read any constant of this name as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import signal
else:  # the C module that ``signal`` wraps in enums (``enum`` is ~12 ms of a start)
    import _signal as signal

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType, TracebackType
    from typing import TypeGuard

    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.judge import T

#: A grader's own time (its code: running its module and the call, not the time it
#: waits for the judge): past it the grader is stopped and its worker replaced. The whole
#: call's ceiling adds the judge's budget for a module that asks the judge
#: (``grading.GraderWorker.limit``).
GRADER_TIMEOUT = 30.0
MAX_FRAME = 16 * 1024 * 1024
#: Both ends busy-wait this long for the other's next frame before sleeping in poll:
#: a wake-up across CPUs costs tens of microseconds, more than a trivial grader call.
SPIN = 0.0003
#: ``plain`` walks at most this deep and this many values: beyond, a frame is JSON
#: (whose encoder finds cycles and says what is too deep, as it always has).
PLAIN_DEPTH = 100
PLAIN_VALUES = 100_000
MARSHAL_VERSION = 2


def plain(value: object) -> TypeGuard[JSON]:
    """Whether ``value`` is made only of what JSON carries unchanged -- exactly ``dict``
    with ``str`` keys, ``list``, ``str`` (UTF-8 encodable), ``int``, finite ``float``,
    ``bool`` and None -- within ``PLAIN_DEPTH`` and ``PLAIN_VALUES``: then marshal
    carries it exactly as a JSON round trip would."""
    stack: list[tuple[object, int]] = [(value, 0)]
    seen = 0
    while stack:
        v, depth = stack.pop()
        seen += 1
        kind = type(v)
        if isinstance(v, str):
            if kind is not str or not _text(v):
                return False
        elif isinstance(v, dict | list):
            if (kind is not dict and kind is not list) or depth >= PLAIN_DEPTH \
                    or seen + len(v) > PLAIN_VALUES:
                return False
            if isinstance(v, dict):
                for key, item in v.items():
                    if type(key) is not str or not _text(key):
                        return False
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in v)
        elif isinstance(v, float):
            if kind is not float or v - v != 0:  # a subclass, inf or nan
                return False
        elif not (v is None or kind is bool or kind is int):
            return False
    return True


def _text(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON's UTF-8 frame could not carry it
        return False
    return True


def encode(value: object) -> bytes:
    """A frame's body for ``value`` (see the module's docstring)."""
    if plain(value):
        return b"M" + marshal.dumps(value, MARSHAL_VERSION)
    import json

    return b"J" + json.dumps(value, ensure_ascii=False).encode()


def decode(body: bytes) -> JSON:
    """``encode``'s value back (``ValueError`` for a body neither end writes)."""
    tag, payload = body[:1], body[1:]
    if tag == b"M":
        value: JSON = marshal.loads(payload)
        return value
    if tag == b"J":
        import json

        decoded: JSON = json.loads(payload)
        return decoded
    raise ValueError("a frame of neither marshal nor JSON")


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Rebound(Exception):
    """The name a call asks for is no longer the def the parent resolved."""


class OwnTimeUp(BaseException):
    """The grader's own time ran out (a BaseException: ``except Exception`` in a grader
    does not swallow it)."""


class OwnClock:
    """The grader's own time, as a real-time interval timer that stops while the judge
    answers (``paused``): SIGALRM interrupts the grader with ``OwnTimeUp`` when it runs
    out. Code that never returns to the interpreter (a C loop) is the parent's to stop,
    at the call's ceiling."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def _up(self, signum: int, frame: object) -> None:
        raise OwnTimeUp

    def start(self) -> None:
        signal.signal(signal.SIGALRM, self._up)
        signal.setitimer(signal.ITIMER_REAL, self.limit)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def paused(self) -> _Paused:
        """A context in which the clock does not run (the judge answering)."""
        return _Paused()


class _Paused:
    def __enter__(self) -> None:
        self.left, _ = signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.left > 0:  # 0: the clock was not running (nothing to resume)
            signal.setitimer(signal.ITIMER_REAL, self.left)


class _LazyT:
    """The ``t`` a grader receives: ``gitevals.run.judge.T``, made at the first use of
    anything but ``reset`` and ``usage`` when no judge is configured (most graders never
    ask one, and the judge's module would be a part of every worker's start)."""

    def __init__(self, judge: JSONObject | None, clock: OwnClock) -> None:
        self._judge = judge
        self._clock = clock
        self._t: T | None = None
        if judge is not None:
            self._real()

    def _real(self) -> T:
        if self._t is None:
            from gitevals.run.judge import T

            self._t = T(self._judge, self._clock.paused)
        return self._t

    def reset(self) -> None:
        if self._t is not None:
            self._t.reset()

    def usage(self) -> JSONObject | None:
        return self._t.usage() if self._t is not None else None

    def __getattr__(self, name: str) -> object:
        return getattr(self._real(), name)


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

    def frame(self) -> bytes | None:
        """The next frame's body, or None at end of input."""
        head = self.read(4)
        return None if head is None else self.read(int.from_bytes(head, "big"))

    def _chunk(self, want: int) -> bytes:
        spin_until = time.perf_counter() + SPIN
        while True:
            try:
                return os.read(self.fd, max(1 << 16, want))
            except BlockingIOError:
                pass
            if time.perf_counter() >= spin_until:
                select.select([self.fd], [], [])


class Modules:
    """The grader modules this worker has run: each from the bytes the parent sent with
    the first call that named its file (kept, so a module whose run raised runs again
    from the same bytes at its next call, as an import that failed would)."""

    def __init__(self, graders_dir: str, rel: str) -> None:
        self.dir = graders_dir
        self.rel = rel
        self.sources: dict[str, bytes] = {}
        self.modules: dict[str, ModuleType] = {}

    def find(self, file: str, fn: str, line: int) -> Callable[..., object]:
        """The function ``fn`` defined on ``line`` of the file's module (run once), or
        ``Rebound`` saying why it is not that def any more."""
        module = self.modules.get(file)
        if module is None:
            module = self.modules[file] = self._run(file, self.sources[file])
        func: object = getattr(module, fn, None)
        if not callable(func) or not _defined_at(func, module, fn, line):
            raise Rebound(f"{self.rel}/{file}.py has no function {fn!r}: once the "
                              f"module has run it is not the def on line {line} "
                              "(something rebound it)")
        return func

    def _run(self, file: str, source: bytes) -> ModuleType:
        """Execute exactly the bytes the parent resolved (never a .pyc of the tree)."""
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import spec_from_file_location

        path = os.path.join(self.dir, f"{file}.py")
        spec = spec_from_file_location(f"gitevals_graders.{file}", path)
        assert spec is not None
        module = module_from_spec(spec)
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
    judge = sys.modules.get("gitevals.run.judge")
    if judge is None:  # never loaded: nothing raised one of its errors
        return "grader_error"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, judge.JudgeParseError):
            return "judge_unparseable"
        if isinstance(seen, judge.JudgeError):
            return "judge_error"
        seen = seen.__cause__ or seen.__context__
    return "grader_error"


def _err(kind: str, message: str) -> dict[str, object]:
    return {"kind": kind, "message": message}


def answer(modules: Modules, t: _LazyT, req: JSONObject,
           clock: OwnClock) -> dict[str, object]:
    """Call the grader ``req`` names, on its own clock (its module's run included)."""
    name = f"{req['file']}.{req['fn']}"
    try:
        try:
            clock.start()
            return _call(modules, t, req)
        finally:
            clock.stop()
    except OwnTimeUp:
        return {"raw": None, "error": _err("grader_timeout", f"grader {name} ran past "
                                           f"{clock.limit:g} s of its own time (waiting "
                                           "for the judge not counted); its worker was "
                                           "restarted")}


def _call(modules: Modules, t: _LazyT, req: JSONObject) -> dict[str, object]:
    file, fn, line = str(req["file"]), str(req["fn"]), req["line"]
    name = f"{file}.{fn}"
    assert isinstance(line, int)
    try:
        func = modules.find(file, fn, line)
    except Rebound as exc:
        return {"raw": None, "error": _err("grader_missing", f"grader {name}: {exc}")}
    except Exception as exc:  # running the grader file raised
        return _raised(modules, exc, f"grader {name}: importing it raised")
    try:
        raw = func(t, req["case"], req["run"])
    except Exception as exc:
        return _raised(modules, exc, f"grader {name} raised", _exc_kind(exc))
    if plain(raw) or _json_safe(raw):
        return {"raw": raw, "error": None}
    text = repr(raw)[:300]
    return {"raw": text, "error": _err("grader_malformed", f"grader {name} returned "
                                       f"{text}, which is not JSON; return True/False "
                                       'or {"pass": bool, "score": number, "why": str}')}


def _raised(modules: Modules, exc: Exception, what: str,
            kind: str = "grader_error") -> dict[str, object]:
    where = _where(exc, modules.dir, modules.rel)
    return {"raw": None, "error": _err(kind, f"{what} {type(exc).__name__}: {exc}{where}")}


def _json_safe(value: object) -> bool:
    """Whether ``json.dumps`` takes ``value`` (no NaN): what a frame can carry as JSON."""
    import json

    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _private_pipes() -> tuple[int, int]:
    """Keep the protocol fds; point 0 and 1 at /dev/null so prints cannot reach the parent."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- lives as long as the worker
    return proto_in, proto_out


def worker_main() -> None:
    """Serve grader calls until stdin closes (run by ``GraderWorker`` in its own process).
    The first frame is the worker's settings: ``{"root", "judge", "timeout"}``."""
    proto_in, proto_out = _private_pipes()
    inbox = _Inbox(proto_in)
    first = inbox.frame()
    if first is None:
        return
    cfg = decode(first)
    assert isinstance(cfg, dict)
    tree_dir = os.getcwd()
    root = str(cfg["root"])
    modules = Modules(os.path.join(tree_dir, root, "graders"), f"{root}/graders")
    sys.path[:0] = [modules.dir, tree_dir]
    limit = cfg.get("timeout")
    clock = OwnClock(float(limit) if isinstance(limit, int | float) and limit > 0
                     else GRADER_TIMEOUT)
    judge = cfg.get("judge")
    t = _LazyT(judge if isinstance(judge, dict) else None, clock)
    write_all(proto_out, frame(b""))  # ready: an empty frame before the first answer
    while (body := inbox.frame()) is not None:
        req = decode(body)
        assert isinstance(req, dict)
        source = req.pop("source", None)
        if isinstance(source, str):
            modules.sources[str(req["file"])] = source.encode("latin-1")
        t.reset()
        reply = answer(modules, t, req, clock)
        used = t.usage()
        if used is not None:
            reply["usage"] = used
        write_all(proto_out, frame(encode(reply)))
