"""``gitevals run --draft PATH.yaml``: a case from outside the tree, run against the commit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli
from tests.support import runs
from tests.support.runs import only_artifact, scenario_case


def setup(repo: Repo, cases: dict[str, str], graders: dict[str, str] | None = None) -> str:
    """``runs.setup`` with the example harness as a python target (``runs.AGENT``, the
    same answers): drafts are about which cases run and where the run is kept, not about
    command targets; one Python a run instead of one a conversation."""
    return runs.setup(repo, cases, graders, runs.AGENT_SETTINGS)


GRADER = "def said_paris(t, case, run):\n    return 'Paris' in run['final_answer']\n"
DRAFT = ("defaults: {trials: 3, timeout: 5s}\nscenarios:\n  - id: ok-draft\n"
         "    user: What is the capital of France?\n"
         "    expect: [{grader: {name: q.said_paris}}, {final_answer_contains: Paris}]\n")


def _drafts(repo: Repo) -> list[Path]:
    return sorted((repo.path / "evals" / "results" / "drafts").glob("*.json"))


def test_a_draft_runs_against_the_commit_and_is_recorded_as_a_draft(repo: Repo,
                                                                    tmp_path: Path) -> None:
    commit = setup(repo, {"tone": scenario_case("ok")}, {"q": GRADER})
    draft = tmp_path / "elsewhere" / "capital.yaml"
    draft.parent.mkdir()
    draft.write_text(DRAFT)
    res = run_cli("run", "--draft", str(draft), "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    artifact = json.loads(res.out)
    assert artifact["commit"] == commit
    (case,) = artifact["cases"]
    assert case["name"] == "capital"
    assert case["draft"] == {"path": str(draft),
                             "sha256": hashlib.sha256(DRAFT.encode()).hexdigest()}
    (scenario,) = case["scenarios"]
    assert scenario["verdict"]["verdict"] == "pass" and len(scenario["results"]) == 3
    assert scenario["results"][0]["graders"][0]["raw"] is True  # the commit's grader
    (path,) = _drafts(repo)
    assert load_artifact(path) == artifact  # valid against the schema, and kept
    assert repo.git("notes", "--ref", "gitevals", "list") == ""


def test_a_draft_run_is_never_the_commits_run(repo: Repo, tmp_path: Path) -> None:
    setup(repo, {"tone": scenario_case("ok", trials=1)}, {"q": GRADER})
    assert run_cli("run", "--no-note", cwd=repo.path).code == 0
    full = only_artifact(repo)
    draft = tmp_path / "capital.yaml"
    draft.write_text(DRAFT)
    assert run_cli("run", "--draft", str(draft), cwd=repo.path).code == 0
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["run_id"] == full["run_id"]


def test_with_only_a_draft_run_show_finds_no_run(repo: Repo, tmp_path: Path) -> None:
    setup(repo, {"tone": scenario_case("ok", trials=1)}, {"q": GRADER})
    draft = tmp_path / "capital.yaml"
    draft.write_text(DRAFT)
    res = run_cli("run", "--draft", str(draft), cwd=repo.path)
    assert res.code == 0, res.err
    assert "(draft " in res.out and "not the commit's run" in res.out
    assert "note refs/notes/gitevals" not in res.out
    assert run_cli("show", cwd=repo.path).code == 2


def test_a_draft_is_linted_first_and_findings_name_its_path(repo: Repo,
                                                            tmp_path: Path) -> None:
    setup(repo, {"tone": scenario_case("ok")}, {"q": GRADER})
    draft = tmp_path / "bad.yaml"
    draft.write_text(DRAFT.replace("q.said_paris", "q.nothere"))
    res = run_cli("run", "--draft", str(draft), cwd=repo.path)
    assert res.code == 1
    assert f"{draft}:" in res.err and "GE5" in res.err
    assert "evals/cases/bad.yaml" not in res.err
    assert f"draft {draft} does not lint and was not run" in res.err
    assert res.err.splitlines()[-1] == (
        "gitevals: nothing was run: the draft has lint errors (above); fix the draft and "
        f"run it again (`gitevals run --draft {draft}`)")
    assert "lint --rev" not in res.err and "commit" not in res.err
    assert _drafts(repo) == []


def test_a_draft_replaces_a_committed_case_of_its_name(repo: Repo, tmp_path: Path) -> None:
    setup(repo, {"capital": scenario_case("committed")}, {"q": GRADER})
    draft = tmp_path / "capital.yaml"
    draft.write_text(DRAFT)
    res = run_cli("run", "--draft", str(draft), "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    ids = [s["id"] for s in json.loads(res.out)["cases"][0]["scenarios"]]
    assert ids == ["ok-draft"]


def test_an_edited_tracked_case_may_be_its_own_draft(repo: Repo) -> None:
    setup(repo, {"capital": scenario_case("committed")}, {"q": GRADER})
    (repo.path / "evals" / "cases" / "capital.yaml").write_text(DRAFT)
    res = run_cli("run", "--draft", "evals/cases/capital.yaml", cwd=repo.path)
    assert res.code == 0, res.err


def test_draft_usage_errors(repo: Repo, tmp_path: Path) -> None:
    setup(repo, {"tone": scenario_case("ok")})
    res = run_cli("run", "--draft", str(tmp_path / "missing.yaml"), cwd=repo.path)
    assert res.code == 2 and "cannot read it" in res.err
    res = run_cli("run", "--draft", str(tmp_path / "x.txt"), cwd=repo.path)
    assert res.code == 2 and "<name>.yaml" in res.err
    (tmp_path / "d.yaml").write_text(DRAFT)
    res = run_cli("run", "tone", "--draft", str(tmp_path / "d.yaml"), cwd=repo.path)
    assert res.code == 2 and "name no CASE" in res.err
