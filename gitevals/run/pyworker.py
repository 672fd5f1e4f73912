"""The ``python`` target's worker: a standalone script, run by path in the interpreter the
settings name (``[target] interpreter``), which may not have gitevals installed. So it
imports nothing but the standard library, and keeps to syntax Python 3.8 reads.

    INTERPRETER pyworker.py SPEC             serve one conversation on stdin/stdout
    INTERPRETER pyworker.py --zygote SPEC    import once, then fork one child a conversation
    INTERPRETER pyworker.py --check SPEC     import and exit: 0, or one line and 97
    INTERPRETER pyworker.py --boot           start now, then be told where and what to
                                             import, and serve as ``--zygote``

``SPEC`` is ``module:function``; the module is imported from the working directory (the
materialized commit). In ``--zygote`` mode fd 0 is a socket to the run's supervisor
(``gitevals.run.reaper``): after the import it says ``{"ready": true}`` (or
``{"error": line}``), then each ``{"op": "fork", "hold": PROGRAM}`` carrying the
conversation's three pipe ends and the supervisor's lifeline becomes a holder -- a child of
this worker, a subreaper in a session of its own, reaped when the supervisor asks
(``{"op": "reap", "pid"}``, or the ``reap`` list of the next fork) -- whose child, a
fresh copy of this process, serves that one conversation and exits, while the holder
waits as ``PROGRAM`` (``reaper._hold``) until the conversation ends. Every conversation
starts from the state right after the import: nothing one conversation changes (module
globals, caches, open files) can reach another, and the import is paid once.

``--boot`` is the same worker started before the commit is materialized (#27: the start):
the interpreter's own start overlaps gitevals reading the plan, on another core. Its first
request, ``{"op": "load", "cwd": TREE, "spec": SPEC}``, puts it where ``--zygote SPEC``
started in TREE would be (working directory, ``sys.path[0]``, ``sys.argv``); from the
import on the two are the same.

Why a fork and not a thread or a reset: the module's state is whatever its authors made it;
only a copy of the process is sure to start clean, and a fork copies lazily.
"""

from __future__ import annotations

import os
import sys

# Not ``typing.TYPE_CHECKING``: importing ``typing`` is a part of every warm worker's
# start, on the way to a run's first conversation (#27: the start). Type checkers read
# any constant of this name as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import signal
else:  # the C module ``signal`` wraps in enums: ``enum`` would be a part of every start
    import _signal as signal

if TYPE_CHECKING:  # names for annotations only: this file must run on older Pythons
    from _socket import socket
    from collections.abc import Callable
    from typing import IO

    #: The target: ``fn(messages) -> reply``.
    Fn = Callable[..., object]
    Message = dict[str, object]

#: Exit status when the module:function cannot be loaded (gitevals reads it as target_start).
START_FAILED = 97
_MAX_MESSAGE = 1 << 16


# --- JSON without importing json ----------------------------------------------------------
# ``json`` brings ``re`` and ``enum``: ~20 ms of every warm worker's start, most of what it
# imports beside the interpreter. Its C parts (``_json``, in every CPython since 2.7) are
# what ``json`` itself runs: a value they take whole is what ``json`` would give; anything
# else -- whitespace first, an error, an interpreter without them -- goes to ``json``.

_WHITESPACE = " \t\n\r"


