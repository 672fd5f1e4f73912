"""Task directories run end to end: the example task harness
(``tests/data/task_harness.py``), a verifier that copies its answer, a committed task."""

from __future__ import annotations

import sys

from tests.conftest import Repo
from tests.support.paths import TASK_HARNESS

HARNESS = TASK_HARNESS


#: The harness as a command target, its interpreter started with ``-S``: the harness
#: imports only the standard library, so site's work (the venv's .pth files, about
#: two thirds of a start) is spared on each conversation's start.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'


COPY_TEXT = ("echo checking /app\n"
             "test -f /app/answer.txt && cat /app/answer.txt > /logs/verifier/reward.txt\n")


def commit_task(repo: Repo, plan: str, toml: str = "max_iterations = 3\n",
          test_sh: str = COPY_TEXT, name: str = "fix", extra: dict[str, str] | None = None
          ) -> str:
    base = f"evals/tasks/{name}"
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/.gitignore": "results/\n",
        f"{base}/task.toml": toml, f"{base}/instruction.md": "Write the answer.\n",
        f"{base}/tests/test.sh": test_sh, f"{base}/environment/plan.txt": plan,
        f"{base}/environment/Dockerfile": "FROM python:3.12-slim\n",
    }
    files.update(extra or {})
    return repo.commit(files)
