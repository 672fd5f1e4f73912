"""A task's ``memory_mb`` held by a real cgroup v2 of its verifier call (issue 23, item
12), through the real CLI and bubblewrap: only where this process has a delegated cgroup
v2 subtree (``needs_cgroup2``; on cgroup v1 the limits are rlimits: test_limits.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.tasks.cgroup2 import parent
from tests.conftest import Repo
from tests.support.limits import GREEDY, run_limited

pytestmark = [pytest.mark.needs_cgroup2, pytest.mark.needs_bwrap]


def test_a_verifier_past_memory_max_is_a_resource_error_and_its_cgroup_goes(
        repo: Repo) -> None:
    entry = run_limited(repo, GREEDY, "memory_mb = 64\n")
    assert entry["task"]["limits"]["mechanism"] == "cgroup2"
    (trial,) = entry["scenarios"][0]["results"]
    assert trial["task"]["limits"] == "cgroup2"
    assert trial["error"]["kind"] == "resource_limit", trial["error"]
    assert "memory.max" in trial["error"]["message"]
    base = parent()
    assert base is not None
    assert not [p for p in Path(base).iterdir() if p.name.startswith("gitevals-verifier-")]
