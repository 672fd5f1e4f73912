"""A task whose verifier runs under the task's ``cpus`` / ``memory_mb``, run through the
real CLI (tests/tasks/test_limits.py, tests/tasks/test_cgroup2_real.py)."""

from __future__ import annotations

import os
from typing import Any

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli
from tests.support.paths import HARNESS_SETTINGS_NO_SITE, TASK_HARNESS

#: Allocates 256 MiB, then writes a passing reward.
GREEDY = ("#!/bin/bash\npython3 -c 'b = bytearray(256 << 20)' || exit 1\n"
          "echo 1 > /logs/verifier/reward.txt\n")


def run_limited(repo: Repo, test_sh: str, environment: str) -> dict[str, Any]:
    """Commit a task with ``test_sh`` as its verifier and ``environment`` under
    ``[environment]``, run it, and give its entry of the artifact."""
    base = "evals/tasks/t"
    repo.commit({"harness.py": TASK_HARNESS, "pyproject.toml": HARNESS_SETTINGS_NO_SITE,
                 "evals/.gitignore": "results/\n",
                 f"{base}/task.toml": ("[verifier]\ntimeout_sec = 100\n\n[environment]\n"
                                       + environment),
                 f"{base}/instruction.md": "Do it.\n", f"{base}/tests/test.sh": test_sh,
                 f"{base}/environment/plan.txt": "x\n",
                 f"{base}/solution/solve.sh": "true\n"})
    run_cli("run", cwd=repo.path)
    paths = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    (entry,) = load_artifact(paths[-1])["cases"]
    return dict(entry)
