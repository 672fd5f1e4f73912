"""A scenario that vanished from a run but not from its commit's tree is never silently
"gone" (issue 23, item 14): a partial run (named cases, --goldens-only) shows the
scenarios it left out as not run, the diff says the run is partial, and --require-runs
refuses it."""

from __future__ import annotations

import json
import sys

from tests.conftest import Repo, run_cli

HARNESS = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"final_answer": "Paris", "tool_calls": [], "hooks": [],
                      "error": None}), flush=True)
"""
#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'


def _case(n: int) -> str:
    return "defaults: {trials: 3}\nscenarios:\n" + "".join(
        f"  - id: s{i}\n    user: capital?\n    expect: [{{final_answer_contains: Paris}}]\n"
        for i in range(n))


def _two_commits(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/.gitignore": "results/\n",
                 "evals/cases/a.yaml": _case(3), "evals/cases/b.yaml": _case(3)})
    assert run_cli("run", cwd=repo.path).code == 0
    repo.git("tag", "v2")
    repo.commit({"notes.txt": "v3"})
    assert run_cli("run", "a", cwd=repo.path).code == 0  # only case a: a partial run
    repo.git("tag", "v3")


def test_a_partial_run_shows_what_it_left_out_as_not_run(repo: Repo) -> None:
    _two_commits(repo)
    res = run_cli("diff", "v2", "v3", "--format", "json", cwd=repo.path)
    doc = json.loads(res.out)
    changes = {(r["case"], r["scenario"]): r["change"] for r in doc["verdicts"]}
    assert {k: v for k, v in changes.items() if k[0] == "b"} == {
        ("b", f"s{i}"): "not_run" for i in range(3)}
    assert doc["counts"]["gone"] == 0
    text = run_cli("diff", "v2", "v3", cwd=repo.path)
    assert "gone" not in text.out.split("note:")[0].lower() or "0 gone" in text.out
    assert "partial" in text.out + text.err


def test_require_runs_refuses_a_partial_run(repo: Repo) -> None:
    _two_commits(repo)
    res = run_cli("diff", "v2", "v3", "--require-runs", cwd=repo.path)
    assert res.code == 2
    assert "partial" in res.err and "(--require-runs)" in res.err
    assert res.err.count("\n") == 1
