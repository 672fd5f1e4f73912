"""A task's ``cpus`` and ``memory_mb`` as a cgroup v2 of each verifier call, where this
process has a delegated cgroup v2 subtree (``gitevals.tasks.limits`` says which
mechanism applies; elsewhere, per-process rlimits).

Delegated means: this process's own cgroup (``0::/path`` in ``/proc/self/cgroup``) is
on a ``cgroup2`` mount, writable, and its ``cgroup.subtree_control`` enables the
``cpu``, ``memory`` and ``pids`` controllers for its children. Then each verifier call
gets a fresh child cgroup with

- ``cpu.max`` = ``cpus`` x 100,000 µs of CPU time per 100,000 µs period: the verifier's
  processes together are throttled to ``cpus`` cores (not killed);
- ``memory.max`` = ``memory_mb`` MiB of memory for all of them together (past it the
  kernel reclaims, then kills one: the OOM killer);
- ``pids.max`` = ``sandbox.PIDS`` processes.

The call's processes (bubblewrap, the sandbox's first process and its waiting shell)
are moved into it before the verifier is let go, so all the verifier starts is in it;
the cgroup is removed once the sandbox is gone.

``values``, ``controllers_ok`` and ``own_path`` are pure; ``parent``, ``make`` and
``move_tree`` the IO.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Mapping

from gitevals.tasks.pids import Group, make_group, mounts_and_cgroups

MECHANISM = "cgroup2"
#: The controllers a delegated subtree must enable for its children.
NEEDED = ("cpu", "memory", "pids")
#: ``cpu.max``'s period in microseconds (the kernel's default).
PERIOD_US = 100_000
_COUNTER = itertools.count()


def values(cpus: float | None, memory_mb: int | None, pids: int) -> dict[str, str]:
    """What to write into a verifier call's cgroup: file name -> content."""
    out = {"pids.max": str(pids)}
    if cpus is not None:
        out["cpu.max"] = f"{max(1000, round(cpus * PERIOD_US))} {PERIOD_US}"
    if memory_mb is not None:
        out["memory.max"] = str(memory_mb << 20)
    return out


def controllers_ok(subtree_control: str) -> bool:
    """Whether a ``cgroup.subtree_control`` enables every controller of ``NEEDED``."""
    return set(NEEDED) <= set(subtree_control.split())


def own_path(mountinfo: list[str], own: list[str]) -> str | None:
    """This process's cgroup v2 directory: its ``0::`` line under a ``cgroup2`` mount
    (``/proc/self/mountinfo``, ``/proc/self/cgroup`` as lines), or None."""
    rel = next((c[3:] for c in own if c.startswith("0::")), None)
    if rel is None:
        return None
    for line in mountinfo:
        if " - " not in line:
            continue
        fields, after = line.split(" - ", 1)[0].split(), line.split(" - ", 1)[1].split()
        if len(fields) < 5 or not after or after[0] != "cgroup2":
            continue
        root, point = fields[3], fields[4]
        if rel == root or rel.startswith(root.rstrip("/") + "/"):
            return os.path.normpath(point + "/" + rel[len(root.rstrip("/")):])
    return None


@functools.cache
def parent() -> str | None:
    """The delegated cgroup v2 directory verifier calls' cgroups are made under, or None
    (cgroup v1, no delegation, not writable). Read once a process."""
    seen = mounts_and_cgroups()
    path = None if seen is None else own_path(*seen)
    if path is None or not os.access(path, os.W_OK):
        return None
    try:
        with open(os.path.join(path, "cgroup.subtree_control"), encoding="ascii") as f:
            return path if controllers_ok(f.read()) else None
    except OSError:
        return None


def make(settings: Mapping[str, str], under: str | None = None) -> Group | None:
    """A fresh cgroup with ``settings`` written, under ``under`` (default ``parent()``);
    None when it cannot be made or set (then nothing is left behind)."""
    base = under if under is not None else parent()
    if base is None:
        return None
    return make_group(os.path.join(base, f"gitevals-verifier-{os.getpid()}-{next(_COUNTER)}"),
                      settings)


def move_tree(pid: int, procs: str) -> None:
    """Move ``pid`` and every process beneath it into the cgroup of ``procs`` (its
    ``cgroup.procs``); one that ended meanwhile is skipped."""
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(procs, "w", encoding="ascii") as f:
                f.write(str(p))
        except OSError:
            continue
        todo += children(p)


def children(pid: int) -> list[int]:
    """The children of ``pid`` (each of its threads'), from ``/proc``."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out
