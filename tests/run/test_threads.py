"""``gitevals.run.threads.Slots``: the threads a run's trials wait in (what the runner
used of ``concurrent.futures``, without its imports)."""

from __future__ import annotations

import threading
import time

from gitevals.run.threads import Slots


def _drain(slots: Slots) -> list[BaseException]:
    failed: list[BaseException] = []
    while slots.pending:
        failed += slots.wait(timeout=5)
    return failed + slots.wait(timeout=0)


def test_at_most_jobs_calls_run_at_once_and_every_call_runs() -> None:
    lock, running, most, seen = threading.Lock(), [0], [0], []

    def call(a: int, b: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            seen.append((a, b, threading.current_thread().name))
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    slots = Slots(2, "gitevals-trial")
    for n in range(6):
        slots.submit(call, n, 10 * n)
    assert _drain(slots) == []
    slots.close()
    assert most[0] == 2
    assert sorted((a, b) for a, b, _ in seen) == [(n, 10 * n) for n in range(6)]
    assert {name for _, _, name in seen} == {"gitevals-trial_0", "gitevals-trial_1"}


def test_a_failing_call_is_kept_for_the_caller_and_its_thread_serves_on() -> None:
    done: list[int] = []

    def call(a: int, b: int) -> None:
        if a == 1:
            raise KeyError("a bug in a trial")
        done.append(a)

    slots = Slots(1, "t")
    for n in range(3):
        slots.submit(call, n, 0)
    failed = _drain(slots)
    slots.close()
    assert [type(e) for e in failed] == [KeyError]
    assert sorted(done) == [0, 2]


def test_cancel_drops_what_has_not_started_and_close_waits_for_the_rest() -> None:
    started, release, ran = threading.Event(), threading.Event(), []

    def call(a: int, b: int) -> None:
        ran.append(a)
        started.set()
        release.wait(5)

    slots = Slots(1, "t")
    for n in range(4):
        slots.submit(call, n, 0)
    assert started.wait(5)
    slots.cancel()
    assert slots.pending == 1  # the one running
    release.set()
    slots.close()
    assert ran == [0] and slots.pending == 0
    assert not any(t.name.startswith("t_") for t in threading.enumerate())