class _Decoding:
    """``json.JSONDecoder()``'s settings, as its C scanner reads them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__


def _scanner() -> Callable[[str, int], tuple[object, int]] | None:
    """json's C scanner with ``json.JSONDecoder()``'s settings; None where there is none
    (or it asks for settings of another shape)."""
    try:
        from _json import make_scanner

        return make_scanner(_Decoding)  # type: ignore[arg-type]  # the settings it reads
    except (ImportError, AttributeError, TypeError):
        return None


def _loads(text: str) -> object:
    """``json.loads(text)``."""
    scan = _scanner() if text and text[0] not in _WHITESPACE else None
    if scan is not None:
        try:
            value, end = scan(text, 0)
        except StopIteration:
            pass  # json says why
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json

    return json.loads(text)


def _loads_bytes(data: bytes) -> object:
    """``json.loads(data)``: ASCII that json would not take for UTF-16 or -32 is text."""
    if data.isascii() and b"\0" not in data[:2]:
        return _loads(data.decode("ascii"))
    import json

    return json.loads(data)


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _dumps(value: object, ensure_ascii: bool, allow_nan: bool) -> str:
    """``json.dumps(value, ensure_ascii=..., allow_nan=...)`` of a dict."""
    try:
        from _json import encode_basestring, encode_basestring_ascii, make_encoder

        encode = make_encoder(
            {}, _not_json, encode_basestring_ascii if ensure_ascii else encode_basestring,
            None, ": ", ", ", False, False, allow_nan)
    except (ImportError, TypeError):  # no C encoder, or one json calls otherwise
        encode = None
    if encode is None or not isinstance(value, dict):
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, allow_nan=allow_nan)
    return "".join(encode(value, 0))


def _load(spec: str) -> Fn:
    import importlib

    module_name, _, func = spec.partition(":")
    module = importlib.import_module(module_name)
    fn: object = getattr(module, func, None)
    if fn is None:
        raise AttributeError(f"{module_name} has no function {func!r}")
    if not callable(fn):
        raise TypeError(f"{module_name}.{func} is a {type(fn).__name__}, not a function")
    return fn


def _failure(spec: str, exc: BaseException) -> str:
    """One line: what could not be imported, by which interpreter, and what to do."""
    what = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    hint = ""
    if isinstance(exc, ImportError):
        hint = ("; install what it needs into that interpreter, or name another with "
                "[target] interpreter")
    return f"{spec} does not load in the commit: {what} (in {sys.executable}){hint}"


def _load_or_exit(spec: str) -> Fn:
    try:
        return _load(spec)
    except BaseException as exc:  # the target's import may raise anything, SystemExit too
        print(_failure(spec, exc), file=sys.stderr)
        sys.stderr.flush()
        os._exit(START_FAILED)


def _protocol_streams() -> tuple[IO[str], IO[str]]:
    """Keep the real stdin/stdout for the protocol; anything the target prints goes to
    stderr, and it reads an empty stdin."""
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return proto_in, proto_out


def _call(fn: Fn, messages: list[Message]) -> object:
    try:
        return fn(messages)
    except Exception as exc:  # the harness failing is its error, reported in the reply
        return {"final_answer": None, "tool_calls": [], "hooks": [],
                "error": f"{type(exc).__name__}: {exc}"}


def serve(spec: str, fn: Fn) -> None:
    """One conversation: ``fn(messages) -> reply dict`` per turn.

    ``messages`` is the conversation so far, OpenAI style: ``{"role": "user", "content":
    text, "turn", "case", "scenario", "trial"}`` then ``{"role": "assistant", "content":
    final_answer, "reply": <previous reply>}``, ending with the new user turn. It is one
    list, grown by a message on each side of every call and never copied: a long
    conversation costs linear time, and what ``fn`` changes in it, later turns see.
    """
    proto_in, proto_out = _protocol_streams()
    messages: list[Message] = []
    for line in proto_in:
        turn = _loads(line)
        if not isinstance(turn, dict):
            raise TypeError("a turn that is not an object")
        messages.append({"role": "user", "content": turn.get("text"), **turn})
        reply = _call(fn, messages)
        try:
            if not isinstance(reply, dict):
                raise TypeError(f"{type(reply).__name__} {reply!r:.100}, not a dict")
            out = _dumps(reply, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            # Not JSON on purpose: gitevals reports it as target_protocol.
            out = f"gitevals: {spec} returned a reply that is not a JSON object: {exc}"
            reply = {}
        messages.append({"role": "assistant", "content": reply.get("final_answer"),
                         "reply": reply})
        proto_out.write(out + "\n")
        proto_out.flush()


def _exit(code: int) -> None:
    """Leave as an interpreter would (atexit handlers, flushed streams), never returning
    into the zygote's loop."""
    try:
        import atexit

        atexit._run_exitfuncs()
        sys.stderr.flush()
    finally:
        os._exit(code)


