"""Calibrating a judge-backed grader: graders that ask the fake judge, labelled items,
settings naming the judge, and a record as ``gitevals calibrate`` writes it."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Repo
from tests.support.judges import FakeJudge

#: The example harness's answer to these cases (``tests/data/run_harness.py``: Paris to a
#: question about France), as a python target: imported once a run and forked per
#: conversation, not a Python started per conversation. What these tests check is the
#: judge's calibration; command targets are tested in tests/run.
HARNESS = """\
def respond(messages):
    text = messages[-1]["text"]
    answer = "Paris" if "France" in text else "answer: " + text
    return {"final_answer": answer, "tool_calls": [], "error": None}
"""
SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'

#: ``calibrate``'s grader calls, and a run's conversations, on one worker (``calibrate``
#: defaults to 4 in parallel, ``run`` to 16, a grader worker's Python start each, ~60 ms
#: CPU): what these tests check is what the judge's verdicts make of the labels, the
#: record and the run's verdicts, the same whichever worker asked; parallel grading is
#: checked by ``run``'s tests.
ONE_JOB = ("--jobs", "1")

JUDGED = """\
def tone(t, case, run):
    return t.judge("Is this answer polite? PASS or FAIL.\\n" + (run["final_answer"] or ""))
"""


#: Asks the judge (so it needs calibrating) but decides from the data: a perfect grader.
FAIR = """\
def fair(t, case, run):
    t.llm("ping")
    return run["final_answer"] == "good"
"""


CASE = """\
defaults: {trials: 2, timeout: 20s}
scenarios:
  - id: ok-polite
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - grader: {name: q.tone}
"""


def answer(judge: FakeJudge, text: str) -> None:
    """Make the judge answer ``text`` to every prompt."""
    judge.body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                      "content": text}}]}).encode()


def judge_settings(judge: FakeJudge, model: str = "judge-2026-01-15", extra: str = "") -> str:
    return (SETTINGS + f'\n[tool.gitevals.judge]\nbase_url = "{judge.url}"\n'
            f'model = "{model}"\nretries = 1\n{extra}')


def labels(n: int, pass_share: float = 0.9) -> str:
    """``n`` labelled items, the first ``pass_share`` of them labelled pass."""
    rows = []
    for i in range(n):
        ok = i < round(n * pass_share)
        rows.append({"id": f"item-{i}", "input": f"question {i}",
                     "output": "good" if ok else "bad", "label": "pass" if ok else "fail"})
    return "".join(json.dumps(r) + "\n" for r in rows)


def setup(repo: Repo, judge: FakeJudge, graders: dict[str, str] | None = None,
           **settings: Any) -> None:
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": judge_settings(judge, **settings),
        "evals/cases/polite.yaml": CASE, "labels.jsonl": labels(200)}
    files.update({f"evals/graders/{n}.py": g for n, g in
                  (graders or {"q": JUDGED + "\n\n" + FAIR}).items()})
    repo.commit(files)
