"""Lint inputs: a grader module and case files naming it."""

from __future__ import annotations

GRADER = "def answers(t, case, run):\n    return True\n"


def case(grader: str = "quality.answers", sid: str = "one") -> str:
    return ("scenarios:\n"
            f"  - id: {sid}\n"
            "    user: hi\n"
            "    trials: 2\n"
            "    expect:\n"
            f"      - grader: {{name: {grader}}}\n")


GOOD = {
    "evals/cases/a.yaml": case(),
    "evals/graders/quality.py": GRADER,
    "evals/goldens.jsonl": '{"id": 1, "input": "x"}\n{"id": 2}\n',
}


MISSING = "grader module evals/graders/nope.py not found; create it or fix the name"