# --- the zygote --------------------------------------------------------------------------


def _send(sock: socket, obj: Message) -> None:
    sock.send(_dumps(obj, ensure_ascii=True, allow_nan=True).encode())


def _receive(sock: socket) -> tuple[Message | None, list[int]]:
    """One request and the fds it carries; None when the supervisor is gone."""
    import _socket  # ``socket`` wraps it in enums: ``enum`` is a part of the start

    fds: list[int] = []
    try:
        data, anc, _, _ = sock.recvmsg(
            _MAX_MESSAGE, _socket.CMSG_LEN(4 * 4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None, []
    for level, kind, payload in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - len(payload) % 4, 4)]
    if not data:
        return None, fds
    request = _loads_bytes(data)
    if not isinstance(request, dict):
        raise TypeError("a request that is not an object")
    return request, fds


def _conversation(spec: str, fn: Fn, sock: socket, fds: list[int]) -> None:
    """In the holder's child: a session of its own, the conversation's pipes as 0/1/2."""
    try:
        sock.close()  # the supervisor's channel is not the target's
        os.close(fds[3])  # nor its lifeline
        os.setsid()
        for i, fd in enumerate(fds[:3]):
            os.dup2(fd, i)
        for fd in fds[:3]:
            if fd > 2:
                os.close(fd)
        serve(spec, fn)
    except BaseException:  # a broken pipe or a bug: the conversation ends
        _exit(1)
    _exit(0)


def _prctl() -> Callable[..., int]:
    """libc's ``prctl``, loaded by the worker once (a holder calls it: importing ctypes in
    every holder would cost each conversation milliseconds)."""
    import ctypes

    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def _hold(lifeline: int, program: object, said: int) -> None:
    """Wait as ``program`` (a small one: ``cat``) reading the supervisor's lifeline, until
    killed or the supervisor is gone (as ``reaper._hold``). Never returns. ``said`` (the
    pipe the pids were written to, close-on-exec) closes as the program starts: whoever
    reads it to its end knows the holder is that program by then."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(lifeline, 0)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for fd in [int(n) for n in os.listdir("/proc/self/fd")]:  # nothing else: a pipe
            if fd > 2 and fd != said:  # this process kept open would never end
                try:
                    os.close(fd)
                except OSError:
                    continue  # the listing's own descriptor, closed already
        if isinstance(program, str) and program:
            try:
                os.execve(program, [program], {})
            except OSError:
                program = None  # (imports nothing here: a holder pays for no import)
        os.close(said)
        while os.read(0, 4096):  # no such program: wait as Python
            pass
    finally:
        os._exit(0)


def _holder(spec: str, fn: Fn, sock: socket, fds: list[int], w: int,
            program: object, prctl: Callable[..., int]) -> None:
    """In the holder: fork the conversation's process beneath us, say both pids, hold."""

    try:
        os.setsid()  # out of this worker's group: stopping the worker must not kill us
        prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as reaper.set_subreaper
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # never reap the target: its pid is kept
        pid = os.fork()
        if pid == 0:
            os.close(w)
            _conversation(spec, fn, sock, fds)
        os.write(w, str(pid).encode())
        sock.close()
        for fd in fds[:3]:
            os.close(fd)
        _hold(fds[3], program, w)
    finally:
        os._exit(1)


def _fork(spec: str, fn: Fn, sock: socket, fds: list[int], program: object,
          prctl: Callable[..., int]) -> Message:
    """Start one conversation: its pid and its holder's.

    The holder stays this worker's child, unreaped until the supervisor, having killed it,
    asks (``{"op": "reap"}``): its pid stays its own until then. A subreaper itself, it
    keeps everything the conversation starts beneath it; what it leaves when it dies goes
    to the nearest subreaper above, the supervisor."""
    r, w = os.pipe()
    holder = os.fork()
    if holder == 0:
        os.close(r)
        _holder(spec, fn, sock, fds, w, program, prctl)
    os.close(w)
    for fd in fds:
        os.close(fd)
    with os.fdopen(r, "rb") as reader:
        said = reader.read()  # until the holder and its child closed the pipe
    if said.isdigit():
        return {"pid": int(said), "holder": holder}
    return {"error": "fork failed", "errno": 0}


