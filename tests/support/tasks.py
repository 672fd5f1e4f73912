"""Task directories run end to end: the example task harness
(``tests/data/task_harness.py``), a verifier that copies its answer, a committed task."""

from __future__ import annotations

from tests.conftest import Repo
from tests.support.paths import HARNESS_SETTINGS, TASK_HARNESS

HARNESS = TASK_HARNESS


SETTINGS = HARNESS_SETTINGS


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
