"""Goldens sent through ``gitevals run``: the example harness, two graded buckets and
the run's per-slice rates."""

from __future__ import annotations

import json
import sys
from typing import Any

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo
from tests.support.paths import RUN_HARNESS

HARNESS = RUN_HARNESS


#: The example harness (standard library only) started with ``-S``: still a command target,
#: a Python per golden, without site's work (the venv's .pth files).
SETTINGS = f"""\
[tool.gitevals.target]
command = ["{sys.executable}", "-S", "harness.py"]

[tool.gitevals.goldens]
graders = {{format = "checks.exact", tone = "checks.polite"}}
"""


#: The example harness's answers (Paris to a question about France, else "answer: " and
#: the last user turn) as a python target: imported once a run and forked per conversation
#: instead of a Python started per conversation or golden. For the tests that are about
#: goldens, not about how a target is started (command targets: ``SETTINGS``).
PY_HARNESS = """\
def respond(messages):
    text = messages[-1]["text"]
    answer = "Paris" if "France" in text else "answer: " + text
    return {"final_answer": answer, "tool_calls": [], "hooks": [], "error": None}
"""

PY_SETTINGS = """\
[tool.gitevals.target]
python = "harness:respond"

[tool.gitevals.goldens]
graders = {format = "checks.exact", tone = "checks.polite"}
"""


GRADERS = """\
def exact(t, case, run):
    return run["final_answer"] == case["expected"]


def polite(t, case, run):
    return {"pass": "please" in run["final_answer"], "score": 1.0, "why": case["id"]}
"""


CASE = """\
scenarios:
  - id: ok-capital
    user: What is the capital of France?
    expect: [{final_answer_contains: Paris}]
"""


def golden(id_: str, bucket: str | None, input_: object, expected: str) -> str:
    row: dict[str, Any] = {"id": id_, "input": input_, "expected": expected}
    if bucket is not None:
        row["bucket"] = bucket
    return json.dumps(row)


# format: 3 of 4 pass; tone: 1 of 2 (the harness answers "answer: <last turn>").
GOLDENS = "\n".join([
    golden("f1", "format", "a", "answer: a"),
    golden("f2", "format", "b", "answer: b"),
    golden("f3", "format", "c", "wrong"),
    golden("f4", "format", ["x", "d"], "answer: d"),
    golden("t1", "tone", "please sit", ""),
    golden("t2", "tone", ["hello", "go away"], ""),
]) + "\n"


def setup(repo: Repo, goldens: str = GOLDENS, settings: str = SETTINGS,
          extra: dict[str, str | bytes] | None = None) -> str:
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": settings,
        "evals/cases/basics.yaml": CASE, "evals/graders/checks.py": GRADERS,
        "evals/goldens.jsonl": goldens, **(extra or {})}
    return repo.commit(files)


def artifacts(repo: Repo) -> list[dict[str, Any]]:
    # in the order written: two runs in one second may sort either way by name
    paths = sorted((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    return [dict(load_artifact(p)) for p in paths]


def rates(artifact: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {f"{s['kind']}:{s['name']}": (s["passed"], s["total"])
            for s in artifact["goldens"]["slices"]}