def _reap(pid: object) -> Message:
    """Reap holder ``pid``, which the supervisor killed."""
    try:
        if isinstance(pid, int):
            os.waitpid(pid, 0)
            return {"reaped": True}
    except ChildProcessError:
        pass
    return {"error": f"no holder {pid!r} here", "errno": 0}


def _channel() -> socket:
    """The supervisor's socket, on fd 0 (which becomes ``/dev/null``)."""
    import _socket

    sock = _socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    return sock


def boot() -> None:
    """Start before the commit is materialized; import what the supervisor's first request
    names, where it says, then serve as ``zygote``. No request (the supervisor is done, or
    gone): exit without importing anything of the tree."""
    sock = _channel()
    prctl = _prctl()  # what the import may not change, paid before it is asked for
    request, fds = _receive(sock)
    for fd in fds:
        os.close(fd)
    if request is None or request.get("op") != "load":
        os._exit(0)
    cwd, spec = request.get("cwd"), request.get("spec")
    if not isinstance(cwd, str) or not isinstance(spec, str):
        os._exit(0)
    os.chdir(cwd)  # where ``--zygote SPEC`` started in the tree would be
    sys.path.insert(0, os.getcwd())
    sys.argv[1:] = ["--zygote", spec]
    zygote(spec, sock, prctl)


def zygote(spec: str, sock: socket | None = None,
           prctl: Callable[..., int] | None = None) -> None:
    """Import ``spec`` once, then serve fork requests from the supervisor on fd 0 (or on
    ``sock``, the socket ``boot`` read its first request from)."""
    sock = _channel() if sock is None else sock
    try:
        fn = _load(spec)
    except BaseException as exc:  # the target's import may raise anything
        _send(sock, {"error": _failure(spec, exc)})
        os._exit(START_FAILED)
    import gc

    # The holders are our children until the supervisor has us reap them: none may be
    # reaped behind its back (an import may have set SIGCHLD to be ignored).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    prctl = _prctl() if prctl is None else prctl
    gc.collect()
    gc.freeze()  # what the import made stays out of the children's collections: fewer copies
    _send(sock, {"ready": True})
    while True:
        request, fds = _receive(sock)
        if request is None:
            os._exit(0)  # the supervisor is done (or gone)
        if request.get("op") == "fork" and len(fds) == 4:
            dead = request.get("reap")
            for pid in dead if isinstance(dead, list) else ():  # holders killed since
                _reap(pid)
            try:
                answer = _fork(spec, fn, sock, fds, request.get("hold"), prctl)
            except OSError as exc:
                answer = {"error": exc.strerror or str(exc), "errno": exc.errno or 0}
        elif request.get("op") == "reap" and not fds:
            answer = _reap(request.get("pid"))
        else:
            for fd in fds:
                os.close(fd)
            answer = {"error": f"unexpected request {request.get('op')!r}", "errno": 0}
        _send(sock, answer)


def main(argv: list[str]) -> None:
    # Run by path, Python put this file's directory first on sys.path: the tree's modules
    # must not be shadowed by gitevals' own (``runner``, ``targets``...).
    if sys.path and os.path.dirname(os.path.abspath(__file__)) == os.path.abspath(
            sys.path[0] or "."):
        sys.path.pop(0)
    if argv[1:] == ["--boot"]:
        boot()  # the tree's directory goes first on sys.path once it is named
        return
    sys.path.insert(0, os.getcwd())
    mode, spec = (argv[1], argv[2]) if len(argv) > 2 else ("", argv[1])
    if mode == "--zygote":
        zygote(spec)
    elif mode == "--check":
        _load_or_exit(spec)
    else:
        fn = _load_or_exit(spec)
        serve(spec, fn)


if __name__ == "__main__":
    main(sys.argv)
