"""A scenario that vanished from a run but not from its commit's tree is never silently
"gone" (issue 23, item 14): a partial run (named cases, --goldens-only) shows the
scenarios it left out as not run, the diff says the run is partial, and --require-runs
refuses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli
from tests.support.runs import repo_copy

#: A python target (imported once a run, forked per conversation): what is tested is which
#: scenarios a run left out, not how the target is started.
HARNESS = """\
def respond(messages):
    return {"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None}
"""
SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'


def _case(n: int) -> str:
    return "defaults: {trials: 3}\nscenarios:\n" + "".join(
        f"  - id: s{i}\n    user: capital?\n    expect: [{{final_answer_contains: Paris}}]\n"
        for i in range(n))


def _two_commits(repo: Repo) -> None:
    """v2 with a run of both cases, v3 with a run of case a alone."""
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/.gitignore": "results/\n",
                 "evals/cases/a.yaml": _case(3), "evals/cases/b.yaml": _case(3)})
    assert run_cli("run", cwd=repo.path).code == 0
    repo.git("tag", "v2")
    repo.commit({"notes.txt": "v3"})
    assert run_cli("run", "a", cwd=repo.path).code == 0  # only case a: a partial run
    repo.git("tag", "v3")


@pytest.fixture
def partial(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of ``_two_commits``' repository, built (its two runs) once for the test run:
    the tests only diff it."""
    return repo_copy(tmp_path_factory, tmp_path, "diff-partial-runs", _two_commits)


def test_a_partial_run_shows_what_it_left_out_as_not_run(partial: Repo) -> None:
    repo = partial
    res = run_cli("diff", "v2", "v3", "--format", "json", cwd=repo.path)
    doc = json.loads(res.out)
    changes = {(r["case"], r["scenario"]): r["change"] for r in doc["verdicts"]}
    assert {k: v for k, v in changes.items() if k[0] == "b"} == {
        ("b", f"s{i}"): "not_run" for i in range(3)}
    assert doc["counts"]["gone"] == 0
    text = run_cli("diff", "v2", "v3", cwd=repo.path)
    assert "gone" not in text.out.split("note:")[0].lower() or "0 gone" in text.out
    assert "partial" in text.out + text.err


def test_require_runs_refuses_a_partial_run(partial: Repo) -> None:
    repo = partial
    res = run_cli("diff", "v2", "v3", "--require-runs", cwd=repo.path)
    assert res.code == 2
    assert "partial" in res.err and "(--require-runs)" in res.err
    assert res.err.count("\n") == 1
