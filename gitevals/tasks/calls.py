"""What a run's trial and a task's controls share: the workspace copied from the task and
the verifier call the task defines (``run.tasks`` and ``tasks.controls`` both use them;
here, so the task package does not import the runner)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.tasks.limits import limited
from gitevals.tasks.sandbox import DEFAULT_TIMEOUT, Call

if TYPE_CHECKING:
    from gitevals.tasks.definition import Task


def copy_within(src: Path, dest: Path, skip: frozenset[str] = frozenset()) -> None:
    """Copy the directory ``src`` to ``dest`` (created) as bytes; a symlink is copied as
    a link only when it resolves inside ``src``, and never followed. Top-level names in
    ``skip`` are left out."""
    dest.mkdir(parents=True, exist_ok=True)
    if not src.is_dir() or src.is_symlink():
        return
    top = os.path.realpath(src)
    for dirpath, dirnames, filenames in os.walk(src):
        here = Path(dirpath)
        rel = here.relative_to(src)
        for name in [*dirnames, *filenames]:
            if rel == Path(".") and name in skip:
                continue
            _copy_entry(here / name, dest / rel / name, top)
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()
                       and not (rel == Path(".") and d in skip)]


def _copy_entry(path: Path, to: Path, top: str) -> None:
    if path.is_symlink():
        real = os.path.realpath(path)
        if os.path.commonpath([top, real]) == top:
            os.symlink(os.readlink(path), to)
    elif path.is_dir():
        to.mkdir(exist_ok=True)
    elif path.is_file():
        shutil.copy2(path, to)


def verifier_call(task: Task, root: str | None = None, cgroup: bool = False) -> Call:
    """The verifier call ``task`` defines, behind its ``cpus`` and ``memory_mb`` limits:
    rlimits, or with ``cgroup`` a cgroup v2 of the call (``gitevals.tasks.cgroup2``);
    ``root``: its image, unpacked (``gitevals.tasks.image``), as the sandbox's system."""
    env, timeout = task.environment, task.verifier.timeout_sec or DEFAULT_TIMEOUT
    if cgroup and (env.cpus is not None or env.memory_mb is not None):
        from gitevals.tasks.cgroup2 import values
        from gitevals.tasks.sandbox import PIDS

        return Call(task.verifier.argv, env.workdir, task.verifier.env, timeout,
                    env.allow_internet, root=root,
                    cgroup=tuple(sorted(values(env.cpus, env.memory_mb, PIDS).items())))
    return Call(limited(task.verifier.argv, env.cpus, env.memory_mb, timeout), env.workdir,
                task.verifier.env, timeout, env.allow_internet, root=root)
