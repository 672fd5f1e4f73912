"""Progress on stderr while something takes more than a moment: a rich bar on a terminal;
when stderr is piped (a CI log), a plain line at most every 10 s. stdout never carries
progress: it holds only the result."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

#: Seconds between plain progress lines on a piped stderr.
INTERVAL = 10.0


class Update(Protocol):
    """``update(done, failures, running, groups_done)``: units done, how many of them
    failed, units in flight now, and groups (cases) wholly done; the last two when known."""

    def __call__(self, done: int, failures: int, running: int | None = None,
                 groups_done: int | None = None) -> None: ...


def interval() -> float:
    """10 s; GITEVALS_PROGRESS_INTERVAL (seconds) overrides it, for tests."""
    try:
        return float(os.environ.get("GITEVALS_PROGRESS_INTERVAL") or INTERVAL)
    except ValueError:
        return INTERVAL


@contextmanager
def progress(label: str, total: int, unit: str = "trials",
             groups: tuple[str, int] | None = None) -> Iterator[Update]:
    """Progress of ``total`` units while the block runs; ``groups`` (a noun and a count,
    e.g. ``("cases", 5)``) adds how many groups of units are wholly done."""
    if total == 0:
        yield lambda done, failures, running=None, groups_done=None: None
    elif not sys.stderr.isatty():
        yield _lines(total, unit, groups, interval())
    else:
        with _bar(label, total, unit) as update:
            yield update


def plain_line(done: int, total: int, unit: str, failures: int, running: int | None,
               groups: tuple[str, int] | None, groups_done: int | None) -> str:
    """``gitevals: 2/5 cases, 40/100 trials done, 3 failed, 16 in flight``."""
    parts = [f"{groups_done}/{groups[1]} {groups[0]}"] if groups and groups_done is not None else []
    parts += [f"{done}/{total} {unit} done", f"{failures} failed"]
    if running is not None:
        parts.append(f"{running} in flight")
    return "gitevals: " + ", ".join(parts)


def _lines(total: int, unit: str, groups: tuple[str, int] | None, every: float) -> Update:
    last = [time.monotonic()]

    def update(done: int, failures: int, running: int | None = None,
               groups_done: int | None = None) -> None:
        now = time.monotonic()
        if now - last[0] < every or done >= total:
            return  # the finished result follows at once; no line for it
        last[0] = now
        print(plain_line(done, total, unit, failures, running, groups, groups_done),
              file=sys.stderr, flush=True)

    return update


@contextmanager
def _bar(label: str, total: int, unit: str) -> Iterator[Update]:
    """A bar ``label ━━━ done/total unit  N failed  M in flight`` while the block runs."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                   TextColumn(f"{unit}  {{task.fields[failed]}}{{task.fields[running]}}"),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total, failed="0 failed", running="")

    def update(done: int, failures: int, running: int | None = None,
               groups_done: int | None = None) -> None:
        flight = f"  {running} in flight" if running is not None else ""
        bar.update(task, completed=done, failed=f"{failures} failed", running=flight)

    with bar:
        yield update
