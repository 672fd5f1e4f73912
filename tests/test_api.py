"""``gitevals.api`` driven in-process, as a notebook would, on a real git repository:
plan a commit, run it, lint a tree; nothing printed, typed values back."""

from __future__ import annotations

import dataclasses
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
#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
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


# -- run_rev: what `gitevals run` does, as a notebook calls it ------------------------------


def _note_of(repo: Repo, rev: str = "HEAD") -> str:
    return repo.git("notes", "--ref", "refs/notes/gitevals", "show", rev, check=False)


def test_run_rev_runs_keeps_and_notes_the_commit(
        committed: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    said: list[str] = []
    result = api.run_rev(api.RunRequest(jobs=3, target_env=("MODEL=base-7b",),
                                        public_env=("MODEL",)),
                         require_repo(committed.path), say=said.append)
    run = result.run
    assert run is not None and result.path is not None
    assert run["commit"] == committed.git("rev-parse", "HEAD").strip()
    assert run["options"]["jobs"] == 3 and run["target_env"] == {"MODEL": {"value": "base-7b"}}
    assert result.path == committed.path / "evals" / "results" / f"{run['run_id']}.json"
    assert result.path.read_text() == result.text  # the file is the artifact as returned
    assert result.noted and run["run_id"] in _note_of(committed)
    # the case lint refused is reported, not dropped: the run is not ok
    assert [r.case for r in result.refused] == ["broken"] and result.refused[0].findings
    assert result.blocked and not result.ok and not result.interrupted
    assert "gitevals: case 'broken' does not lint and was not run" in said
    assert capsys.readouterr() == ("", "")  # said, never printed


def test_run_rev_refuses_a_dirty_tree_unless_allowed_and_records_it(committed: Repo) -> None:
    from gitevals.errors import UsageError

    committed.write({"harness.py": HARNESS + "# edited\n"})
    request = api.RunRequest(cases=("evals/cases/capital.yaml",), note=False)
    with pytest.raises(UsageError, match=r"uncommitted changes to harness\.py: commit them"):
        api.run_rev(request, require_repo(committed.path))
    assert not (committed.path / "evals" / "results").exists()  # refused before any trial
    allowed = dataclasses.replace(request, allow_dirty=True)
    result = api.run_rev(allowed, require_repo(committed.path))
    assert result.run is not None and result.run["dirty"] and result.run["dirty_diff"]
    assert result.ok and not result.blocked  # only capital was asked for
    assert not result.noted and _note_of(committed) == ""  # note=False


def test_run_rev_keeps_the_run_in_a_temp_file_when_results_cannot_be_written(
        committed: Repo) -> None:
    (committed.path / "evals" / "results").write_text("in the way\n")  # untracked file
    said: list[str] = []
    result = api.run_rev(api.RunRequest(cases=("capital",)), require_repo(committed.path),
                         say=said.append)
    assert result.run is not None and result.path is not None
    try:
        assert committed.path not in result.path.parents
        assert result.path.read_text() == result.text
        assert said == [f"gitevals: warning: cannot write evals/results/ (Not a directory); "
                        f"the run is in {result.path} instead"]
        assert result.noted  # the note does not depend on the file
    finally:
        result.path.unlink()


def test_run_rev_of_refused_cases_alone_writes_nothing(committed: Repo) -> None:
    result = api.run_rev(api.RunRequest(cases=("broken",)), require_repo(committed.path))
    assert result.run is None and result.path is None and result.blocked
    assert [r.case for r in result.refused] == ["broken"]
    assert not (committed.path / "evals" / "results").exists() and _note_of(committed) == ""


def test_run_rev_of_a_draft_keeps_it_apart_from_the_commit(committed: Repo,
                                                           tmp_path: Path) -> None:
    draft = tmp_path / "capital.yaml"
    draft.write_text(CAPITAL.replace("trials: 2", "trials: 1"))
    result = api.run_rev(api.RunRequest(draft=str(draft)), require_repo(committed.path))
    assert result.run is not None and result.path is not None and result.draft is not None
    assert result.path.parent == committed.path / "evals" / "results" / "drafts"
    assert not result.noted and _note_of(committed) == ""  # never the commit's note
    assert result.run["options"]["cases"] == ["capital"] and result.ok
