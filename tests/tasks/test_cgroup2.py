"""A task's limits as a cgroup v2 of each verifier call (issue 23, item 12), the pure
parts: the values written, the detection of a delegated subtree, the record, the call."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.tasks import cgroup2
from gitevals.tasks.calls import verifier_call
from gitevals.tasks.definition import Environment, Task, Verifier
from gitevals.tasks.limits import record, resource_problem


def test_values_hold_the_verifiers_processes_together() -> None:
    assert cgroup2.values(1.5, 64, 1024) == {
        "pids.max": "1024", "cpu.max": "150000 100000", "memory.max": str(64 << 20)}
    assert cgroup2.values(None, None, 7) == {"pids.max": "7"}
    assert cgroup2.values(0.001, None, 7)["cpu.max"] == "1000 100000"  # the kernel's least


@pytest.mark.parametrize(("text", "ok"), [
    ("cpu memory pids\n", True), ("cpuset cpu io memory hugetlb pids rdma\n", True),
    ("memory pids\n", False), ("", False)], ids=["exact", "more", "no-cpu", "none"])
def test_a_subtree_is_delegated_when_it_enables_cpu_memory_and_pids(text: str,
                                                                   ok: bool) -> None:
    assert cgroup2.controllers_ok(text) is ok


V2 = "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"
V1 = "40 24 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids"


@pytest.mark.parametrize(("mounts", "own", "path"), [
    ([V2], ["0::/user.slice/session-1.scope"], "/sys/fs/cgroup/user.slice/session-1.scope"),
    ([V1, V2], ["5:pids:/x", "0::/"], "/sys/fs/cgroup"),
    (["35 24 0:30 /ns /sys/fs/cgroup rw - cgroup2 cgroup2 rw"], ["0::/ns/job"],
     "/sys/fs/cgroup/job"),
    ([V1], ["5:pids:/x"], None),                   # cgroup v1 only, as on this machine
    ([V2], ["5:pids:/x"], None),                   # no unified line
    (["35 24 0:30 /ns /sys/fs/cgroup rw - cgroup2 cgroup2 rw"], ["0::/other"], None),
], ids=["unified", "hybrid", "namespaced-root", "v1-only", "no-0-line", "outside-root"])
def test_own_path_finds_this_processs_cgroup_v2_directory(mounts: list[str], own: list[str],
                                                           path: str | None) -> None:
    assert cgroup2.own_path(mounts, own) == path


def test_make_writes_the_values_and_removes_what_it_cannot_set(tmp_path: Path) -> None:
    group = cgroup2.make({"pids.max": "9", "memory.max": "1024"}, under=str(tmp_path))
    assert group is not None and Path(group.path).parent == tmp_path
    assert (Path(group.path) / "memory.max").read_text() == "1024"
    assert group.procs == f"{group.path}/cgroup.procs"
    for f in Path(group.path).iterdir():
        f.unlink()  # a real cgroup's files go with it
    assert group.remove(0) and not Path(group.path).exists()
    assert cgroup2.make({"no/such/file": "1"}, under=str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    assert cgroup2.make({"pids.max": "1"}, under=str(tmp_path / "absent")) is None


def test_the_record_and_the_error_say_cgroup_v2() -> None:
    assert record(1.5, 64, 100, "cgroup2") == {
        "mechanism": "cgroup2",
        "memory": "memory.max 64 MiB for the verifier's processes together",
        "cpu": "cpu.max 150000 100000: 1.5 cpus (per 100000 µs) for the verifier's "
               "processes together"}
    assert record(None, None, 100, "cgroup2") is None
    why = resource_problem(137, "Killed", None, 64, "cgroup2")
    assert why is not None and "memory.max" in why
    assert resource_problem(137, "Killed", 1.0, None, "cgroup2") is None  # cpu.max slows only


def _task(cpus: float | None, memory_mb: int | None) -> Task:
    return Task("t", "evals/tasks/t", "Do it.", "instruction.md", 1, 1.0, None,
                Verifier(("bash", "/tests/test.sh"), True, 30.0, (), "reward_text"),
                Environment(None, None, cpus=cpus, memory_mb=memory_mb))


def test_a_cgroup_call_runs_the_verifier_as_written() -> None:
    call = verifier_call(_task(2, 128), cgroup=True)
    assert call.argv == ("bash", "/tests/test.sh")
    assert dict(call.cgroup or ()) == {"cpu.max": "200000 100000",
                                       "memory.max": str(128 << 20), "pids.max": "1024"}
    limited = verifier_call(_task(2, 128))
    assert limited.cgroup is None and limited.argv[:2] == ("/bin/sh", "-c")
    assert verifier_call(_task(None, None), cgroup=True).cgroup is None


def test_this_machine_says_which_mechanism_applies() -> None:
    # cgroup v1 only here (and most containers): rlimits; a delegated v2 subtree elsewhere
    found = cgroup2.parent()
    assert found is None or Path(found, "cgroup.subtree_control").is_file()
