"""The goldens gate: a harness passing the first N goldens of each bucket (N committed in
``passes.json``), its settings and graders, goldens-only runs and a repository with a baseline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli

# Answers "ok" to the first N goldens of a bucket (ids f00.., t00..), "no" to the rest;
# N per id prefix comes from passes.json in the commit.
HARNESS = """\
import json, sys
passes = json.load(open("passes.json"))
for line in sys.stdin:
    msg = json.loads(line)
    sid = msg["scenario"]
    ok = int(sid[1:]) < passes.get(sid[0], 0)
    print(json.dumps({"final_answer": "ok" if ok else "no", "tool_calls": [], "hooks": [],
                      "error": None}), flush=True)
"""


SETTINGS = f"""\
[tool.gitevals.target]
command = ["{sys.executable}", "harness.py"]

[tool.gitevals.goldens]
graders = {{format = "checks.exact", tone = "checks.exact"}}
"""


GRADERS = 'def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n'


SUITE = """\
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""


def goldens(n: int = 20) -> str:
    rows = [{"id": f"{p}{i:02d}", "bucket": b, "input": f"q{i}", "expected": "ok"}
            for p, b in (("f", "format"), ("t", "tone")) for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def commit(repo: Repo, f: int, t: int, extra: dict[str, str | bytes] | None = None) -> str:
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS,
        "passes.json": json.dumps({"f": f, "t": t}),
        "evals/graders/checks.py": GRADERS, "evals/goldens.jsonl": goldens(),
        "evals/drift-suite.yaml": SUITE, **(extra or {})}
    return repo.commit(files)


def goldens_run(repo: Repo, rev: str = "HEAD", note: bool = False) -> Path:
    res = run_cli("run", "--goldens-only", "--rev", rev, *(() if note else ("--no-note",)),
                  cwd=repo.path)
    assert res.code in (0, 1), res.err
    newest = max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    return newest


@pytest.fixture
def based(repo: Repo) -> tuple[Repo, Path]:
    """A repo whose base model passes 15/20 format and 10/20 tone, with that baseline."""
    commit(repo, 15, 10)
    artifact = goldens_run(repo, note=True)  # a baseline is checked against its run's note
    res = run_cli("baseline", str(artifact), "--model", "base-7b", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.startswith("wrote evals/baseline-base-7b.json: 2 slices of run ")
    repo.commit(msg="baseline")
    return repo, artifact
