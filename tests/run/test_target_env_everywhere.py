"""``run --target-env``: every conversation of a run sees the same environment — case,
task, golden and drift row alike (issue 23, items 2 and 15).

The target answers with ``$MODEL`` (and writes it into a task's workspace); each kind of
conversation passes only when that value arrived.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli

HARNESS = """\
import json, os, sys
model = os.environ.get("MODEL", "unset")
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("workspace"):
        with open(os.path.join(msg["workspace"], "model.txt"), "w") as f:
            f.write(model + "\\n")
    print(json.dumps({"final_answer": model, "tool_calls": [], "hooks": [], "error": None}),
          flush=True)
"""
SETTINGS = f"""\
[tool.gitevals.target]
command = ["{sys.executable}", "-S", "harness.py"]

[tool.gitevals.goldens]
graders = {{tone = "checks.exact"}}
"""
GRADERS = 'def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n'
CASE = """\
scenarios:
  - id: says-model
    user: Which model are you?
    expect:
      - final_answer_contains: m-7b
"""
DRIFT = """\
domain_adjacent:
  path: evals/goldens.jsonl
  filter: "tag == 'drift-suite'"
  n_items_range: [2, 2]
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""
VERIFIER = ("grep -qx m-7b /app/model.txt && echo 1 > /logs/verifier/reward.txt"
            " || echo 0 > /logs/verifier/reward.txt\n")


def _goldens() -> str:
    rows = [{"id": f"g{i}", "bucket": "tone", "input": f"q{i}", "expected": "m-7b",
             "tag": "drift-suite"} for i in range(2)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def _commit(repo: Repo, task: bool) -> None:
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/.gitignore": "results/\n",
        "evals/graders/checks.py": GRADERS, "evals/goldens.jsonl": _goldens(),
        "evals/drift-suite.yaml": DRIFT, "evals/cases/who.yaml": CASE}
    if task:
        base = "evals/tasks/model"
        files.update({f"{base}/task.toml": "max_iterations = 1\n",
                      f"{base}/instruction.md": "Say which model you are.\n",
                      f"{base}/tests/test.sh": VERIFIER,
                      f"{base}/environment/README": "workspace\n"})
    repo.commit(files)


def _newest(repo: Repo) -> dict[str, Any]:
    paths = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    return dict(load_artifact(paths[-1]))


def _answers(run: dict[str, Any]) -> dict[str, str]:
    """Each conversation's final answer by kind: case, task, golden, drift."""
    seen: dict[str, str] = {}
    for entry in run["cases"]:
        kind = "task" if entry.get("task") else "case"
        for s in entry["scenarios"]:
            for r in s["results"]:
                seen[kind] = r["transcript"]["final_answer"] if kind == "case" else (
                    "m-7b" if r["passed"] else "other")
    for item in run["goldens"]["items"]:
        kind = "golden" if item["kind"] == "bucket" else "drift"
        seen[kind] = item["transcript"]["final_answer"]
    return seen


def test_cases_goldens_and_drift_rows_see_the_target_env(repo: Repo) -> None:
    _commit(repo, task=False)
    res = run_cli("run", "--no-note", "--target-env", "MODEL=m-7b", cwd=repo.path)
    assert res.code == 0, res.err
    assert _answers(_newest(repo)) == {"case": "m-7b", "golden": "m-7b", "drift": "m-7b"}


@pytest.mark.needs_bwrap
def test_a_task_trial_sees_the_target_env(repo: Repo) -> None:
    _commit(repo, task=True)
    res = run_cli("run", "--no-note", "--target-env", "MODEL=m-7b", cwd=repo.path)
    assert res.code == 0, res.err + res.out
    assert _answers(_newest(repo))["task"] == "m-7b"


def test_without_target_env_the_goldens_fail_so_the_test_can_fail(repo: Repo) -> None:
    _commit(repo, task=False)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 1
    assert set(_answers(_newest(repo)).values()) == {"unset"}

