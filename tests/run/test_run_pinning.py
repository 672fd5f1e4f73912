"""Runs are pinned to commits: cases, graders and harness come from the commit, not the disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gitevals.git.repo import require_repo
from tests.conftest import Repo, run_cli
from tests.support.runs import HARNESS, TONE, only_artifact, scenarios
from tests.support.runs import SETTINGS_NO_SITE as SETTINGS  # the harness with -S

GRADER = "def strict(t, case, run):\n    return run['final_answer'] == 'Paris'\n"
CASE = """\
defaults: {trials: 1, timeout: 5s}
scenarios:
  - id: ok-capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - grader: {name: quality.strict}
"""


def _setup(repo: Repo) -> str:
    return repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                        "evals/cases/capital.yaml": CASE, "evals/cases/tone.yaml": TONE,
                        "evals/graders/quality.py": GRADER})


def test_an_edited_case_in_the_working_tree_does_not_change_what_runs(repo: Repo) -> None:
    commit = _setup(repo)
    repo.write({"evals/cases/capital.yaml": CASE.replace("contains: Paris", "contains: Rome")})
    res = run_cli("run", "capital", "--rev", "HEAD", "--allow-dirty", "--format", "json",
                  cwd=repo.path)
    assert res.code == 0, res.err
    art = json.loads(res.out)
    s = scenarios(art)["capital/ok-capital"]
    assert s["expect"][0] == {"final_answer_contains": "Paris"}
    assert s["verdict"]["verdict"] == "pass"
    assert art["commit"] == commit and art["dirty"] is True
    assert art["dirty_diff"] == require_repo(repo.path).diff_digest()
    repo.write({"evals/cases/capital.yaml": CASE.replace("contains: Paris", "contains: Oslo")})
    again = run_cli("run", "capital", "--allow-dirty", "--format", "json", cwd=repo.path)
    assert json.loads(again.out)["dirty_diff"] not in (None, art["dirty_diff"])


def test_a_dirty_tree_is_refused_with_one_line_naming_the_files(repo: Repo) -> None:
    _setup(repo)
    repo.write({"evals/cases/capital.yaml": CASE + "\n", "harness.py": HARNESS + "\n"})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert res.err.splitlines() == [
        "gitevals: error: uncommitted changes to evals/cases/capital.yaml, harness.py: commit "
        "them, or pass --allow-dirty to run the commit anyway (recorded as dirty)"]
    assert not (repo.path / "evals" / "results").exists()


def test_untracked_files_and_results_do_not_make_a_tree_dirty(repo: Repo) -> None:
    _setup(repo)
    repo.write({"scratch.txt": "notes"})
    assert run_cli("run", "capital", cwd=repo.path).code == 0
    repo.git("add", "evals/results")
    repo.git("commit", "-qm", "keep results")
    assert run_cli("run", "capital", cwd=repo.path).code == 0  # a new result file is untracked
    art = json.loads(run_cli("run", "capital", "--format", "json", cwd=repo.path).out)
    assert art["dirty"] is False and art["dirty_diff"] is None


def test_blob_shas_are_those_of_the_commit(repo: Repo) -> None:
    _setup(repo)
    assert run_cli("run", cwd=repo.path).code == 0
    art = only_artifact(repo)
    assert set(art["files"]) == {"evals/cases/capital.yaml", "evals/cases/tone.yaml",
                                 "evals/graders/quality.py", "pyproject.toml"}
    for path, sha in art["files"].items():
        assert sha == repo.git("rev-parse", f"HEAD:{path}"), path
    for case in art["cases"]:
        assert case["blob"] == repo.git("rev-parse", f"HEAD:{case['path']}")
    assert art["tree"] == repo.git("rev-parse", "HEAD^{tree}")


def test_an_older_revision_runs_its_own_harness_and_graders(repo: Repo) -> None:
    old = _setup(repo)
    repo.commit({"harness.py": HARNESS.replace('"Paris" if', '"Lyon" if'),
                 "evals/graders/quality.py": GRADER.replace("'Paris'", "'Lyon'")})
    new = run_cli("run", "capital", "--format", "json", cwd=repo.path)
    assert new.code == 1  # the new harness says Lyon: the contains rule fails, the grader passes
    new_s = scenarios(json.loads(new.out))["capital/ok-capital"]["results"][0]
    assert [a["passed"] for a in new_s["assertions"]] == [False, True]
    res = run_cli("run", "capital", "--rev", "HEAD~1", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    art = json.loads(res.out)
    assert art["commit"] == old and art["rev"] == "HEAD~1"
    result = scenarios(art)["capital/ok-capital"]["results"][0]
    assert result["transcript"]["final_answer"] == "Paris"
    assert result["graders"][0]["raw"] is True


def test_the_run_does_not_touch_the_working_tree_beyond_results(repo: Repo) -> None:
    _setup(repo)
    before = {p: hashlib.sha1(p.read_bytes()).hexdigest()
              for p in repo.path.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert run_cli("run", cwd=repo.path).code == 0
    after = {p: hashlib.sha1(p.read_bytes()).hexdigest()
             for p in repo.path.rglob("*") if p.is_file() and ".git" not in p.parts
             and "results" not in p.parts}
    assert after == before
    assert not list(repo.path.rglob("__pycache__"))  # graders ran in a copy, not here


def test_an_unknown_revision_is_one_line(repo: Repo) -> None:
    _setup(repo)
    res = run_cli("run", "--rev", "no-such-branch", cwd=repo.path)
    assert res.code == 2 and len(res.err.splitlines()) == 1
    assert "unknown revision 'no-such-branch'" in res.err


def test_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    res = run_cli("run", cwd=tmp_path)
    assert res.code == 2 and "not inside a git work tree" in res.err
