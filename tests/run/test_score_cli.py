"""``gitevals score``: re-scoring stored runs through the real CLI, nothing run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli
from tests.support.artifacts import artifact, grader_answer, result, scenario, transcript

CASE_V1 = """\
defaults: {trials: 2, timeout: 30s}
scenarios:
  - id: capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
  - id: judged
    user: Say something nice.
    expect:
      - grader: {name: quality.answers, pass_below: 0.7}
"""
CASE_V2 = """\
defaults: {trials: 2, timeout: 30s}
scenarios:
  - id: capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Lyon
  - id: judged
    user: Say something nice.
    expect:
      - grader: {name: quality.answers, pass_below: 0.4}
  - id: added-later
    user: Hello?
    expect:
      - no_error: true
"""
GRADER = '''\
def answers(t, case, run):
    return {"pass": True, "score": 0.95, "why": "regraded"}
'''


def pyproject(marker: Path) -> str:
    # The target would leave a marker (and fail) if anything started it.
    return f"""\
[tool.gitevals.target]
command = ["sh", "-c", "touch {marker}; exit 1"]
"""


@pytest.fixture
def two_commits(repo: Repo, tmp_path: Path) -> tuple[Repo, str, str, Path]:
    marker = tmp_path / "TARGET-STARTED"
    first = repo.commit({"pyproject.toml": pyproject(marker), "evals/cases/tone.yaml": CASE_V1,
                         "evals/graders/quality.py": GRADER}, "v1")
    second = repo.commit({"evals/cases/tone.yaml": CASE_V2}, "v2")
    return repo, first, second, marker


def stored_run(commit: str) -> dict[str, Any]:
    """What a run of v1 would have stored: Paris twice, grader score 0.5 (fails 0.7)."""
    capital = [{"final_answer_contains": "Paris"}]
    judged = [{"grader": {"name": "quality.answers", "pass_below": 0.7}}]
    half = [grader_answer({"pass": True, "score": 0.5})]
    return artifact({"tone": [
        scenario("capital", capital, [result(t, capital, transcript("Paris")) for t in (0, 1)]),
        scenario("judged", judged, [result(t, judged, transcript("Nice."), half)
                                    for t in (0, 1)]),
    ]}, commit=commit)


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, sort_keys=True, indent=1))
    return path


UNDERPOWERED = ("underpowered: {} of {} scenarios cannot show a 20-point drop beyond noise "
                "with their trials (`gitevals plan` says how many they need)")


def test_stored_rules_give_the_stored_verdicts(two_commits: Any) -> None:
    repo, first, _, marker = two_commits
    art = write(repo.path / "evals/results/run.json", stored_run(first))
    res = run_cli("score", str(art), cwd=repo.path)
    assert res.code == 1, res.err
    assert res.out == (
        f"run 20261129T220000Z-{first[:12]}-a1b2c3 of HEAD ({first[:12]})\n"
        "case  scenario  verdict  passes  duration  first failure\n"
        "tone  capital   pass     2/2     6 ms\n"
        "tone  judged    fail     0/2     6 ms      grader quality.answers: score 0.5 below "
        "pass_below 0.7\n"
        f"{UNDERPOWERED.format(1, 2)}\n"
        "1 pass, 0 flaky, 1 fail, 0 broken\n")
    assert not marker.exists()


def test_rules_of_a_later_commit_change_verdicts_without_running(two_commits: Any) -> None:
    repo, first, second, marker = two_commits
    art = write(repo.path / "evals/results/run.json", stored_run(first))
    before = sorted(p.name for p in (repo.path / "evals/results").iterdir())
    res = run_cli("score", str(art), "--rules", second[:10], cwd=repo.path)
    assert res.code == 1, res.err
    assert res.out == (
        f"run 20261129T220000Z-{first[:12]}-a1b2c3 of HEAD ({first[:12]}), scored with the "
        f"rules of {second[:10]} ({second[:12]})\n"
        "case  scenario     verdict  passes  duration  first failure\n"
        "tone  capital      fail     0/2     6 ms      final_answer_contains 'Lyon': not in "
        "the answer 'Paris'\n"
        "tone  judged       pass     2/2     6 ms\n"
        "tone  added-later  not run  0/0               only in the rules: not run\n"
        f"{UNDERPOWERED.format(1, 3)}\n"
        "1 pass, 0 flaky, 1 fail, 0 broken, 1 not run\n")
    assert not marker.exists(), "the target was started"
    assert sorted(p.name for p in (repo.path / "evals/results").iterdir()) == before
    assert repo.git("status", "--porcelain", "--untracked-files=no") == ""


def test_out_writes_the_rescored_artifact(two_commits: Any) -> None:
    repo, first, second, _ = two_commits
    art = write(repo.path / "evals/results/run.json", stored_run(first))
    out = repo.path / "rescored.json"
    res = run_cli("score", str(art), "--rules", "HEAD", "--out", str(out), "--format", "json",
                  cwd=repo.path)
    assert res.code == 1, res.err
    doc = load_artifact(out)
    assert doc["scored_with"] == {"rules_rev": "HEAD", "rules_commit": second,
                                  "regraded": False, "tool_version": doc["tool_version"]}
    capital = doc["cases"][0]["scenarios"][0]
    assert capital["expect"] == [{"final_answer_contains": "Lyon"}]
    assert capital["rules"] == "applied"
    assert out.read_text().endswith("}\n")
    report = json.loads(res.out)
    assert report["summary"] == {"pass": 1, "flaky": 0, "fail": 1, "broken": 0, "not_run": 1}
    assert report["scored_with"]["rules_commit"] == second


def test_all_pass_exits_zero(repo: Repo) -> None:
    sha = repo.commit({"evals/cases/a.yaml": CASE_V1})
    expect = [{"no_error": True}]
    doc = artifact({"a": [scenario("s", expect, [result(0, expect, transcript())])]}, commit=sha)
    art = write(repo.path / "run.json", doc)
    res = run_cli("score", str(art), "--format", "markdown", cwd=repo.path)
    assert res.code == 0, res.err
    assert "| a | s | ✅ pass | 1/1 | 3 ms |  |" in res.out


def test_regrade_runs_the_graders_of_the_rules_revision(two_commits: Any) -> None:
    repo, first, _, marker = two_commits
    art = write(repo.path / "evals/results/run.json", stored_run(first))
    res = run_cli("score", str(art), "--regrade", "--format", "json", "--jobs", "1",
                  "--out", str(repo.path / "re.json"), cwd=repo.path)
    assert res.code == 0, res.err + res.out
    verdicts = {s["scenario"]: s["verdict"] for s in json.loads(res.out)["scenarios"]}
    assert verdicts == {"capital": "pass", "judged": "pass"}
    graders = load_artifact(repo.path / "re.json")["cases"][0]["scenarios"][1]["results"][0]
    assert graders["graders"][0]["raw"] == {"pass": True, "score": 0.95, "why": "regraded"}
    assert not marker.exists()


@pytest.mark.parametrize(("content", "message"), [
    ("{", "not a gitevals run artifact: not JSON"),
    ('{"format": "gitevals-run/9"}', "not a gitevals run artifact: format 'gitevals-run/9'"),
], ids=["not-json", "future-format"])
def test_bad_artifact_is_one_line_exit_2(repo: Repo, content: str, message: str) -> None:
    (repo.path / "bad.json").write_text(content)
    res = run_cli("score", "bad.json", cwd=repo.path)
    assert res.code == 2
    assert res.out == ""
    assert res.err.startswith(f"gitevals: error: bad.json: {message}")
    assert res.err.count("\n") == 1


def test_rules_that_do_not_lint_are_refused(two_commits: Any) -> None:
    repo, first, _, _ = two_commits
    third = repo.commit({"evals/cases/tone.yaml": "scenarios:\n  - id: x\n    user: [\n"})
    art = write(repo.path / "run.json", stored_run(first))
    res = run_cli("score", str(art), "--rules", third, cwd=repo.path)
    assert res.code == 2
    assert res.err.startswith("gitevals: error: evals/cases/tone.yaml:")
    assert f"(at {third[:12]}); fix it there or pick another --rules revision" in res.err
    assert res.err.count("\n") == 1


def test_unknown_rules_revision(two_commits: Any) -> None:
    repo, first, _, _ = two_commits
    art = write(repo.path / "run.json", stored_run(first))
    res = run_cli("score", str(art), "--rules", "no-such-branch", cwd=repo.path)
    assert res.code == 2
    assert "unknown revision 'no-such-branch'" in res.err


HARNESS = '''\
import json, sys
for line in sys.stdin:
    text = json.loads(line)["text"]
    answer = "Paris" if "France" in text else "no idea"
    calls = [{"name": "shell__run", "args": {"cmd": "ls", "cwd": "/"}, "result": {"out": "a"}}]
    print(json.dumps({"final_answer": answer, "tool_calls": calls, "hooks": [],
                      "error": None, "tokens": 3}), flush=True)
'''
REAL_CASE = """\
defaults: {trials: 2, timeout: 30s}
scenarios:
  - id: capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - tool_called: {name: shell__run, args: {cmd: ls}}
      - result_contains: {name: shell__run, substring: '"out": "a"'}
  - id: unknown
    user: What is the capital of Atlantis?
    expect:
      - final_answer_contains: Poseidonis
