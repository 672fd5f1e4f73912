"""A task's ``cpus`` and ``memory_mb`` applied to what runs in its sandbox (pure).

Process resource limits (``setrlimit``, as ``prlimit`` sets them), set by a shell in
front of the verifier (and the oracle's ``solve.sh``), so that the verifier and every
process it starts inherit them:

- ``memory_mb`` -> ``RLIMIT_AS``: each process may map at most ``memory_mb`` MiB of
  virtual address space. An allocation past it fails (Python's ``MemoryError``, C's
  ``malloc`` returning NULL); nothing is killed. It is per process, not the total of
  the verifier's processes, and it counts address space, not resident memory (a
  runtime that reserves large ranges up front may fail below ``memory_mb``).
- ``cpus`` -> ``RLIMIT_CPU``: each process may use at most ``ceil(cpus * timeout)``
  seconds of CPU time (``timeout`` the call's own), then ``SIGXCPU``, and ``SIGKILL``
  a second later. So a verifier that keeps more than ``cpus`` cores busy for its whole
  budget is stopped; it does not slow a process down to ``cpus`` cores (that takes a
  cgroup, which gitevals does not make).

A call that ends without a readable reward after showing it hit a limit (killed by
``SIGXCPU``/``SIGKILL``, its shell saying a child was, or an allocation failure in its
output) is the trial's
``resource_limit`` error, never a pass (``resource_problem``).
"""

from __future__ import annotations

import math

from gitevals.jsontypes import JSONObject

MECHANISM = "rlimit"
#: The shell that sets the limits and becomes the command (``ulimit -v`` takes KiB).
_SHELL = 'ulimit -v "$1" && ulimit -t "$3" && ulimit -S -t "$2" && shift 3 && exec "$@"'
#: Exit statuses of a process killed by SIGXCPU (24) or SIGKILL (9), as a shell reports them.
_KILLED = {128 + 24, 128 + 9, -24, -9}
#: What a shell says of a child killed by ``SIGXCPU``.
_CPU_WORDS = "CPU time limit exceeded"
#: What a verifier's output says when an allocation failed.
_NO_MEMORY = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc",
              "memory exhausted")
#: No limit, as ``ulimit`` writes it.
_UNLIMITED = "unlimited"


def limited(argv: tuple[str, ...], cpus: float | None, memory_mb: int | None,
            timeout: float) -> tuple[str, ...]:
    """``argv`` behind the shell that applies the limits; ``argv`` itself when none."""
    if cpus is None and memory_mb is None:
        return argv
    memory = _UNLIMITED if memory_mb is None else str(memory_mb * 1024)
    soft = _UNLIMITED if cpus is None else str(cpu_seconds(cpus, timeout))
    hard = _UNLIMITED if cpus is None else str(cpu_seconds(cpus, timeout) + 1)
    return ("/bin/sh", "-c", _SHELL, "gitevals-limits", memory, soft, hard, *argv)


def cpu_seconds(cpus: float, timeout: float) -> int:
    """The CPU seconds a process may use: ``cpus`` cores for the whole ``timeout``."""
    return max(1, math.ceil(cpus * timeout))


def record(cpus: float | None, memory_mb: int | None, timeout: float,
           mechanism: str = MECHANISM) -> JSONObject | None:
    """What a run records of the limits applied (None: the task names none), by
    ``mechanism``: ``rlimit`` (per process) or ``cgroup2`` (``gitevals.tasks.cgroup2``:
    the verifier's processes together)."""
    if cpus is None and memory_mb is None:
        return None
    if mechanism == "cgroup2":
        from gitevals.tasks.cgroup2 import PERIOD_US, values

        cpu = values(cpus, None, 0).get("cpu.max")
        return {"mechanism": mechanism,
                "memory": None if memory_mb is None else
                f"memory.max {memory_mb} MiB for the verifier's processes together",
                "cpu": None if cpus is None else
                f"cpu.max {cpu}: {cpus:g} cpus (per {PERIOD_US} µs) for the verifier's "
                "processes together"}
    return {"mechanism": MECHANISM,
            "memory": None if memory_mb is None else
            f"RLIMIT_AS {memory_mb} MiB of address space per process",
            "cpu": None if cpus is None else
            f"RLIMIT_CPU {cpu_seconds(cpus, timeout)} s of CPU time per process "
            f"({cpus:g} cpus x {timeout:g} s)"}


def resource_problem(exit_code: int | None, tail: str, cpus: float | None,
                     memory_mb: int | None, mechanism: str = MECHANISM) -> str | None:
    """Why a call that left no readable reward hit the task's limits, or None. Under a
    ``cgroup2`` (``mechanism``) ``cpu.max`` only slows, and a kill is the OOM killer's
    past ``memory.max``."""
    if mechanism == "cgroup2":
        if memory_mb is not None and (exit_code in _KILLED or "Killed" in tail
                                      or any(w in tail for w in _NO_MEMORY)):
            return (f"the verifier was killed or ran out of memory (exit {exit_code}) past "
                    f"the task's memory_mb = {memory_mb} (cgroup v2 memory.max)")
        return None
    if cpus is not None and (exit_code in _KILLED or _CPU_WORDS in tail):
        return (f"the verifier was killed (exit {exit_code}) past the task's cpus = "
                f"{cpus:g} (RLIMIT_CPU)")
    if memory_mb is not None and any(w in tail for w in _NO_MEMORY):
        return (f"the verifier ran out of memory past the task's memory_mb = {memory_mb} "
                "(RLIMIT_AS: an allocation failed)")
    return None
