"""Progress on stderr while something takes more than a moment: a rich bar on a terminal,
nothing when stderr is piped (stdout then carries only the result)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: ``update(done, failures)``: how many units are done, and how many of them failed.
Update = Callable[[int, int], None]


@contextmanager
def progress(label: str, total: int, unit: str = "trials") -> Iterator[Update]:
    """A bar ``label ━━━ done/total unit  N failed`` while the block runs."""
    if not sys.stderr.isatty() or total == 0:
        yield lambda done, failures: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                   TextColumn(f"{unit}  {{task.fields[failed]}}"),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total, failed="0 failed")

    def update(done: int, failures: int) -> None:
        bar.update(task, completed=done, failed=f"{failures} failed")

    with bar:
        yield update