"""


def test_a_real_run_validates_and_rescores_to_the_same_verdicts(repo: Repo) -> None:
    import sys

    repo.commit({"pyproject.toml": f'[tool.gitevals.target]\ncommand = ["{sys.executable}", '
                                   '"harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/geo.yaml": REAL_CASE})
    ran = run_cli("run", "--no-note", "--jobs", "2", cwd=repo.path)
    assert ran.code == 1, ran.err
    [art] = (repo.path / "evals/results").glob("*.json")
    stored = load_artifact(art)  # what `gitevals run` writes matches the schema
    res = run_cli("score", str(art), cwd=repo.path)
    assert res.code == 1, res.err
    # the same table; only `run` ends with its duration and where the artifact went
    table = re.sub(r" in \d+\.\d s; artifact \S+\n$", "\n", ran.out)
    assert res.out == table
    # each scenario's duration is its trials' (measured, so read as a pattern here)
    assert [" ".join(re.sub(r"\b\d+(\.\d)? m?s\b", "T", line).split())
            for line in res.out.splitlines()[2:4]] == [
        "geo capital pass 2/2 T",
        "geo unknown fail 0/2 T final_answer_contains 'Poseidonis': not in the answer "
        "'no idea'"]
    assert run_cli("show", cwd=repo.path).out == table
    assert stored["cases"][0]["scenarios"][0]["results"][0]["transcript"]["turns"][0][
        "tokens"] == 3


def test_negative_jobs_is_a_usage_error(repo: Repo) -> None:
    res = run_cli("score", "x.json", "--regrade", "--jobs", "-1", cwd=repo.path)
    assert (res.code, res.err) == (2, "gitevals score: error: argument --jobs: '-1' must be "
                                      "0 or more; see `gitevals score --help`\n")
