"""Task directories (Harbor / Terminal-Bench): ``<root>/tasks/<name>/``, whose own verifier
decides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.findings import Finding
    from gitevals.tasks.definition import Task


def tasks_dir(root: str) -> str:
    """The tree path of the directory that holds task directories (here, not in ``load``:
    the commit hook asks it without loading the task model)."""
    return f"{root}/tasks" if root else "tasks"


@dataclass(frozen=True)
class Selected:
    """What a run takes: case names (None: all), the tasks that loaded, the selected
    tasks that did not, the loader's findings and notes, and the tasks' files. (Here, not
    in ``gitevals.run.tasks``: a run of a tree without tasks makes one without loading the
    task machinery.)"""

    cases: list[str] | None = None
    tasks: tuple[Task, ...] = ()
    blocked: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
