"""`gitevals import harbor JOB_DIR`: a Harbor job's trials as a run pinned to a commit,
read by show and diff as any run (a job directory written here in Harbor's layout)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.harbor import harbor_job, harbor_trial
from tests.support.runs import only_artifact

SETTINGS = '[tool.gitevals]\nroot = "evals"\n'


def _scenarios(art: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c["scenarios"][0] for c in art["cases"]}


def test_a_harbor_job_becomes_a_run_of_its_tasks(repo: Repo, tmp_path: Path) -> None:
    commit = repo.commit({"pyproject.toml": SETTINGS})
    job = harbor_job(tmp_path)
    for n in range(3):
        harbor_trial(job, "hello-world", n, {"reward": 1.0})
    harbor_trial(job, "multi", 0, {"correct": 1.0, "style": 0.5})  # no "reward": smallest decides
    harbor_trial(job, "multi", 1, {"correct": 1.0, "style": 1.0})
    harbor_trial(job, "text-reward", 0, reward_txt="0.25\n")
    harbor_trial(job, "broken", 0, exception=True)
    (job / "unfinished__0001").mkdir()  # no result.json yet
    res = run_cli("import", "harbor", str(job), cwd=repo.path)
    assert res.code == 0, res.err
    assert "imported 7 Harbor trials of 4 tasks" in res.out
    assert res.err.strip() == ("gitevals: 1 trial directory without result.json "
                               "(unfinished) left out")
    art = only_artifact(repo)  # validated against the result schema
    assert art["commit"] == commit and art["imported"] == {
        "from": "harbor", "job": job.name, "trials": 7}
    by = _scenarios(art)
    assert {k: v["verdict"]["verdict"] for k, v in by.items()} == {
        "hello-world": "pass", "multi": "flaky", "text-reward": "fail", "broken": "broken"}
    assert [r["task"]["final_reward"] for r in by["multi"]["results"]] == [0.5, 1.0]
    assert by["text-reward"]["results"][0]["task"]["iterations"][0]["rewards"] == {
        "reward": 0.25}
    assert by["broken"]["results"][0]["error"]["kind"] == "harbor_exception"
    assert art["cases"][0]["task"]["pass_threshold"] == 1.0
    # the run is the commit's: show reads it from the note
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert shown.code == 1, shown.err  # a failing task makes the run fail, as `run` says
    assert json.loads(shown.out)["summary"]["pass"] == 1


def test_the_threshold_decides_and_diff_compares_two_imports(repo: Repo,
                                                             tmp_path: Path) -> None:
    base = repo.commit({"pyproject.toml": SETTINGS})
    old = harbor_job(tmp_path, "old")
    for n in range(10):
        harbor_trial(old, "solve", n, {"reward": 1.0})
    assert run_cli("import", "harbor", str(old), cwd=repo.path).code == 0
    head = repo.commit({"README": "change"})
    new = harbor_job(tmp_path, "new")
    for n in range(10):
        harbor_trial(new, "solve", n, {"reward": 0.0 if n else 0.6})
    res = run_cli("import", "harbor", str(new), "--pass-threshold", "0.5", cwd=repo.path)
    assert res.code == 0, res.err
    diff = run_cli("diff", base, head, cwd=repo.path)
    assert diff.code == 1, diff.out + diff.err  # 10/10 -> 1/10: a regression
    assert "solve" in diff.out and "regress" in diff.out.lower()


@pytest.mark.parametrize(("write", "says"), [
    (lambda d: (d / "result.json").write_text("{not json"), "not JSON"),
    (lambda d: (d / "result.json").write_text("[]"), "not a JSON object"),
    (lambda d: (d / "result.json").write_text('{"task_name": "../x"}'), "task_name"),
    (lambda d: (d / "result.json").write_text(
        '{"task_name": "t", "verifier_result": {"rewards": {"reward": 7}}}'),
     "not a number from 0 to 1"),
    (lambda d: (d / "result.json").write_text(
        '{"task_name": "t", "verifier_result": {"rewards": {"reward": "1"}}}'),
     "not a number from 0 to 1"),
    (lambda d: os.symlink("/etc/passwd", d / "result.json"), "not a regular file"),
    (lambda d: os.mkfifo(d / "result.json"), "not a regular file"),
], ids=["not-json", "not-object", "bad-name", "reward-range", "reward-string", "symlink",
        "fifo"])
def test_what_does_not_parse_is_refused_in_one_line(repo: Repo, tmp_path: Path,
                                                    write: Any, says: str) -> None:
    repo.commit({"pyproject.toml": SETTINGS})
    job = harbor_job(tmp_path)
    d = job / "t__1"
    d.mkdir()
    write(d)
    res = run_cli("import", "harbor", str(job), cwd=repo.path, timeout=30)
    assert res.code == 2, res.err
    (line,) = res.err.strip().splitlines()
    assert line.startswith(f"gitevals: error: {d / 'result.json'}: not a Harbor trial result")
    assert says in line
    assert not (repo.path / "evals" / "results").exists()


def test_an_empty_or_missing_job_is_refused(repo: Repo, tmp_path: Path) -> None:
    repo.commit({"pyproject.toml": SETTINGS})
    for job in (harbor_job(tmp_path), tmp_path / "nowhere"):
        res = run_cli("import", "harbor", str(job), cwd=repo.path)
        assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res.err
    bad = run_cli("import", "harbor", str(tmp_path), "--pass-threshold", "2", cwd=repo.path)
    assert bad.code == 2 and "--pass-threshold" in bad.err
