"""Rewards, judging and the sandbox's command line: the pure parts of running a task,
plus the sandbox's own guarantees (timeout, reward file not followed) on the host."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitevals.run import tasks as run_tasks
from gitevals.run.artifact import Iteration, Trial, validate
from gitevals.tasks import sandbox, verifier

DECIMAL = ", not a decimal number (ASCII digits, an optional point and exponent, as 0.75 or 1e0)"
needs_bwrap = pytest.mark.needs_bwrap


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary directory the sandbox's user may pass through: started by root, the
    sandbox runs as nobody, and pytest's own temporary directories are root's alone."""
    path = Path(tempfile.mkdtemp(prefix="gitevals-test-"))
    path.chmod(0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(("fmt", "data", "rewards", "why"), [
    ("reward_text", b"1.0\n", {"reward": 1.0}, None),
    ("reward_text", b" 0 ", {"reward": 0.0}, None),
    ("reward_text", b"abc", {}, "holds 'abc'" + DECIMAL),
    ("reward_text", b"nan", {}, "holds 'nan'" + DECIMAL),
    ("reward_text", b"inf", {}, "holds 'inf'" + DECIMAL),
    ("reward_text", b"7", {}, "holds 7, not a finite number from 0 to 1"),
    ("reward_text", b"-0.1", {}, "holds '-0.1'" + DECIMAL),
    ("reward_text", b"1e1", {}, "holds 1e1, not a finite number from 0 to 1"),
    ("reward_json", b'{"reward": 1, "reward": 0}', {},
     "names 'reward' twice: which one counts would be a guess; write each reward once"),
    ("reward_text", b"", {}, "is empty"),
    ("reward_text", b"\xff", {}, "is not UTF-8"),
    ("reward_json", b'{"reward": 0.5}', {"reward": 0.5}, None),
    ("reward_json", b'{"b": 1, "a": 0.25}', {"a": 0.25, "b": 1.0}, None),
    ("reward_json", b'{"reward": NaN}', {}, "has 'reward': 'NaN', not a finite number from 0 to 1"),
    ("reward_json", b'{"reward": true}', {}, "has 'reward': True, not a finite number from 0 to 1"),
    ("reward_json", b'{"reward": "1"}', {}, "has 'reward': '1', not a finite number from 0 to 1"),
    ("reward_json", b"{}", {}, 'is not a JSON object of rewards such as {"reward": 1.0}'),
    ("reward_json", b"[1]", {}, 'is not a JSON object of rewards such as {"reward": 1.0}'),
    ("reward_json", b"1.0", {}, 'is not a JSON object of rewards such as {"reward": 1.0}'),
    ("reward_json", b"{", {}, "is not JSON"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_parse_reward(fmt: str, data: bytes, rewards: dict[str, float], why: str | None) -> None:
    assert verifier.parse_reward(fmt, data) == (rewards, why)


@pytest.mark.parametrize(("rewards", "decides", "at_half"), [
    ({"reward": 0.4, "style": 1.0}, 0.4, False),
    ({"tests": 1.0, "style": 0.5}, 0.5, True),
    ({}, None, False),
], ids=["reward-key", "smallest-named", "none"])
def test_the_deciding_reward(rewards: dict[str, float], decides: float | None,
                             at_half: bool) -> None:
    assert verifier.deciding(rewards) == decides
    assert verifier.satisfied(rewards, 0.5) is at_half


def test_revision_message_is_documented_text() -> None:
    text = verifier.revision_message(0.4, 1.0, 0, 3, "line\n" * 3)
    assert text == ("The verifier scored your work 0.4; this task needs 1 or more. This is "
                    "attempt 2 of 3. The end of the verifier's output:\n\nline\nline\nline"
                    "\n\nRevise the work in the workspace and answer again.")
    long = verifier.revision_message(0.0, 1.0, 1, 3, "x" * 5000)
    assert "x" * verifier.MESSAGE_TAIL in long and "x" * (verifier.MESSAGE_TAIL + 1) not in long


def _iteration(i: int, reward: float | None, error: bool = False) -> Iteration:
    return {"iteration": i, "message": "m", "rewards": {} if reward is None else
            {"reward": reward}, "reward": reward, "passed": False, "verifier_exit": 0,
            "verifier_tail": "", "attempts": 1, "error": {"kind": "reward_unreadable",
                                                          "message": "x"} if error else None,
            "duration_ms": 1}


def _trial(rewards: list[float | None], error: bool = False) -> Trial:
    its = [_iteration(i, r, error and i == len(rewards) - 1) for i, r in enumerate(rewards)]
    return {"trial": 0, "transcript": {"final_answer": None, "tool_calls": [], "hooks": [],
                                       "error": None, "turns": [], "duration_ms": 0},
            "error": its[-1]["error"] if error else None, "graders": [], "assertions": [],
            "passed": False, "task": {"state": "error", "final_reward": None,
                                      "sandbox": "bwrap", "iterations": its}}


@pytest.mark.parametrize(("rewards", "error", "threshold", "budget", "state", "final"), [
    ([1.0], False, 1.0, 1, "satisfied", 1.0),
    ([0.4, 1.0], False, 1.0, 3, "satisfied", 1.0),
    ([0.4, 0.6], False, 0.5, 2, "satisfied", 0.6),
    ([0.2, 0.5], False, 0.9, 2, "max_iterations_reached", 0.5),
    ([0.6], False, 0.9, 3, "needs_revision", 0.6),
    ([0.2, None], True, 1.0, 3, "error", 0.2),
], ids=["first", "second", "lower-threshold", "budget", "stopped-early", "error"])
def test_judged_derives_state_from_stored_rewards(rewards: list[float | None], error: bool,
                                                 threshold: float, budget: int, state: str,
                                                 final: float | None) -> None:
    out = run_tasks.judged(_trial(rewards, error), threshold, budget)
    assert out["task"]["state"] == state and out["task"]["final_reward"] == final
    assert out["passed"] is (state == "satisfied")
    (outcome,) = out["assertions"]
    assert outcome["kind"] == "reward" and outcome["score"] == final
    assert outcome["message"].startswith(state if state != "error" else "reward 0.2")


def _run_with(trial: Trial) -> dict[str, Any]:
    scenario = {"id": "task", "user": ["do it"], "expect": [run_tasks.rule(1.0, 1)],
                "trials": 1, "timeout": 600, "results": [trial],
                "verdict": {"verdict": "pass", "passes": 1, "trials": 1, "pass_at_k": True,
                            "pass_hat_k": True, "first_failure": None, "errors": {}}}
    return {"format": "gitevals-run/1", "run_id": "20261130T000000Z-aaaaaaaaaaaa-abcdef",
            "tool_version": "0", "rev": "HEAD", "commit": "a" * 40, "tree": "b" * 40,
            "dirty": False, "dirty_diff": None, "root": "evals", "settings": {}, "files": {},
            "started_at": "2026-11-30T00:00:00Z", "finished_at": "2026-11-30T00:00:01Z",
            "duration_ms": 1, "interrupted": False,
            "options": {"cases": [], "trials": None, "jobs": 1},
            "cases": [{"name": "t", "path": "evals/tasks/t", "blob": None,
                       "scenarios": [scenario]}]}


def test_artifact_validation_checks_task_records() -> None:
    good = _run_with(run_tasks.judged(_trial([1.0]), 1.0, 1))
    assert validate(good) is None
    for path, value in [(("iterations", 0, "reward"), 7), (("state",), "done"),
                        (("iterations", 0, "rewards"), {"r": float("nan")}),
                        (("sandbox",), "docker")]:
        bad = copy.deepcopy(good)
        node = bad["cases"][0]["scenarios"][0]["results"][0]["task"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        problem = validate(bad)
        assert problem is not None and "$.cases[0].scenarios[0].results[0]" in problem


def test_bwrap_argv_isolates_by_default() -> None:
    call = sandbox.Call(("bash", "/tests/test.sh"), "/app", (("K", "v"),), 5.0)
    inside = sandbox.Inside(7, (("test.sh", True, 8),), ("data",), (("l", "test.sh"),), 9)
    argv = sandbox.bwrap_argv("bwrap", call, inside, host_links={"/bin": "usr/bin"},
                              hidden=(("/etc/shadow", False), ("/etc/ssl/private", True)))
    assert argv[:6] == ["bwrap", "--die-with-parent", "--new-session", "--unshare-all",
                        "--cap-drop", "ALL"]
    assert "--share-net" not in argv and "--clearenv" in argv
    assert argv[-3:] == ["--", "bash", "/tests/test.sh"]
    joined = " ".join(argv)
    for part in ("--dir /tests --dir /tests/data --perms 0555 --ro-bind-data 8 /tests/test.sh",
                 "--symlink test.sh /tests/l", "--tmpfs /logs/verifier",
                 "--bind /proc/self/fd/7 /app --remount-ro / --remount-ro /proc --remount-ro /dev "
                 "--chdir /app", "--seccomp 9", "--tmpfs /dev/shm",
                 "--symlink usr/bin /bin", "--ro-bind /dev/null /etc/shadow",
                 "--tmpfs /etc/ssl/private --remount-ro /etc/ssl/private",
                 "--setenv K v", "--setenv GITEVALS_LOGS /logs/verifier",
                 f"--size {sandbox.TMP_BYTES} --tmpfs /tmp"):
        assert part in joined
    assert "/work" not in joined and "/home" not in joined and "/root" not in joined
    online = sandbox.Call(("true",), allow_internet=True)
    assert "--share-net" in sandbox.bwrap_argv("bwrap", online, sandbox.Inside(3), {}, ())


@pytest.mark.parametrize(("workdir", "ok"), [
    ("/app", True), ("/srv/work", True), ("/", False), ("app", False), ("/usr/x", False),
    ("/tests", False), ("/logs", False), ("/app/../etc", False), ("/proc", False),
], ids=lambda x: str(x))
def test_workdir_problem(workdir: str, ok: bool) -> None:
    assert (sandbox.workdir_problem(workdir) is None) is ok


def test_direct_call_rewrites_the_mount_points() -> None:
    call = sandbox.Call(("bash", "/tests/test.sh", "/logs/verifier/x", "/app/y", "/appz"))
    argv, env, cwd = sandbox.direct_call(call, sandbox.Mounts("/h/ws", "/h/t", "/h/l"))
    assert argv == ["bash", "/h/t/test.sh", "/h/l/x", "/h/ws/y", "/appz"]
    assert cwd == "/h/ws" and env["GITEVALS_LOGS"] == "/h/l" and env["HOME"] == "/tmp"


def test_the_reward_file_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("1.0\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "reward.txt").symlink_to(secret)
    rewards, why = verifier.read_reward(str(logs), "reward_text")
    assert rewards == {} and why is not None and "is a symbolic link, not a regular" in why
    (logs / "reward.txt").unlink()
    os.mkfifo(logs / "reward.txt")
    assert verifier.read_reward(str(logs), "reward_text")[1] == (
        "/logs/verifier/reward.txt is not a regular file")
    (logs / "reward.txt").unlink()
    (logs / "reward.json").write_text('{"reward": 1}')
    assert "it wrote reward.json" in str(verifier.read_reward(str(logs), "reward_text")[1])


@needs_bwrap
def test_a_verifier_past_its_timeout_is_killed(open_tmp: Path) -> None:
    mounts = []
    for name in ("ws", "tests", "logs"):
        (open_tmp / name).mkdir()
        mounts.append(str(open_tmp / name))
    call = sandbox.Call(("sh", "-c", "echo started; sleep 30"), timeout=0.5)
    started = time.monotonic()
    out = sandbox.run_verifier(call, sandbox.Mounts(*mounts), sandbox.find_bwrap())
    assert out.timed_out and out.exit_code is None and "started" in out.tail
    assert time.monotonic() - started < 5


def test_a_flood_of_output_keeps_only_the_tail(tmp_path: Path) -> None:
    call = sandbox.Call(("sh", "-c", "yes x | head -c 3000000; echo END"), timeout=30)
    out = sandbox.run_verifier(call, sandbox.Mounts(str(tmp_path), "/t", "/l"), None)
    assert out.exit_code == 0 and out.tail.endswith("END\n")
    assert len(out.tail.encode()) <= sandbox.TAIL_BYTES


@needs_bwrap
def test_a_prepared_call_waits_for_the_go_and_a_cancelled_one_never_runs(open_tmp: Path) -> None:
    dirs = []
    for name in ("ws", "tests", "logs"):
        (open_tmp / name).mkdir()
        dirs.append(str(open_tmp / name))
    mounts = sandbox.Mounts(*dirs)
    call = sandbox.Call(("sh", "-c", "cat /app/late > /logs/verifier/reward.txt"), timeout=10)
    with sandbox.prepare(call, mounts, sandbox.find_bwrap()) as pending:
        (open_tmp / "ws" / "late").write_text("0.5\n")  # written after the sandbox started
        out = pending.run()
        assert out.exit_code == 0
        logs = pending.open_logs()  # the sandbox's own /logs/verifier, by descriptor
        try:
            assert verifier.read_reward(logs, "reward_text") == ({"reward": 0.5}, None)
        finally:
            os.close(logs)
    assert not (open_tmp / "logs" / "reward.txt").exists()  # no host path holds it
    cancelled = sandbox.prepare(call, mounts, sandbox.find_bwrap())
    assert cancelled.proc is not None
    cancelled.cancel()
    assert cancelled.proc.returncode is not None
    assert not (open_tmp / "logs" / "reward.txt").exists()
    assert cancelled.run().exit_code is None  # nothing left to run


def _mounts(tmp_path: Path) -> sandbox.Mounts:
    dirs = []
    for name in ("ws", "tests", "logs"):
        (tmp_path / name).mkdir()
        dirs.append(str(tmp_path / name))
    return sandbox.Mounts(*dirs)


def _named(token: str) -> list[int]:
    """Host pids whose command line holds ``token``."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    out.append(int(pid))
        except OSError:
            continue
    return out


def _until(check: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@needs_bwrap
def test_the_outcome_comes_before_the_sandbox_ends_and_release_ends_it(open_tmp: Path) -> None:
    mounts = _mounts(open_tmp)
    suffix = f"{os.getpid()}-{time.monotonic_ns()}"
    token = f"gitevals-left-{suffix}"
    # the token is never whole in the verifier's own command line
    script = (f's={suffix}; (exec -a "gitevals-left-$s" sleep 300) </dev/null >/dev/null 2>&1 &'
              " echo 1 > /logs/verifier/reward.txt; exit 3")
    with sandbox.prepare(sandbox.Call(("bash", "-c", script), timeout=10), mounts,
                         sandbox.find_bwrap()) as pending:
        out = pending.run()
        assert (out.exit_code, out.timed_out) == (3, False)
        assert pending.proc is not None and pending.proc.poll() is None  # still up
        assert _until(lambda: bool(_named(token)))  # what it left behind, still running
        pending.release()
        assert _until(lambda: pending.proc is not None and pending.proc.poll() is not None)
    assert _named(token) == []


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "no-sandbox"])
def test_a_verifier_cannot_report_a_status_of_its_own(open_tmp: Path, sandboxed: bool) -> None:
    bwrap = sandbox.find_bwrap() if sandboxed else None
    if sandboxed and bwrap is None:
        pytest.fail("bubblewrap is needed: apt-get install bubblewrap")
    # the waiter's status socket cannot be opened through /proc, nor is it the stdin
    script = ("echo 0 > /proc/$PPID/fd/0; echo 0 > /proc/$$/fd/0; echo 0 >&0;"
              " echo 0 2>/dev/null >&3; exit 3")
    out = sandbox.run_verifier(sandbox.Call(("sh", "-c", script), timeout=10),
                               _mounts(open_tmp), bwrap)
    assert out.exit_code == 3


def test_a_process_that_reports_no_status_gives_its_exit_code_and_output(
        tmp_path: Path) -> None:
    with sandbox.Pending(["sh", "-c", "echo cannot set up >&2; exit 7"], {}, str(tmp_path),
                         10) as pending:
        out = pending.run()
    assert (out.exit_code, out.tail, out.timed_out) == (7, "cannot set up\n", False)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_waiting_for_a_sandbox_to_be_gone_ends_when_its_process_does(
        monkeypatch: pytest.MonkeyPatch, pidfd: bool) -> None:
    if not pidfd:  # a kernel before 5.3
        def refused(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")
        monkeypatch.setattr(os, "pidfd_open", refused)
    proc = subprocess.Popen(["sleep", "0.3"])
    started = time.monotonic()
    sandbox._wait_gone(proc.pid, 10)
    took = time.monotonic() - started
    assert 0.2 < took < 5 and proc.wait(timeout=5) == 0
    started = time.monotonic()
    sandbox._wait_gone(proc.pid, 10)  # already gone: at once
    assert time.monotonic() - started < 0.5


@needs_bwrap
def test_root_is_told_when_the_workspace_is_out_of_the_sandbox_users_reach(
        open_tmp: Path) -> None:
    bwrap = sandbox.find_bwrap()
    assert bwrap is not None
    if sandbox.sandbox_user(bwrap) is None:
        pytest.skip("the sandbox runs as nobody only when root and user namespaces allow it")
    private = open_tmp / "private"
    private.mkdir(mode=0o700)
    mounts = _mounts(private)
    with sandbox.prepare(sandbox.Call(("true",), timeout=10), mounts, bwrap) as pending:
        out = pending.run()
    assert out.exit_code is None
    assert out.tail == (f"cannot set up the sandbox: the workspace {mounts.workspace} is out "
                        "of reach of uid 65534, whom the verifier runs as (gitevals runs as "
                        f"root): {private} lets only its owner through; make it traversable "
                        "(chmod o+x) or put the workspace elsewhere"), out.tail
