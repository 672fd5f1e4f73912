"""The job slots of a run (``runner._Slots``): each slot thread draws its next trial itself,
so the main thread hands nothing over per conversation; what a pool did still holds."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gitevals.run.runner import Tally, _Slots


class _Registry:
    def __init__(self) -> None:
        self.killed = 0

    def kill_all(self) -> None:
        self.killed += 1


class _Execution:
    """What the slots use of an ``Execution``: its jobs, stop flag, registry and tally."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.stop = threading.Event()
        self.registry = _Registry()

    def tally(self) -> Tally:
        return Tally(0, 0, 0, 0, 0)


def _items(ran: list[tuple[int, str]], n: int, pause: float = 0.0,
           bug_at: int | None = None) -> Iterator[tuple[object, int, int]]:
    def trial(index: int, trial: int) -> None:
        time.sleep(pause)
        ran.append((index, threading.current_thread().name))
        if index == bug_at:
            raise RuntimeError(f"bug in {index}")

    return ((trial, i, 0) for i in range(n))


def test_every_item_runs_once_on_at_most_jobs_threads() -> None:
    ran: list[tuple[int, str]] = []
    _Slots(_Execution(3), _items(ran, 40, pause=0.001)).run(None)
    assert sorted(i for i, _ in ran) == list(range(40))
    # at most three slots; under load the first slots may drain the work before the
    # third is started, so fewer is allowed (the next test pins the count when it is sure)
    assert {name for _, name in ran} <= {"gitevals-trial_0", "gitevals-trial_1",
                                         "gitevals-trial_2"}


def test_fewer_items_than_jobs_start_only_as_many_threads() -> None:
    ran: list[tuple[int, str]] = []
    before = threading.active_count()
    started: list[int] = []

    def trial(index: int, trial: int) -> None:
        started.append(threading.active_count() - before)
        time.sleep(0.05)
        ran.append((index, threading.current_thread().name))

    _Slots(_Execution(64), iter([(trial, 0, 0), (trial, 1, 0)])).run(None)
    assert sorted(i for i, _ in ran) == [0, 1]
    assert max(started) <= 2


def test_a_bug_in_one_trial_surfaces_once_the_others_ran() -> None:
    ran: list[tuple[int, str]] = []
    with pytest.raises(RuntimeError, match="bug in 3"):
        _Slots(_Execution(2), _items(ran, 10, bug_at=3)).run(None)
    assert sorted(i for i, _ in ran) == list(range(10))  # the bug stopped no other trial


def test_a_bug_drawing_the_work_surfaces_and_stops_the_drawing() -> None:
    ran: list[tuple[int, str]] = []

    def work() -> Iterator[tuple[object, int, int]]:
        yield from _items(ran, 3)
        raise ValueError("the plan is broken")

    with pytest.raises(ValueError, match="the plan is broken"):
        _Slots(_Execution(2), work()).run(None)
    assert sorted(i for i, _ in ran) == [0, 1, 2]


def test_an_interrupt_stops_the_drawing_and_kills_what_runs() -> None:
    execution = _Execution(2)
    ran: list[int] = []

    def trial(index: int, trial: int) -> None:
        ran.append(index)
        if index == 4:
            execution.stop.set()  # as Execution.interrupt does, from a signal handler
        time.sleep(0.01)

    _Slots(execution, ((trial, i, 0) for i in range(1000))).run(None)
    assert 4 in ran and len(ran) < 10  # at most what was in flight, nothing drawn after
    assert execution.registry.killed == 1


def test_progress_is_shown_while_the_slots_run() -> None:
    shown: list[Tally] = []
    ran: list[tuple[int, str]] = []
    _Slots(_Execution(1), _items(ran, 5, pause=0.06)).run(shown.append)
    assert len(ran) == 5 and shown  # told at least once while the 0.3 s ran
