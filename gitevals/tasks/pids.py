"""A pids cgroup for one process tree, where this process may make one.

The kernel's process limit (``RLIMIT_NPROC``) is not enforced for uid 0, so as root a
fork bomb is stopped by a cgroup's ``pids.max`` instead: a fresh cgroup per tree (a
task trial's target), under this process's own cgroup of the ``pids`` controller --
cgroup v1's ``pids`` hierarchy, or cgroup v2 where ``pids`` is enabled for this
process's cgroup's children (``cgroup.subtree_control``). Where neither is writable
(an unprivileged user, a container without a delegated cgroup) ``make`` gives None and
the caller relies on what else bounds the tree.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

_COUNTER = itertools.count()


@dataclass(frozen=True)
class Group:
    """A pids cgroup made for one tree: write a pid into ``procs`` to put it in."""

    path: str

    @property
    def procs(self) -> str:
        return os.path.join(self.path, "cgroup.procs")

    def remove(self, wait: float = 2.0) -> bool:
        """Remove the cgroup once its processes are gone (waiting at most ``wait`` s for
        the kernel to let go of them); whether it is gone."""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return False
            time.sleep(0.01)


def make(limit: int) -> Group | None:
    """A fresh pids cgroup allowing ``limit`` processes, or None where none can be made."""
    parent = _parent()
    if parent is None:
        return None
    return make_group(os.path.join(parent, f"gitevals-{os.getpid()}-{next(_COUNTER)}"),
                      {"pids.max": str(limit)})


def make_group(path: str, settings: Mapping[str, str]) -> Group | None:
    """The cgroup ``path``, made with ``settings`` (file -> value) written; None when it
    cannot be made or set (then nothing is left behind). ``gitevals.tasks.cgroup2`` makes
    its groups with it too."""
    try:
        os.mkdir(path, 0o755)
    except OSError:
        return None
    try:
        for name, value in settings.items():
            with open(os.path.join(path, name), "w", encoding="ascii") as f:
                f.write(value)
    except OSError:
        Group(path).remove(0)
        return None
    return Group(path)


@functools.cache
def _parent() -> str | None:
    """The directory of this process's own ``pids`` cgroup, when it may make children
    there; None otherwise. Read once a process."""
    seen = mounts_and_cgroups()
    if seen is None:
        return None
    mounts, own = seen
    for line in mounts:
        found = parent_of(line, own)
        if found is not None and os.access(found, os.W_OK):
            return found
    return None


def mounts_and_cgroups() -> tuple[list[str], list[str]] | None:
    """The lines of ``/proc/self/mountinfo`` and ``/proc/self/cgroup``; None when either
    cannot be read. ``gitevals.tasks.cgroup2`` finds its parent from them too."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            mounts = f.read().splitlines()
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            return mounts, f.read().splitlines()
    except OSError:
        return None


def parent_of(mountinfo_line: str, own_cgroups: list[str]) -> str | None:
    """For one line of ``/proc/self/mountinfo``: the directory of this process's pids
    cgroup under that mount when it is a pids hierarchy (v1) or a cgroup v2 mount whose
    ``cgroup.subtree_control`` of this process's cgroup enables ``pids``; else None."""
    fields = mountinfo_line.split()
    if " - " not in mountinfo_line or len(fields) < 5:
        return None
    root, point = fields[3], fields[4]
    after = mountinfo_line.split(" - ", 1)[1].split()
    if len(after) < 3:
        return None
    kind, options = after[0], after[2].split(",")
    if kind == "cgroup" and "pids" in options:
        rel = next((c.split(":", 2)[2] for c in own_cgroups
                    if "pids" in c.split(":", 2)[1].split(",")), None)
    elif kind == "cgroup2":
        rel = next((c.split(":", 2)[2] for c in own_cgroups if c.startswith("0::")), None)
    else:
        return None
    if rel is None or not (rel == root or rel.startswith(root.rstrip("/") + "/")):
        return None
    path = os.path.normpath(point + "/" + rel[len(root.rstrip("/")):])
    if kind == "cgroup2":
        try:
            with open(os.path.join(path, "cgroup.subtree_control"), encoding="ascii") as f:
                if "pids" not in f.read().split():
                    return None
        except OSError:
            return None
    return path
