"""The threads a run's trials wait in: at most ``jobs`` at once, each call's failure kept.

This is what the runner used of ``concurrent.futures.ThreadPoolExecutor``, and no more:
that module imports ``logging`` (with ``traceback``, ``string`` and ``weakref``), which
was a tenth of the imports of a one-case run (#27, the start). The behaviour is the
same: a thread is started for a call only when no idle thread is left for it and
fewer than ``jobs`` run, threads are reused until ``close``, a call's exception (any
``BaseException``) is kept for the caller instead of killing its thread, and ``cancel``
drops the calls not yet started.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

#: One call: ``fn(a, b)`` (the runner's ``(case or task index, trial)``).
Call = tuple[Callable[[int, int], None], int, int]


class Slots:
    """Calls run on at most ``jobs`` threads named ``<name>_<n>``, in submission order."""

    def __init__(self, jobs: int, name: str) -> None:
        self.jobs = max(1, jobs)
        self.name = name
        lock = threading.Lock()
        self._ready = threading.Condition(lock)  # a call is queued, or the slots close
        self._done = threading.Condition(lock)  # a call finished
        self._queued: deque[Call] = deque()
        self._threads: list[threading.Thread] = []
        self._waiting = 0  # threads waiting for a call
        self._closed = False
        self.pending = 0  # submitted, not finished (nor cancelled)
        self._finished = 0  # finished since the last ``wait``
        self._failed: list[BaseException] = []

    def submit(self, fn: Callable[[int, int], None], a: int, b: int) -> None:
        with self._ready:
            if self._closed:
                raise RuntimeError("submit after close")
            self._queued.append((fn, a, b))
            self.pending += 1
            if len(self._queued) > self._waiting and len(self._threads) < self.jobs:
                thread = threading.Thread(target=self._serve,
                                          name=f"{self.name}_{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
            self._ready.notify()

    def _serve(self) -> None:
        while True:
            with self._ready:
                self._waiting += 1
                while not self._queued and not self._closed:
                    self._ready.wait()
                self._waiting -= 1
                if not self._queued:
                    return  # closed, nothing left
                fn, a, b = self._queued.popleft()
            error: BaseException | None = None
            try:
                fn(a, b)
            except BaseException as exc:  # kept for the caller, as a Future keeps it
                error = exc
            with self._ready:
                self.pending -= 1
                self._finished += 1
                if error is not None:
                    self._failed.append(error)
                self._done.notify_all()

    def wait(self, timeout: float) -> list[BaseException]:
        """Wait until a call finishes (at most ``timeout`` s; at once when one finished
        since the last wait, or nothing is pending); the failures of the calls that
        finished since."""
        with self._ready:
            if not self._finished and self.pending:
                self._done.wait(timeout)
            failed, self._failed, self._finished = self._failed, [], 0
            return failed

    def cancel(self) -> None:
        """Drop the calls not started yet (those running go on)."""
        with self._ready:
            self.pending -= len(self._queued)
            self._queued.clear()

    def close(self) -> None:
        """Run what is queued, then stop every thread and wait for them."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()
