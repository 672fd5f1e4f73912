"""What a run takes of a tree's cases and tasks (``gitevals.run.tasks.select`` makes it).

Its own module, light: a run of a tree without tasks makes one without loading the task
machinery, and the commit hook, which imports the package for ``tasks_dir``, does not
pay for the dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.findings import Finding
    from gitevals.tasks.definition import Task


@dataclass(frozen=True)
class Selected:
    """What a run takes: case names (None: all), the tasks that loaded, the selected
    tasks that did not, the loader's findings and notes, and the tasks' files."""

    cases: list[str] | None = None
    tasks: tuple[Task, ...] = ()
    blocked: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
