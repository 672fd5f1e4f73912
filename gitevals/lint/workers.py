"""Forked lint workers that share no lock with the program (a pool of them, by hand).

``multiprocessing.Pool`` hands tasks out through one queue behind one lock, which an
idle worker holds while it waits. A worker killed while it held it (a SIGTERM to the
process group, as a CI job is cancelled; the OOM killer) left the pool's end waiting on
that lock forever, and a task a dead worker had taken was never answered. Here each
forked child has a pipe of its own each way: the parent writes it the number of its
next chunk, it writes back the answer. A child that dies is a pipe that ends early, and
every way out of ``forked`` kills and reaps the children still running.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, NoReturn, TypeVar

from gitevals.errors import GitevalsError

C = TypeVar("C")
A = TypeVar("A")
_LENGTH = struct.Struct("<Q")
_INDEX = struct.Struct("<I")
_STOPS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class _Child:
    """A worker, seen from the parent: its pid and the write end of its work pipe
    (-1 once closed: no more work)."""

    pid: int
    work: int


def forked(chunks: Sequence[C], workers: int, work: Callable[[C], A],
           answered: Callable[[A], None]) -> list[A]:
    """``work`` of each chunk, in order, computed in ``workers`` forked children;
    ``answered`` is called in this process with each answer as it arrives. A child's
    exception is raised here; a child that dies without answering is a ``GitevalsError``
    saying to run again (or ``--jobs 1``)."""
    children: dict[int, _Child] = {}  # by the read end of its answers' pipe
    todo = iter(range(len(chunks)))
    try:
        for _ in range(workers):
            # a signal waits until the child is known, so that it is ended with the rest
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                up, child = _fork(chunks, work, children)
                children[up] = child
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            _give(child, todo)
        answers = _collect(children, todo, answered)
    finally:
        died = _end(children)
    if len(answers) != len(chunks):
        raise GitevalsError(f"a lint worker ended before its work was done ({died}); run "
                            "`gitevals lint` again, or with --jobs 1")
    return [answers[k] for k in range(len(chunks))]


def _fork(chunks: Sequence[C], work: Callable[[C], A], others: dict[int, _Child]
          ) -> tuple[int, _Child]:
    """A new child with a pipe each way; it closes the others' ends it inherited (a
    work pipe some other child holds open never ends)."""
    down_read, down_write = os.pipe()
    up_read, up_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in [down_write, up_read, *others,
                   *(c.work for c in others.values() if c.work >= 0)]:
            os.close(fd)
        _child(chunks, work, down_read, up_write)
    os.close(down_read)
    os.close(up_write)
    return up_read, _Child(pid, down_write)


def _give(child: _Child, todo: Iterator[int]) -> None:
    """The child's next chunk, or the end of its work pipe when none is left."""
    k = next(todo, None)
    try:
        if k is None:
            os.close(child.work)
            child.work = -1
        else:
            os.write(child.work, _INDEX.pack(k))
    except BrokenPipeError:  # it died: its answers' pipe says so
        pass


def _child(chunks: Sequence[C], work: Callable[[C], A], down: int, up: int) -> NoReturn:
    """A worker: ^C is left to the parent, SIGTERM kills it; each answer (or the first
    exception) written as a length-prefixed pickle; ``os._exit``, so nothing of the
    parent's (its buffered output, its atexit handlers) runs twice."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        with os.fdopen(down, "rb") as given, os.fdopen(up, "wb") as out:
            try:
                while len(raw := given.read(_INDEX.size)) == _INDEX.size:
                    (k,) = _INDEX.unpack(raw)
                    _send(out, (k, work(chunks[k])))
            except Exception as exc:  # a bug in a rule: the parent raises it
                code = 1
                _send(out, (-1, exc))
    except BaseException:
        code = 1
    os._exit(code)


def _send(out: BinaryIO, item: tuple[int, object]) -> None:
    blob = pickle.dumps(item)
    out.write(_LENGTH.pack(len(blob)) + blob)
    out.flush()


def _collect(children: dict[int, _Child], todo: Iterator[int],
             answered: Callable[[A], None]) -> dict[int, A]:
    """Every answer the children write, by chunk number, until every pipe ends; each
    child that answers is given the next chunk."""
    answers: dict[int, A] = {}
    buffers = {fd: bytearray() for fd in children}
    with selectors.DefaultSelector() as selector:
        for fd in children:
            selector.register(fd, selectors.EVENT_READ)
        while buffers:
            for key, _ in selector.select():
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                    del buffers[key.fd]
                    continue
                buffers[key.fd] += data
                frames: list[tuple[int, A]] = _frames(buffers[key.fd])
                for k, answer in frames:
                    if k < 0:  # the child's exception
                        raise _raised(answer)
                    answers[k] = answer
                    answered(answer)
                    _give(children[key.fd], todo)
    return answers


def _frames(buffer: bytearray) -> list[tuple[int, A]]:
    """The whole frames at the head of ``buffer``, taken out of it (a child's own
    pickles: the children are forks of this process, not the tree's code)."""
    out: list[tuple[int, A]] = []
    while len(buffer) >= _LENGTH.size:
        (size,) = _LENGTH.unpack_from(buffer)
        if len(buffer) < _LENGTH.size + size:
            break
        frame: tuple[int, A] = pickle.loads(bytes(buffer[_LENGTH.size:_LENGTH.size + size]))
        out.append(frame)
        del buffer[:_LENGTH.size + size]
    return out


def _raised(error: object) -> BaseException:
    return error if isinstance(error, BaseException) else RuntimeError(repr(error))


def _end(children: dict[int, _Child]) -> str:
    """Kill (when still running) and reap every child, close the pipes; how the ones
    that ended on their own badly ended, for a message."""
    died = []
    for up, child in children.items():
        for fd in (up, child.work):
            if fd >= 0:
                os.close(fd)
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        killed = pid == 0
        if killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
            _, status = os.waitpid(child.pid, 0)
        if os.WIFSIGNALED(status) and not (killed and os.WTERMSIG(status) == signal.SIGKILL):
            died.append(f"killed by {signal.Signals(os.WTERMSIG(status)).name}")
        elif os.WIFEXITED(status) and os.WEXITSTATUS(status):
            died.append(f"exit {os.WEXITSTATUS(status)}")
    return ", ".join(died) or "killed"
