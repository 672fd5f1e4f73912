"""``gitevals.api`` driven in-process, as a notebook would, on a real git repository:
plan a commit, run it, lint a tree; nothing printed, typed values back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitevals import api
from gitevals.git.repo import require_repo
from gitevals.git.trees import RevisionTree, WorkingTree
from gitevals.run.artifact import scenarios
from gitevals.run.runner import Provenance
from tests.conftest import Repo

HARNESS = (Path(__file__).parent / "data" / "run_harness.py").read_text()
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
CAPITAL = ("scenarios:\n  - id: ok\n    user: What is the capital of France?\n    trials: 2\n"
           "    expect: [{final_answer_contains: Paris}]\n")
BROKEN = "scenarios:\n  - id: x\n    user: hi\n    expect: [{no_such_check: 1}]\n"


@pytest.fixture
def committed(repo: Repo) -> Repo:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/cases/capital.yaml": CAPITAL, "evals/cases/broken.yaml": BROKEN})
    return repo


def test_plan_then_run_commit_returns_the_artifact_and_prints_nothing(
        committed: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    tree = RevisionTree(require_repo(committed.path), "HEAD")
    the_plan = api.plan(tree, [])
    assert [c.name for c in the_plan.cases] == ["capital"]
    assert the_plan.blocked == ("broken",)  # lint said no: it is not run
    assert tree.commit is not None and tree.tree_sha is not None
    run = api.run_commit(tree, the_plan, Provenance("HEAD", tree.commit, tree.tree_sha),
                         api.RunOptions(names=("capital",), jobs=2))
    assert run["commit"] == tree.commit and run["options"]["jobs"] == 2
    verdicts = {f"{c['name']}/{s['id']}": s["verdict"] for c, s in scenarios(run)}
    assert verdicts["capital/ok"]["passes"] == 2 and verdicts["capital/ok"]["trials"] == 2
    assert capsys.readouterr() == ("", "")


def test_lint_reads_the_working_tree_or_a_revision(committed: Repo) -> None:
    committed.write({"evals/cases/capital.yaml": BROKEN.replace("id: x", "id: y")})
    working = api.lint(WorkingTree(committed.path), options=api.LintOptions(cache=False))
    head = api.lint(RevisionTree(require_repo(committed.path), "HEAD"),
                    options=api.LintOptions(cache=False))
    assert not working.ok and not head.ok
    assert {f.path for f in working.findings if f.severity == "error"} == {
        "evals/cases/broken.yaml", "evals/cases/capital.yaml"}
    assert {f.path for f in head.findings if f.severity == "error"} == {
        "evals/cases/broken.yaml"}
    only = api.lint(WorkingTree(committed.path), ["evals/cases/broken.yaml"],
                    api.LintOptions(cache=False))
    assert {f.path for f in only.findings} == {"evals/cases/broken.yaml"}


def test_diff_of_two_commits_without_runs(committed: Repo) -> None:
    from gitevals.commands.diff import PARTS

    a = committed.git("rev-parse", "HEAD")
    b = committed.commit({"evals/cases/capital.yaml": CAPITAL.replace("trials: 2", "trials: 3")})
    result = api.diff(require_repo(committed.path), a, b,
                      api.DiffOptions(parts=frozenset({"rules", "verdicts"})))
    assert [(c.path, c.kind) for c in result.cases] == [("capital.yaml", "changed")]
    assert (result.a.commit, result.b.commit) == (a, b)
    assert result.a.run_id is None and result.b.run_id is None  # nothing ran: no verdicts
    assert result.verdicts == ()
    assert api.DiffOptions().parts == frozenset(PARTS)  # the CLI's --only names them all
