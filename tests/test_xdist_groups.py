"""The suite's ``--dist loadgroup`` (pyproject's addopts) keeps each ``xdist_group`` on
one worker: the Ray tests share one cluster by it. pytest 9.2 derives a node id that
pytest-xdist 3.8 can no longer suffix with its group, which silently spread every group
over all workers; pyproject keeps pytest below 9.2 and this test says when that breaks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = """\
import os

import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(6))
def test_one(i):
    with open(os.environ["WORKERS_FILE"], "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    seen = tmp_path / "workers"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", str(tmp_path),
         f"--basetemp={tmp_path / 'basetemp'}",
         *(x for p in ("cacheprovider", "langsmith_plugin", "anyio", "hypothesispytest")
           for x in ("-p", f"no:{p}"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**_env(), "WORKERS_FILE": str(seen)})
    assert res.returncode == 0, res.stdout + res.stderr
    workers = seen.read_text().split()
    assert len(workers) == 6
    assert len(set(workers)) == 1, f"one group ran on {sorted(set(workers))}"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
