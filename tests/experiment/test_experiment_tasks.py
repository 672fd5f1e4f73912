"""``gitevals experiment`` over task directories (issue 23, item 1): tasks are repeated,
counted, pinned and re-checked like cases, so an experiment whose every task is
satisfied in every lane passes."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.paths import TASK_HARNESS

pytestmark = pytest.mark.needs_bwrap

HARNESS = TASK_HARNESS
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
COPY = "cat /app/answer.txt > /logs/verifier/reward.txt\n"
MATH = ("scenarios:\n  - id: sum\n    user: What is 2 + 2?\n"
        "    expect:\n      - no_error: true\n")


def _commit(repo: Repo, plan: str = "1.0\n", case: bool = False) -> str:
    base = "evals/tasks/sort-array"
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/.gitignore": "results/\n",
        f"{base}/task.toml": "max_iterations = 1\n", f"{base}/instruction.md": "Sort it.\n",
        f"{base}/tests/test.sh": COPY, f"{base}/environment/plan.txt": plan}
    if case:
        files["evals/cases/math.yaml"] = MATH
    return repo.commit(files)


def _experiment(repo: Repo, *flags: str) -> tuple[int, dict[str, Any], str]:
    r = run_cli("experiment", "--lane", "a=HEAD,env:MODEL=a", "--lane", "b=HEAD,env:MODEL=b",
                "--format", "json", *flags, cwd=repo.path, timeout=300)
    return r.code, json.loads(r.out) if r.out.strip() else {}, r.err


def test_a_task_satisfied_in_every_lane_passes_its_controls(repo: Repo) -> None:
    _commit(repo)
    code, doc, err = _experiment(repo, "--repeat", "2")
    assert code == 0, err
    assert (doc["controls_held"], doc["passed"]) == (True, True)
    for lane in doc["lanes"]:
        assert lane["controls"]["problems"] == []
        assert lane["pass_rate"]["trials"] == 2  # --repeat 2 runs the task twice a lane
    assert doc["conversations"] == 4  # 1 task × 2 lanes × 2 repeats


def test_tasks_count_toward_the_conversation_bound(repo: Repo) -> None:
    _commit(repo, case=True)
    code, _, err = _experiment(repo, "--repeat", "3", "--max-samples", "11")
    assert code == 2
    assert "= 12 conversations, over the bound of 11" in err
    assert "1 task" in err


def test_a_failing_task_fails_the_experiment_not_its_controls(repo: Repo) -> None:
    _commit(repo, plan="0.0\n")
    code, doc, err = _experiment(repo)
    assert code == 1, err
    assert (doc["controls_held"], doc["passed"]) == (True, False)
