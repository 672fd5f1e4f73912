"""A task's ``cpus`` and ``memory_mb`` applied to its verifier (#23 item 12), through the
real CLI, a real repo and bubblewrap: a verifier past a limit is the trial's
``resource_limit`` error (broken), never a pass; without the limit the same verifier
passes."""

from __future__ import annotations

import shutil

import pytest

from gitevals.tasks.cgroup2 import parent
from gitevals.tasks.limits import limited
from tests.conftest import Repo
from tests.support.limits import GREEDY, run_limited

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (Debian: bubblewrap)"),
              # where a delegated cgroup v2 holds the limits, test_cgroup2_real.py does
              pytest.mark.skipif(parent() is not None, reason="the limits are a cgroup v2 "
                                 "here (tests/tasks/test_cgroup2_real.py)")]

#: Burns CPU for 3 s of CPU time, then writes a passing reward.
BUSY = ("#!/bin/bash\npython3 -c 'import time\nwhile time.process_time() < 3: pass'"
        " || exit 1\necho 1 > /logs/verifier/reward.txt\n")


def test_a_verifier_past_memory_mb_is_a_resource_error_not_a_pass(repo: Repo) -> None:
    free = run_limited(repo, GREEDY, "allow_internet = false\n")
    assert free["scenarios"][0]["verdict"]["verdict"] == "pass"  # the limit is what stops it
    assert "limits" not in free["task"]
    entry = run_limited(repo, GREEDY, "memory_mb = 64\n")
    assert entry["task"]["limits"] == {
        "mechanism": "rlimit", "cpu": None,
        "memory": "RLIMIT_AS 64 MiB of address space per process"}
    assert "memory_mb" not in entry["task"]["gaps"]
    scenario = entry["scenarios"][0]
    assert scenario["verdict"]["verdict"] == "broken"
    (trial,) = scenario["results"]
    assert trial["passed"] is False and trial["error"]["kind"] == "resource_limit"
    assert trial["task"]["limits"] == "rlimit"  # each trial says which mechanism held it
    assert "memory_mb = 64" in trial["error"]["message"]
    assert "MemoryError" in trial["task"]["iterations"][0]["verifier_tail"]


def test_a_verifier_past_its_cpu_time_is_killed_as_a_resource_error(repo: Repo) -> None:
    # cpus = 0.01 for 100 s: one second of CPU time per process
    entry = run_limited(repo, BUSY, "cpus = 0.01\n")
    assert entry["task"]["limits"]["cpu"] == ("RLIMIT_CPU 1 s of CPU time per process "
                                              "(0.01 cpus x 100 s)")
    (trial,) = entry["scenarios"][0]["results"]
    assert trial["error"]["kind"] == "resource_limit", trial["error"]
    assert "cpus = 0.01" in trial["error"]["message"]
    assert entry["scenarios"][0]["verdict"]["verdict"] == "broken"


def test_the_limits_wrapper_sets_both_limits() -> None:
    assert limited(("true",), None, None, 5) == ("true",)
    argv = limited(("true",), 2, 1024, 30)
    assert argv[:2] == ("/bin/sh", "-c") and argv[4:] == ("1048576", "60", "61", "true")
