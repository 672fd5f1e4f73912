"""A tree ``gitevals doctor`` finds complete: goldens in four buckets, their graders, a
drift suite and a baseline."""

from __future__ import annotations

import json

SETTINGS = """\
[tool.gitevals.goldens.graders]
format = "checks.schema_ok"
tone = "tone.polite"
tools = "checks.called"
facts = "checks.exact"
"""


CHECKS = """\
def schema_ok(t, case, run):
    return True


def called(t, case, run):
    return True


def exact(t, case, run):
    return run["final_answer"] == case["expected"]
"""


DETERMINISTIC_TONE = "def polite(t, case, run):\n    return 'please' in run['final_answer']\n"


# Never imported by doctor: importing it would raise before any def ran.
JUDGE_TONE = """\
raise SystemExit("doctor imported a grader module")


def polite(t, case, run):
    return t.llm("Is this polite? " + run["final_answer"]).startswith("yes")
"""


def goldens(n: int, buckets: tuple[str, ...] = ("format", "tone", "tools", "facts")) -> str:
    return "".join(json.dumps({"id": f"g-{i}", "input": f"q{i}", "bucket": buckets[i % len(
        buckets)]}) + "\n" for i in range(n))


def complete_tree(tone: str = DETERMINISTIC_TONE) -> dict[str, str | bytes]:
    return {"pyproject.toml": SETTINGS, "evals/goldens.jsonl": goldens(100),
            "evals/graders/checks.py": CHECKS, "evals/graders/tone.py": tone,
            "evals/drift-suite.yaml": "drift_budget: {hard_fail_threshold_pts: 3}\n",
            "evals/baseline-base-7b.json": BASELINE}


#: A baseline as `gitevals baseline` writes one (the doctor checks its schema, not its run).
BASELINE = json.dumps({
    "format": "gitevals-baseline/1", "model": "base-7b", "run_id": "r1", "rev": "HEAD",
    "commit": "a" * 40, "tree": "b" * 40, "target": None, "target_env": None,
    "graders": {}, "files": {}, "budget": None,
    "slices": [{"kind": "bucket", "name": b, "grader": "checks.exact", "passed": 20,
                "total": 25, "errors": 0, "rate": 0.8}
               for b in ("format", "tone", "tools", "facts")]}) + "\n"
