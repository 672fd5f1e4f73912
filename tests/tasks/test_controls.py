"""A task's validity controls (#23 item 13), through the real CLI, a real repo, bubblewrap.

Each task's verifier rewards 1 when ``/app/answer.txt`` holds 42. The good task's
``solution/solve.sh`` writes 42; the broken ones have a verifier that always passes
(the do-nothing control fails) or a solution that writes the wrong answer (the oracle
control fails).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed (Debian: bubblewrap)")

HARNESS = (Path(__file__).parents[1] / "data" / "task_harness.py").read_text()
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
CHECKS = ('#!/bin/bash\nif [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then\n'
          '  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n')
ALWAYS = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
SOLVES = "#!/bin/bash\ncd /solution && cat answer > /app/answer.txt\n"
WRONG = "#!/bin/bash\necho 41 > /app/answer.txt\n"


def _task(name: str, test_sh: str = CHECKS, solve: str | None = SOLVES) -> dict[str, str]:
    base = f"evals/tasks/{name}"
    files = {f"{base}/task.toml": 'version = "1.0"\n',
             f"{base}/instruction.md": "Write 42 into answer.txt.\n",
             f"{base}/tests/test.sh": test_sh, f"{base}/environment/plan.txt": "42\n"}
    if solve is not None:  # solve.sh reads a file of its own from /solution
        files |= {f"{base}/solution/solve.sh": solve, f"{base}/solution/answer": "42\n"}
    return files


def _repo(repo: Repo, *tasks: dict[str, str]) -> None:
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                                     "evals/.gitignore": "results/\n"}
    for t in tasks:
        files.update(t)
    repo.commit(files)


def _artifact(repo: Repo) -> dict[str, Any]:
    paths = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    return dict(load_artifact(paths[-1]))


def _entry(artifact: dict[str, Any], name: str) -> dict[str, Any]:
    (entry,) = [c for c in artifact["cases"] if c["name"] == name]
    return dict(entry)


def test_a_good_task_holds_both_controls(repo: Repo) -> None:
    _repo(repo, _task("good"))
    res = run_cli("task", "check", "good", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.splitlines() == [
        "do-nothing control: holds: reward 0 < pass_threshold 1 on the untouched workspace",
        "oracle control: holds: reward 1 >= pass_threshold 1 after solution/solve.sh "
        "(solve.sh exited 0)",
        "task good: valid"]
    doc = json.loads(run_cli("task", "check", "good", "--json", "--rev", "HEAD",
                             cwd=repo.path).out)
    assert doc["valid"] is True and doc["task"] == "good"
    assert doc["do_nothing"]["reward"] == 0.0 and doc["oracle"]["reward"] == 1.0
    assert doc["oracle"]["solve_exit"] == 0
    # the solution ran in the sandbox: nothing of it is left in the working tree
    assert not (repo.path / "evals/tasks/good/environment/answer.txt").exists()


def test_a_verifier_that_always_passes_is_broken_in_a_checked_run(repo: Repo) -> None:
    _repo(repo, _task("lenient", test_sh=ALWAYS), _task("good"))
    res = run_cli("task", "check", "lenient", cwd=repo.path)
    assert res.code == 1
    assert ("do-nothing control: FAILED: the verifier passes the untouched workspace "
            "(reward 1 >= pass_threshold 1): an agent that does nothing passes") in res.out
    assert res.out.splitlines()[-1].startswith("task lenient: broken")
    # unchecked, the lenient task passes: its verdict says nothing
    plain = run_cli("run", cwd=repo.path)
    assert plain.code == 0, plain.err
    assert _entry(_artifact(repo), "lenient")["scenarios"][0]["verdict"]["verdict"] == "pass"
    checked = run_cli("run", "--task-controls", "--trials", "2", cwd=repo.path)
    assert checked.code == 1
    artifact = _artifact(repo)
    entry = _entry(artifact, "lenient")
    scenario = entry["scenarios"][0]
    assert scenario["verdict"]["verdict"] == "broken"
    assert scenario["verdict"]["errors"] == {"task_broken": 2}
    for trial in scenario["results"]:  # the target was never started for it
        assert trial["transcript"]["turns"] == [] and trial["passed"] is False
        assert trial["error"]["kind"] == "task_broken"
        assert "do-nothing control failed" in trial["error"]["message"]
    controls = entry["task"]["controls"]
    assert controls["valid"] is False and controls["do_nothing"]["holds"] is False
    assert controls["oracle"]["holds"] is True
    good = _entry(artifact, "good")
    assert good["task"]["controls"]["valid"] is True
    assert good["scenarios"][0]["verdict"]["verdict"] == "pass"
    # re-scoring the stored run keeps it broken
    path = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)[-1]
    scored = run_cli("score", str(path), "--format", "json", cwd=repo.path)
    assert '"broken"' in scored.out


def test_a_solution_the_verifier_fails_is_broken(repo: Repo) -> None:
    _repo(repo, _task("unsolvable", solve=WRONG))
    res = run_cli("task", "check", "unsolvable", "--json", cwd=repo.path)
    assert res.code == 1
    doc = json.loads(res.out)
    assert doc["valid"] is False and doc["do_nothing"]["holds"] is True
    assert doc["oracle"]["holds"] is False and doc["oracle"]["reward"] == 0.0
    assert "the reference solution does not pass" in doc["oracle"]["why"]


def test_without_a_solution_lint_warns_and_only_do_nothing_runs(repo: Repo) -> None:
    _repo(repo, _task("nosol", solve=None))
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 0
    assert "evals/tasks/nosol/solution/solve.sh:1:1: GE913" in lint.out + lint.err
    res = run_cli("task", "check", "nosol", cwd=repo.path)
    assert res.code == 0
    assert "oracle control: not run: the task has no solution/solve.sh (lint GE913)" in res.out


def test_check_reads_the_revision_and_needs_a_sandbox(repo: Repo) -> None:
    _repo(repo, _task("t"))
    # the working tree breaks the verifier; the commit does not
    (repo.path / "evals/tasks/t/tests/test.sh").write_text(ALWAYS)
    assert run_cli("task", "check", "t", cwd=repo.path).code == 1
    assert run_cli("task", "check", "t", "--rev", "HEAD", cwd=repo.path).code == 0
    none = run_cli("task", "check", "t", cwd=repo.path, env={"GITEVALS_BWRAP": ""})
    assert none.code == 2 and len(none.err.strip().splitlines()) == 1
    assert "the controls of `task check` run in bubblewrap" in none.err
    assert "--no-sandbox" not in none.err
    refused = run_cli("run", "--task-controls", "--no-sandbox", cwd=repo.path)
    assert refused.code == 2 and "drop --no-sandbox" in refused.err


def test_a_control_without_a_reward_fails_and_says_why() -> None:
    from gitevals.tasks.controls import Controls, do_nothing, oracle
    from gitevals.tasks.sandbox import Outcome

    none = do_nothing({}, "the verifier wrote no /logs/verifier/reward.txt", 1.0)
    assert not none.holds and "gives no reward on the untouched workspace" in none.why
    late = oracle({}, "the verifier passed its timeout of 5 s", 1.0,
                  Outcome(None, "", True, 5000))
    assert not late.holds and "solve.sh passed its timeout" in late.why
    unset = oracle({}, "cannot set up the control: x", 1.0, Outcome(None, "", False, 0))
    assert "solve.sh did not run" in unset.why
    partial = oracle({"a": 1.0, "b": 0.5}, None, 0.8, Outcome(0, "", False, 1))
    assert not partial.holds and partial.reward == 0.5  # every named reward must reach it
    both = Controls(do_nothing({"reward": 0.0}, None, 1.0), partial)
    assert not both.valid and both.reason().startswith("oracle control failed: ")
