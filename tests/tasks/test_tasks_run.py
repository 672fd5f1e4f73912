"""Running task directories end to end: the real CLI, a real repo, bubblewrap, a small target.

The target (``data/task_harness.py``) writes line *i* of the workspace's ``plan.txt`` to
``answer.txt`` on iteration *i*; the verifier copies ``answer.txt`` into its reward file.
So each test picks the rewards a trial sees by the plan it commits.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitevals.run.artifact import load as load_artifact
from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support.paths import SCHEMAS
from tests.support.tasks import SETTINGS, commit_task

pytestmark = pytest.mark.needs_bwrap

COPY_JSON = "cat /app/answer.txt > /logs/verifier/reward.json\n"


def _artifact(repo: Repo) -> dict[str, Any]:
    paths = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    return dict(load_artifact(paths[-1]))


def _entry(artifact: dict[str, Any], name: str = "fix") -> dict[str, Any]:
    (entry,) = [c for c in artifact["cases"] if c["name"] == name]
    return dict(entry)


def _trial(artifact: dict[str, Any], k: int = 0) -> dict[str, Any]:
    return dict(_entry(artifact)["scenarios"][0]["results"][k])


def test_reward_one_is_satisfied_and_everything_is_recorded(repo: Repo) -> None:
    commit = commit_task(repo, "1.0\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    artifact = _artifact(repo)
    assert artifact["commit"] == commit
    entry = _entry(artifact)
    assert entry["task"] == {
        "instruction_file": "instruction.md", "max_iterations": 3, "pass_threshold": 1.0,
        "verifier": ["bash", "/tests/test.sh"], "verifier_default": True,
        "reward_format": "reward_text", "workdir": "/app", "allow_internet": False,
        "sandbox": "bwrap", "gaps": ["image_build"]}
    scenario = entry["scenarios"][0]
    assert scenario["id"] == "task" and scenario["verdict"]["verdict"] == "pass"
    trial = _trial(artifact)
    assert trial["passed"] is True and trial["task"]["state"] == "satisfied"
    assert trial["task"]["final_reward"] == 1.0 and trial["task"]["sandbox"] == "bwrap"
    (it,) = trial["task"]["iterations"]
    assert it["rewards"] == {"reward": 1.0} and it["attempts"] == 1
    assert it["verifier_exit"] == 0 and "checking /app" in it["verifier_tail"]
    # the target's user turn: the instruction plus task, workspace and iteration
    echo = trial["transcript"]["turns"][0]["echo"]
    assert echo["text"] == "Write the answer.\n" and echo["task"] == "fix"
    assert echo["iteration"] == 0 and os.path.isabs(echo["workspace"])
    schema = json.loads((SCHEMAS / "target-input.schema.json")
                        .read_text())
    jsonschema.Draft202012Validator(schema).validate(echo)
    # every key but those of a target serving many conversations (docs/run.md) and of a
    # multiple-choice drift row (docs/goldens.md)
    assert set(echo) == set(schema["properties"]) - {"conversation", "end", "choices",
                                                     "max_tokens"}
    # the workspace held environment/ without its Dockerfile
    assert trial["transcript"]["turns"][0]["workspace_files"] == ["plan.txt"]
    # every file of the task is pinned by blob
    blob = repo.git("rev-parse", f"{commit}:evals/tasks/fix/tests/test.sh")
    assert artifact["files"]["evals/tasks/fix/tests/test.sh"] == blob
    assert entry["blob"] == repo.git("rev-parse", f"{commit}:evals/tasks/fix/task.toml")
    # the unrealized image is said once
    assert res.err.count("not realized: image_build") == 1


def test_a_low_reward_gets_a_revision_turn_then_is_satisfied(repo: Repo) -> None:
    commit_task(repo, "0.4\n1.0\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    trial = _trial(_artifact(repo))
    first, second = trial["task"]["iterations"]
    assert (first["reward"], first["passed"]) == (0.4, False)
    assert (second["reward"], second["passed"]) == (1.0, True)
    assert trial["task"]["state"] == "satisfied" and trial["task"]["final_reward"] == 1.0
    message = trial["transcript"]["turns"][1]["echo"]["text"]
    assert message == second["message"]
    assert message.startswith("The verifier scored your work 0.4; this task needs 1 or more.")
    assert "attempt 2 of 3" in message and "checking /app" in message
    shown = run_cli("show", "--trial", "fix/task/0", cwd=repo.path)
    assert shown.code == 0
    assert "[0] needs_revision: reward 0.4" in shown.out
    assert "[1] satisfied: reward 1.0" in shown.out
    assert "state satisfied, final reward 1.0" in shown.out


def test_never_enough_reaches_max_iterations_and_fails(repo: Repo) -> None:
    commit_task(repo, "0.2\n0.5\n", toml="max_iterations = 2\npass_threshold = 0.9\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1
    artifact = _artifact(repo)
    trial = _trial(artifact)
    assert trial["task"]["state"] == "max_iterations_reached"
    assert [i["reward"] for i in trial["task"]["iterations"]] == [0.2, 0.5]
    assert trial["task"]["final_reward"] == 0.5 and trial["error"] is None
    assert _entry(artifact)["scenarios"][0]["verdict"]["verdict"] == "fail"
    assert "max_iterations_reached: reward 0.5 < pass_threshold 0.9" in res.out


@pytest.mark.parametrize(("plan", "why"), [
    ("abc", "holds 'abc', not a decimal number"),
    ("nan", "holds 'nan', not a decimal number"),
    ("7", "holds 7, not a finite number from 0 to 1"),
    ("-", "the verifier wrote no /logs/verifier/reward.txt"),
], ids=["abc", "nan", "seven", "missing"])
def test_an_unreadable_reward_is_retried_once_then_an_error(repo: Repo, plan: str,
                                                            why: str) -> None:
    commit_task(repo, plan + "\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1
    artifact = _artifact(repo)
    trial = _trial(artifact)
    (it,) = trial["task"]["iterations"]  # an error: no revision turn
    assert it["attempts"] == 2 and it["reward"] is None and it["rewards"] == {}
    assert trial["error"]["kind"] == "reward_unreadable"
    assert why in trial["error"]["message"] and "not a verdict" in trial["error"]["message"]
    assert trial["task"]["state"] == "error" and trial["passed"] is False
    assert _entry(artifact)["scenarios"][0]["verdict"]["verdict"] == "broken"


@pytest.mark.parametrize(("plan", "said"), [
    ("!\n", "no iteration ran: target_crash: "),
    ("0.4\n!\n", "reward 0.4 after 1 iteration, then target_crash: "),
], ids=["first", "second"])
def test_a_target_crash_is_what_ended_the_trial_not_the_verifier(repo: Repo, plan: str,
                                                                 said: str) -> None:
    commit_task(repo, plan, toml="max_iterations = 3\npass_threshold = 0.9\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    trial = _trial(_artifact(repo))
    assert trial["error"]["kind"] == "target_crash" and trial["task"]["state"] == "error"
    assert len(trial["task"]["iterations"]) == plan.count("\n") - 1
    shown = run_cli("show", "--trial", "fix/task", cwd=repo.path)
    assert shown.code == 1, shown.err  # the trial failed
    assert shown.out.startswith("fix/task/0: FAILED (trial 0, the only one run)\n")
    (line,) = [x for x in shown.out.splitlines() if x.startswith("  FAIL  ")]
    assert line.startswith("  FAIL  " + said), shown.out
    assert "reward could not be read" not in shown.out + res.out
    assert trial["error"]["message"].split()[0] in line


@pytest.mark.parametrize(("answer", "passed", "reward"), [
    ('{"reward": 1.0, "style": 0.1}', True, 1.0),
    ('{"tests": 1.0, "style": 0.5}', False, 0.5),
    ('{"tests": 1, "style": 1.0}', True, 1.0),
], ids=["reward-key-decides", "every-named-reward-must-pass", "all-named-pass"])
def test_reward_json_records_every_named_reward(repo: Repo, answer: str, passed: bool,
                                                reward: float) -> None:
    commit_task(repo, answer + "\n", toml='max_iterations = 1\n[verifier]\n'
          'command = ["bash", "/tests/test.sh"]\nreward_format = "reward_json"\n',
          test_sh=COPY_JSON)
    res = run_cli("run", cwd=repo.path)
    assert res.code == (0 if passed else 1), res.err
    (it,) = _trial(_artifact(repo))["task"]["iterations"]
    assert it["rewards"] == json.loads(answer) and it["reward"] == reward
    assert it["passed"] is passed


def _alive(token: str) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    out.append(int(pid))
        except (OSError, ValueError):
            continue
    return out


def test_a_hostile_verifier_cannot_reach_the_network_the_host_or_outlive_its_call(
        repo: Repo, tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    outside = tmp_path / "escaped"
    token = f"gitevals-escapee-{os.getpid()}-{time.monotonic_ns()}"
    hostile = (
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
        " && echo NET-OK\n"
        f"touch {outside} && echo HOST-WRITE-OK\n"
        f"touch {repo.path}/evals/escaped && echo REPO-WRITE-OK\n"
        "touch /usr/escaped /etc/escaped /tests/escaped 2>/dev/null && echo SYS-WRITE-OK\n"
        f"setsid bash -c 'exec -a {token} sleep 300' </dev/null >/dev/null 2>&1 &\n"
        f"(exec -a {token} sleep 300) </dev/null >/dev/null 2>&1 &\n"
        "touch /app/mine && echo 1 > /logs/verifier/reward.txt\n")
    commit_task(repo, "-\n", test_sh=hostile)
    try:
        res = run_cli("run", cwd=repo.path)
        assert res.code == 0, res.err
        it = _trial(_artifact(repo))["task"]["iterations"][0]
        tail = it["verifier_tail"]
        assert "OK" not in tail, tail
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected from the sandbox
    finally:
        listener.close()
    assert not outside.exists()
    assert not (repo.path / "evals" / "escaped").exists()
    assert not any(Path(p, "escaped").exists() for p in ("/usr", "/etc"))
    assert _alive(token) == []


def test_no_sandbox_runs_the_verifier_directly_and_says_so(repo: Repo) -> None:
    env_form = 'cat answer.txt > "$GITEVALS_LOGS/reward.txt"\n'
    commit_task(repo, "1.0\n", test_sh=env_form)
    res = run_cli("run", "--no-sandbox", cwd=repo.path)
    assert res.code == 0, res.err
    artifact = _artifact(repo)
    assert _entry(artifact)["task"]["sandbox"] == "none"
    assert _trial(artifact)["task"]["sandbox"] == "none"


@pytest.mark.parametrize(("bwrap", "where"), [
    ("", "there is no bwrap ($GITEVALS_BWRAP is set but empty)"),
    ("/nonexistent/bwrap", "there is no bwrap at /nonexistent/bwrap ($GITEVALS_BWRAP)"),
], ids=["empty", "elsewhere"])
def test_without_bubblewrap_a_task_run_is_refused_in_one_line(repo: Repo, bwrap: str,
                                                              where: str) -> None:
    commit_task(repo, "1.0\n")
    res = run_cli("run", cwd=repo.path, env={"GITEVALS_BWRAP": bwrap})
    assert res.code == 2
    (line,) = [x for x in res.err.splitlines() if "bwrap" in x]
    assert "install it" in line and "--no-sandbox" in line
    assert where + ": install it" in line, line
    assert "Traceback" not in res.err
    assert not (repo.path / "evals" / "results").exists()


def test_run_name_selects_a_task_or_a_case(repo: Repo) -> None:
    commit_task(repo, "1.0\n", extra={"evals/cases/tone.yaml": (
        "defaults: {trials: 1, timeout: 5s}\nscenarios:\n  - id: s\n    user: hi\n"
        "    expect: [{no_error: true}]\n")})
    res = run_cli("run", "fix", cwd=repo.path)
    assert res.code == 0, res.err
    assert [c["name"] for c in _artifact(repo)["cases"]] == ["fix"]
    bad = run_cli("run", "nope", cwd=repo.path)
    assert bad.code == 2
    assert "unknown case or task 'nope'" in bad.err and "tasks are fix" in bad.err


def test_plan_lists_tasks_with_their_rates_from_the_run(repo: Repo) -> None:
    commit_task(repo, "1.0\n", toml="max_iterations = 1\n", extra={"evals/cases/tone.yaml": (
        "defaults: {trials: 1, timeout: 5s}\nscenarios:\n  - id: s\n    user: hi\n"
        "    expect: [{no_error: true}]\n")})
    before = json.loads(run_cli("plan", "--format", "json", cwd=repo.path).out)
    assert [(r["case"], r["scenario"], r["source"], r["trials"])
            for r in before["scenarios"]] == [("tone", "s", "prior", 1),
                                              ("fix", "task", "prior", 1)]
    ran = run_cli("run", cwd=repo.path)
    assert ran.code in (0, 1), ran.err  # the case's harness is the task's: it may fail
    assert _entry(_artifact(repo))["scenarios"][0]["verdict"]["verdict"] == "pass"
    after = run_cli("plan", "--format", "json", cwd=repo.path)
    (row,) = [r for r in json.loads(after.out)["scenarios"] if r["case"] == "fix"]
    assert (row["scenario"], row["observed"], row["rate"]) == ("task", "1/1", 1.0)
    text = run_cli("plan", cwd=repo.path)
    assert text.code == 0
    assert any(line.split()[:3] == ["fix", "task", "1.00"] for line in text.out.splitlines())
    assert "of 2 scenarios underpowered" in text.out


def test_run_names_a_terminal_bench_1_directory_as_skipped(repo: Repo) -> None:
    repo.commit({"pyproject.toml": SETTINGS, "evals/cases/tone.yaml": (
        "scenarios:\n  - id: s\n    user: hi\n"),
        "evals/tasks/tb1/task.yaml": "instruction: hi\n"})
    res = run_cli("run", "tb1", cwd=repo.path)
    assert (res.code, res.out) == (2, "")
    assert res.err == ("gitevals: error: cannot run 'tb1': skipped evals/tasks/tb1: a "
                       "Terminal-Bench 1 task.yaml directory; gitevals reads task.toml "
                       "tasks (Harbor's format)\n")
    dots = run_cli("run", "..", cwd=repo.path)  # names no directory under tasks/
    assert dots.code == 2 and "unknown case '..'" in dots.err


def test_score_rules_rejudges_a_task_from_stored_rewards(repo: Repo) -> None:
    commit_task(repo, "0.6\n", toml="max_iterations = 1\n")
    assert run_cli("run", cwd=repo.path).code == 1
    stored = sorted((repo.path / "evals" / "results").glob("*.json"))[-1]
    looser = repo.commit({"evals/tasks/fix/task.toml": "max_iterations = 1\n"
                                                        "pass_threshold = 0.5\n"})
    out = stored.parent.parent / "rescored.json"
    res = run_cli("score", str(stored), "--rules", looser, "--out", str(out), cwd=repo.path)
    assert res.code == 0, res.err
    scenario = load_artifact(out)["cases"][0]["scenarios"][0]
    assert scenario.get("rules") == "applied" and scenario["verdict"]["verdict"] == "pass"
    assert scenario["results"][0]["task"]["state"] == "satisfied"
    # its own rules again: the stored threshold, the stored verdict
    again = run_cli("score", str(stored), "--out", str(out), cwd=repo.path)
    assert again.code == 1
    assert load_artifact(out)["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "fail"
    # a stricter threshold after a run that stopped early: needs revision, not a pass
    commit_task(repo, "0.6\n", toml="max_iterations = 2\npass_threshold = 0.5\n")
    assert run_cli("run", cwd=repo.path).code == 0
    early = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)[-1]
    stricter = repo.commit({"evals/tasks/fix/task.toml": "max_iterations = 2\n"})
    res = run_cli("score", str(early), "--rules", stricter, "--out", str(out), cwd=repo.path)
    assert res.code == 1
    trial = load_artifact(out)["cases"][0]["scenarios"][0]["results"][0]
    assert trial["task"]["state"] == "needs_revision" and trial["passed"] is False


def test_score_rules_adds_a_task_only_the_rules_have_as_not_run(repo: Repo) -> None:
    commit_task(repo, "1.0\n", toml="max_iterations = 1\n")
    assert run_cli("run", cwd=repo.path).code == 0
    stored = sorted((repo.path / "evals" / "results").glob("*.json"))[-1]
    later = commit_task(repo, "1.0\n", name="more")
    out = stored.parent.parent / "rescored.json"
    res = run_cli("score", str(stored), "--rules", later, "--out", str(out), cwd=repo.path)
    assert res.code == 0, res.err
    entries = {c["name"]: c for c in load_artifact(out)["cases"]}
    assert list(entries) == ["fix", "more"]
    (added,) = entries["more"]["scenarios"]
    assert added["rules"] == "added" and added["results"] == []
    assert entries["more"]["task"]["max_iterations"] == 3
    assert entries["fix"]["scenarios"][0]["rules"] == "applied"
    assert "only in the rules: not run" in res.out
    # a run of one named task is not a run of every task: nothing is added
    assert run_cli("run", "fix", cwd=repo.path).code == 0
    named = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)[-1]
    res = run_cli("score", str(named), "--rules", later, "--out", str(out), cwd=repo.path)
    assert res.code == 0, res.err
    assert [c["name"] for c in load_artifact(out)["cases"]] == ["fix"]


def test_diff_sees_a_task_regress(repo: Repo) -> None:
    commit_task(repo, "1.0\n", toml="max_iterations = 1\n")
    assert run_cli("run", "--trials", "4", "-j", "4", cwd=repo.path).code == 0
    repo.commit({"evals/tasks/fix/environment/plan.txt": "0.3\n"})
    assert run_cli("run", "--trials", "4", "-j", "4", cwd=repo.path).code == 1
    res = run_cli("diff", "HEAD~1", "HEAD", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    (row,) = [x for x in res.out.splitlines() if x.split()[:2] == ["fix", "task"]]
    assert "pass 4/4" in row and "fail 0/4" in row and "regressed" in row


def test_a_broken_task_is_not_run_and_a_tb1_directory_is_skipped_with_a_note(repo: Repo) -> None:
    commit_task(repo, "1.0\n", extra={
        "evals/tasks/broken/task.toml": "max_iterations = 0\n",
        "evals/tasks/broken/instruction.md": "x\n",
        "evals/tasks/broken/tests/test.sh": "true\n",
        "evals/tasks/old/task.yaml": "instruction: hi\n"})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1
    assert "gitevals: task 'broken' does not lint and was not run" in res.err
    assert "evals/tasks/broken/task.toml:1:" in res.err
    assert "skipped evals/tasks/old: a Terminal-Bench 1 task.yaml directory" in res.err
    artifact = _artifact(repo)
    assert [c["name"] for c in artifact["cases"]] == ["fix"]
    assert _entry(artifact)["scenarios"][0]["verdict"]["verdict"] == "pass"


def test_an_interrupt_stops_a_running_verifier(repo: Repo, tmp_path: Path) -> None:
    token = f"gitevals-slow-verifier-{os.getpid()}-{time.monotonic_ns()}"
    commit_task(repo, "1.0\n", test_sh=f"(exec -a {token} sleep 300)\n")
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run"], cwd=repo.path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **GIT_ENV, "TASK_HARNESS_MARKS": str(marks)})
    deadline = time.monotonic() + 60
    while not _alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(marks.iterdir()) and _alive(token)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 10
    assert _alive(token) == []
    assert _artifact(repo)["interrupted"] is True


PY_TARGET = '''\
import os


def respond(messages):
    last = messages[-1]
    with open(os.path.join(last["workspace"], "answer.txt"), "w") as f:
        f.write("1.0\\n" if last["iteration"] else "0.5\\n")
    return {"final_answer": "done", "tool_calls": [], "hooks": [], "error": None}
'''


def test_a_python_target_gets_the_task_fields_too(repo: Repo) -> None:
    commit_task(repo, "-\n", extra={"task_target.py": PY_TARGET, "pyproject.toml":
                              '[tool.gitevals.target]\npython = "task_target:respond"\n'})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    trial = _trial(_artifact(repo))
    assert [i["reward"] for i in trial["task"]["iterations"]] == [0.5, 1.0]
