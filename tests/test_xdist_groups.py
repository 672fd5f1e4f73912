"""The suite's ``--dist`` mode (pyproject's addopts) keeps the tests of a module on one
worker: the Ray tests share one cluster by it, and a module's ``scope="module"`` fixtures
(a calibrated repository, a browser, a judge) are made once, not once per worker.

``--dist loadfile`` does it for every module; the Ray tests also carry
``xdist_group("ray")`` so that ``--dist loadgroup`` keeps them together. pytest 9.2
derives a node id that pytest-xdist 3.8 can no longer suffix with its group, which
silently spread every group over all workers; pyproject keeps pytest below 9.2 and the
second case says when that breaks.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import PROJECT

GROUPED = """\
import os

import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(6))
def test_one(i):
    with open(os.environ["WORKERS_FILE"], "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""

#: A second module of the same size, so the scheduler has work to spread.
OTHER = GROUPED.replace('pytestmark = pytest.mark.xdist_group("together")\n', "").replace(
    "WORKERS_FILE", "OTHER_FILE")


def _suite_dist() -> str:
    """The ``--dist`` mode the suite's addopts give."""
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    args = shlex.split(pyproject["tool"]["pytest"]["ini_options"]["addopts"])
    return args[args.index("--dist") + 1]


def test_the_suite_keeps_a_module_on_one_worker() -> None:
    assert _suite_dist() in ("loadfile", "loadgroup")


@pytest.mark.parametrize("dist", [_suite_dist(), "loadgroup"])
def test_a_module_runs_on_one_worker(tmp_path: Path, dist: str) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    seen = tmp_path / "workers"
    other = tmp_path / "other"
    if dist == "loadfile":
        (tmp_path / "test_other.py").write_text(OTHER)
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", dist, str(tmp_path),
         f"--basetemp={tmp_path / 'basetemp'}",
         *(x for p in ("cacheprovider", "langsmith_plugin", "anyio", "hypothesispytest")
           for x in ("-p", f"no:{p}"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**_env(), "WORKERS_FILE": str(seen), "OTHER_FILE": str(other)})
    assert res.returncode == 0, res.stdout + res.stderr
    for path in (seen, other) if dist == "loadfile" else (seen,):
        workers = path.read_text().split()
        assert len(workers) == 6
        assert len(set(workers)) == 1, f"one module ran on {sorted(set(workers))}"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
