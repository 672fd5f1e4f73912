"""Processes end with their trial: whatever a target or grader starts is gone when its
conversation (or the run) ends, however it tried to get away.

Each leftover writes its pid to a file; after the run (or, seen from the next
trial's target, after its own conversation) that pid must be gone. A leftover
carries ``REAPER_PIDS=<this test's dir>`` in its environment, so the clean-up in
``finally`` kills only the tests' own processes, even if a test fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from gitevals.run import reaper
from gitevals.run.artifact import load as load_artifact
from tests.conftest import GIT_ENV, Repo, Result, run_cli
from tests.support.supervised import gone, kill_if_ours, start, start_leaving, warm_argv

# Case a leaves a process behind as its scenario id "<how>-<ending>" says, records its pid
# in a.pid, then answers or hangs. Case b (run after a, with --jobs 1) reports whether
# a's leftover is still alive: by then a's conversation has ended.
HARNESS = '''\
import json, os, signal, sys, time

PIDS = os.environ["REAPER_PIDS"]


def linger(path):
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    time.sleep(600)
    os._exit(0)


def setsid(path):  # a new session: out of the target's process group
    if os.fork() == 0:
        os.setsid()
        linger(path)


def double_fork(path):  # a daemon: its parent exits, it is re-parented
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            linger(path)
        os._exit(0)
    os.waitpid(child, 0)


def ignores_term(path):  # a grandchild in a group of its own that ignores TERM, HUP, INT
    if os.fork() == 0:
        if os.fork() == 0:
            for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(s, signal.SIG_IGN)
            os.setpgid(0, 0)
            linger(path)
        time.sleep(600)
        os._exit(0)


def kills_supervisor(path):  # the worst neighbour: leaves a process and kills its parent
    setsid(path)
    os.kill(os.getppid(), signal.SIGKILL)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def turn(case, scenario):
    if scenario == "check":
        state = "alive" if alive(int(open(os.path.join(PIDS, "a.pid")).read())) else "gone"
        return {"final_answer": f"a left a process that is {state}"}
    how, _, ending = scenario.partition("-")
    path = os.path.join(PIDS, f"{case}.pid")
    globals()[how](path)
    while not os.path.exists(path):
        time.sleep(0.01)
    if ending == "hangs":
        time.sleep(600)
    return {"final_answer": "left one"}


def respond(messages):  # the same, as a python target
    return turn(messages[-1]["case"], messages[-1]["scenario"])


if __name__ == "__main__":
    for line in sys.stdin:
        msg = json.loads(line)
        print(json.dumps(turn(msg["case"], msg["scenario"])), flush=True)
'''

#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
COMMAND = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
PYTHON = '[tool.gitevals.target]\npython = "harness:respond"\n'

GRADER = '''\
import os, time


def leaves(t, case, run):
    if os.fork() == 0:
        os.setsid()
        path = os.path.join(os.environ["REAPER_PIDS"], "grader.pid")
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        time.sleep(600)
        os._exit(0)
    while not os.path.exists(os.path.join(os.environ["REAPER_PIDS"], "grader.pid")):
        time.sleep(0.01)
    return True
'''

HOW = ["setsid", "double_fork", "ignores_term"]


def _case(scenario: str, timeout: str = "30s", grader: bool = False) -> str:
    expect = "[{grader: {name: q.leaves}}]" if grader else "[{no_error: true}]"
    return (f"defaults: {{trials: 1, timeout: {timeout}}}\nscenarios:\n"
            f"  - id: {scenario}\n    user: hi\n    expect: {expect}\n")


def _setup(repo: Repo, cases: dict[str, str], settings: str = COMMAND) -> None:
    files: dict[str, str | bytes] = {f"evals/cases/{n}.yaml": c for n, c in cases.items()}
    repo.commit({"harness.py": HARNESS, "pyproject.toml": settings,
                 "evals/graders/q.py": GRADER, **files})


def _ours(pids: Path) -> list[int]:
    """Every live process of this test: targets, their children, leftovers (all carry
    ``REAPER_PIDS=<pids>`` in their environment)."""
    mark = f"REAPER_PIDS={pids}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            pass
    return found


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    """Where leftovers write their pids; whatever of the test is still alive afterwards
    (when gitevals failed to clean up) is killed."""
    path = tmp_path / "pids"
    path.mkdir()
    try:
        yield path
    finally:
        for _ in range(3):  # a process may fork while its parent is being killed
            for pid in _ours(path):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _leftovers(pids: Path) -> dict[str, int]:
    return {f.stem: int(f.read_text()) for f in sorted(pids.glob("*.pid"))}


def _check(repo: Repo) -> str:
    """What case b's target saw of case a's leftover."""
    (path,) = (repo.path / "evals" / "results").glob("*.json")
    (b,) = [c for c in load_artifact(path)["cases"] if c["name"] == "b"]
    answer: str = b["scenarios"][0]["results"][0]["transcript"]["final_answer"]
    return answer


# "hangs" ends by its scenario timeout: 1 s, past the leftover's start (its pid file),
# is all the test needs of it (the timeout is how the trial ends, not what is checked).
ENDINGS = [("answers", 0, "30s"), ("hangs", 1, "1s")]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("ending", "code", "timeout"), ENDINGS, ids=[e[0] for e in ENDINGS])
def test_a_leftover_is_gone_when_its_trial_ends(repo: Repo, pids: Path, how: str,
                                                ending: str, code: int, timeout: str) -> None:
    _setup(repo, {"a": _case(f"{how}-{ending}", timeout), "b": _case("check")})
    res = run_cli("run", "--jobs", "1", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
    assert res.code == code, res.err
    # b's target looked while the run went on: a's leftover was already gone.
    assert _check(repo) == "a left a process that is gone"
    assert gone(_leftovers(pids)["a"])


INTERRUPTS = [("SIGINT", signal.SIGINT, 130), ("SIGTERM", signal.SIGTERM, 130),
              ("SIGKILL", signal.SIGKILL, -signal.SIGKILL)]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("signum", "code"), [i[1:] for i in INTERRUPTS],
                         ids=[i[0] for i in INTERRUPTS])
def test_a_leftover_is_gone_when_the_run_is_interrupted(repo: Repo, pids: Path, how: str,
                                                        signum: int, code: int) -> None:
    # Killed outright, gitevals cannot clean up: the supervisor sees it go and does.
    _setup(repo, {"a": _case(f"{how}-hangs", "600s")})
    if signum != signal.SIGKILL:
        # ^C and SIGTERM reach gitevals' own handlers as in a process of its own: the
        # CLI runs in this one (a Python start and gitevals' imports fewer), the signal
        # is sent to it once the leftover is there; test_run_cli's interrupted runs keep
        # both signals on a `python -m gitevals` of their own.
        res = _interrupted_in_process(repo, pids, signum)
        assert res.code == code, res.err
        assert gone(_leftovers(pids)["a"])
        return
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run"], cwd=repo.path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **GIT_ENV, "REAPER_PIDS": str(pids)})
    try:
        deadline = time.monotonic() + 60
        while not (pids / "a.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert gone(_leftovers(pids)["a"])
    finally:
        proc.kill()
        proc.communicate()


def _interrupted_in_process(repo: Repo, pids: Path, signum: int) -> Result:
    """``gitevals run`` in this process, sent ``signum`` once case a's leftover wrote its
    pid (a thread waits for it; nothing is sent if the run ended first)."""
    ended = threading.Event()

    def send() -> None:
        deadline = time.monotonic() + 60
        while not (pids / "a.pid").exists() and time.monotonic() < deadline:
            if ended.wait(0.02):
                return
        if not ended.is_set():
            os.kill(os.getpid(), signum)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        return run_cli("run", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
    finally:
        ended.set()
        sender.join(30)


def test_a_python_targets_leftover_is_gone_when_its_trial_ends(repo: Repo, pids: Path) -> None:
    _setup(repo, {"a": _case("setsid-answers"), "b": _case("check")}, settings=PYTHON)
    res = run_cli("run", "--jobs", "1", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
    assert res.code == 0, res.err
    assert _check(repo) == "a left a process that is gone"
    assert gone(_leftovers(pids)["a"])


def test_a_graders_leftover_is_gone_when_the_run_ends(repo: Repo, pids: Path) -> None:
    _setup(repo, {"a": _case("setsid-answers", grader=True)})
    res = run_cli("run", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
    assert res.code == 0, res.err
    left = _leftovers(pids)
    assert sorted(left) == ["a", "grader"]
    assert all(gone(pid) for pid in left.values()), left


def test_a_program_that_calls_gitevals_keeps_its_own_processes(repo: Repo, pids: Path) -> None:
    # gitevals run in this process (as a notebook or the API does): the run's leftovers go,
    # the caller's own child, started before, lives on and its exit status is its owner's.
    _setup(repo, {"a": _case("setsid-answers", grader=True)})
    mine = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(7)"],
                            stdin=subprocess.PIPE)
    try:
        res = run_cli("run", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
        assert res.code == 0, res.err
        assert all(gone(pid) for pid in _leftovers(pids).values())
        assert mine.poll() is None
        mine.communicate(b"", timeout=30)
        assert mine.returncode == 7
    finally:
        mine.kill()
        mine.wait()


def test_a_target_that_kills_its_supervisor_leaves_nothing_after_the_run(
        repo: Repo, pids: Path) -> None:
    # Its leftover outlives the trial (gitevals adopts it), never the run; the next
    # conversation gets a fresh supervisor.
    _setup(repo, {"a": _case("kills_supervisor-answers"), "b": _case("check")})
    res = run_cli("run", "--jobs", "1", cwd=repo.path, env={"REAPER_PIDS": str(pids)})
    assert res.code == 0, res.err
    assert _check(repo) == "a left a process that is alive"
    assert gone(_leftovers(pids)["a"])


# --- the supervisor on its own ---------------------------------------------------------

@pytest.fixture
def supervisor() -> Iterator[reaper.Supervisor]:
    sup = reaper.Supervisor.start()
    assert sup is not None, "a supervisor starts on Linux"
    try:
        yield sup
    finally:
        sup.close()


@pytest.mark.parametrize(("code", "expected"), [(0, 0), (3, 3)], ids=["exit-0", "exit-3"])
def test_end_reports_the_exit_code_and_kills_what_the_target_left(
        supervisor: reaper.Supervisor, tmp_path: Path, code: int, expected: int) -> None:
    _, stdin, left, pidfile = start_leaving(supervisor, tmp_path, code=code)
    try:
        os.close(stdin)
        assert supervisor.status(10) == expected
        assert gone(left, grace=0) is False  # the target exited; its leftover did not
        assert supervisor.end() == expected
        assert gone(left, grace=0)
    finally:
        kill_if_ours(left, pidfile)


def test_a_supervisor_whose_gitevals_goes_away_kills_what_is_beneath_it(
        supervisor: reaper.Supervisor, tmp_path: Path) -> None:
    pid, stdin, left, pidfile = start_leaving(supervisor, tmp_path)
    try:
        supervisor.close()  # no `end`: as if gitevals had been killed
        assert gone(left) and gone(pid)
    finally:
        os.close(stdin)
        kill_if_ours(left, pidfile)


def test_a_command_that_cannot_start_is_an_os_error_as_popen_raises_it(
        supervisor: reaper.Supervisor, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        start(supervisor, tmp_path, ["no-such-harness-xyz"])
    (tmp_path / "not-executable").write_text("")
    with pytest.raises(PermissionError):
        start(supervisor, tmp_path, ["./not-executable"])
    pid, stdin = start(supervisor, tmp_path, ["true"])  # found on PATH; still usable
    os.close(stdin)
    assert pid > 0 and supervisor.status(10) == 0 and supervisor.end() == 0


#: What the supervisor must not import: each costs its start (every run starts one)
#: milliseconds of CPU, ``typing`` or ``json`` alone as much as the interpreter's start.
COSTLY = {"typing", "json", "re", "enum", "socket", "collections", "contextlib", "functools",
          "selectors", "subprocess", "threading"}


def test_the_supervisor_and_its_kept_holders_import_nothing_costly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The supervisor as gitevals starts it, with one line before its own: on its way out
    # (``os._exit``, after it served) each process writes the modules it has imported.
    seen = tmp_path / "modules"
    leave = ("import os, sys\n"
             "def _leave(code, _exit=os._exit):\n"
             "    line = ' '.join([str(os.getpid()), *sorted(sys.modules)]) + '\\n'\n"
             f"    fd = os.open({str(seen)!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n"
             "    os.write(fd, line.encode())\n"
             "    _exit(code)\n"
             "os._exit = _leave\n")
    monkeypatch.setattr(reaper, "_BOOT", leave + reaper._BOOT)
    sup = reaper.Supervisor.start()
    assert sup is not None
    kept = reaper.Supervisor(sup.channel, keep=True)  # a job slot with a kept holder
    (tmp_path / "agent.py").write_text("def respond(messages):\n    return {}\n")
    warm = warm_argv()
    try:
        for slot in (sup, kept):  # a conversation beneath a holder of its own, then kept
            pid, stdin = start(slot, tmp_path, ["true"])
            os.close(stdin)
            assert pid > 0 and slot.status(10) == 0 and slot.end() == 0
        # and one of a python target, forked by its warm worker (spoken to in JSON)
        pid, stdin = start(sup, tmp_path, ["unused"], warm)
        os.close(stdin)
        assert pid > 0 and sup.status(10) == 0 and sup.end() == 0
        assert kept._kept is not None
        holder = kept._kept[0]
        kept.close()  # its holder leaves on its own before the supervisor sweeps
        assert reaper.target_status(holder, 10) == 0
    finally:
        kept.close()
        sup.close()
    assert sup.channel.proc.returncode == 0
    lines = {int(pid): set(names) for pid, *names in
             (line.split() for line in seen.read_text().splitlines())}
    assert sup.channel.proc.pid in lines and len(lines) == 2  # it and its kept holder
    assert all("gitevals.run.reaper" in names and not names & COSTLY
               for names in lines.values()), {p: names & COSTLY for p, names in lines.items()}


def test_descendants_follows_parent_links(tmp_path: Path) -> None:
    child = subprocess.Popen(["sh", "-c", "sleep 600 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(found := reaper.descendants(child.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(found) == 1 and child.pid in reaper.descendants(os.getpid())
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


# --- one supervisor for the run, a small holder per conversation (#27 item 3) ----------

# Each conversation waits until all four are in flight (bounded), then answers with what
# it sees above it: its parent (the holder: name, resident KiB) and its grandparent.
LINEAGE = '''\
import json, os, sys, time

DIR = os.environ["REAPER_PIDS"]


def stat(pid):
    data = open("/proc/%d/stat" % pid).read()
    return data[data.index("(") + 1:data.rindex(")")], int(data[data.rindex(")") + 2:].split()[1])


def rss(pid):
    return next(int(l.split()[1]) for l in open("/proc/%d/status" % pid) if l.startswith("VmRSS"))


for line in sys.stdin:
    open(os.path.join(DIR, "%d.in" % os.getpid()), "w").close()
    deadline = time.monotonic() + 20
    while len(os.listdir(DIR)) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    name, grandparent = stat(os.getppid())
    seen = {"holder": name, "holder_kib": rss(os.getppid()), "supervisor": grandparent,
            "together": len(os.listdir(DIR))}
    print(json.dumps({"final_answer": json.dumps(seen)}), flush=True)
'''


@pytest.mark.parametrize("settings", [COMMAND, PYTHON], ids=["command", "python"])
def test_concurrent_conversations_share_one_supervisor_each_under_a_small_holder(
        repo: Repo, pids: Path, settings: str) -> None:
    # The job slots' conversations run at once beneath one supervisor; what keeps each
    # conversation's leftovers apart is its holder, a small program, not an interpreter.
    harness = LINEAGE
    if settings == PYTHON:  # the same lines, as a python target's function
        harness = LINEAGE.replace("for line in sys.stdin:\n", "def respond(messages):\n")
        harness = harness.replace("    print(json.dumps({\"final_answer\": json.dumps(seen)}),"
                                  " flush=True)\n", "    return {\"final_answer\": "
                                  "json.dumps(seen)}\n")
    cases = {f"c{n}": _case("s") for n in range(4)}
    files: dict[str, str | bytes] = {f"evals/cases/{n}.yaml": c for n, c in cases.items()}
    repo.commit({"harness.py": harness, "pyproject.toml": settings, **files})
    # more slots than CPUs (and than KEPT_HOLDERS): a holder per conversation, not per slot
    res = run_cli("run", "--jobs", "16", "--format", "json", cwd=repo.path,
                  env={"REAPER_PIDS": str(pids)})
    assert res.code == 0, res.err
    seen = [json.loads(s["results"][0]["transcript"]["final_answer"])
            for c in json.loads(res.out)["cases"] for s in c["scenarios"]]
    assert len(seen) == 4 and all(s["together"] == 4 for s in seen)  # all four in flight
    assert {s["holder"] for s in seen} == {"cat"}
    assert max(s["holder_kib"] for s in seen) < 5000  # an interpreter keeps ~10 MB
    assert len({s["supervisor"] for s in seen}) == 1


# --- the supervisor boots while the plan is read (#27 item 4: the start) ---------------


def _supervisors() -> set[int]:
    """This process's children that are a run's supervisor (``python -I -S -c ...``)."""
    def argv(pid: int) -> list[bytes]:
        with suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
        return []

    return {pid for pid in reaper.descendants(os.getpid()) if argv(pid)[1:3] == [b"-I", b"-S"]}


def test_a_runs_supervisor_is_starting_while_its_plan_is_read(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitevals import api
    from gitevals.git.trees import Tree

    repo.commit({"harness.py": "def respond(messages):\n    return {'final_answer': 'ok'}\n",
                 "pyproject.toml": PYTHON, "evals/cases/a.yaml": _case("s")})
    seen: list[set[int]] = []
    plans = api.run_plans

    def reading(tree: Tree, selection: api.RunSelection) -> api.RunPlans:
        deadline = time.monotonic() + 10
        while not (found := _supervisors()) and time.monotonic() < deadline:
            time.sleep(0.01)  # it starts in a thread of its own: give it time
        seen.append(found)
        return plans(tree, selection)

    monkeypatch.setattr(api, "run_plans", reading)
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert len(seen) == 1 and len(seen[0]) == 1  # one supervisor, already there
    assert not _supervisors()  # and stopped with the run


def test_a_supervisor_started_ahead_is_stopped_by_a_close_that_comes_first() -> None:
    # A plan that fails (no target, nothing that lints) closes the run's registry while
    # its supervisor may still be starting: the start is waited for, then stopped.
    import threading

    from gitevals.run.targets import ProcessRegistry

    registry = ProcessRegistry()
    registry.prestart()
    registry.close()
    for thread in threading.enumerate():
        if thread.name == "gitevals-supervisor":
            thread.join(30)
    assert not _supervisors()


#: A python target whose import writes ``junk`` to every socket it holds: the warm
#: worker's one to its supervisor is among them.
JUNK_AGENT = """\
import os
for name in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + name).startswith("socket:"):
            os.write(int(name), {junk!r})
    except OSError:
        pass


def respond(messages):
    return {{}}
"""


@pytest.mark.parametrize("junk", [b"{not json", b"[" * 100_000, b'{"ready": tru', b"\xff\xfe"],
                         ids=["not-json", "nested", "cut", "not-text"])
def test_a_warm_worker_that_writes_junk_to_its_supervisor_is_a_failed_start(
        tmp_path: Path, junk: bytes) -> None:
    (tmp_path / "agent.py").write_text(JUNK_AGENT.format(junk=junk))
    warm = warm_argv()
    sup = reaper.Supervisor.start()
    assert sup is not None
    try:
        said = sup.warm(warm, str(tmp_path), None, 30)
        assert said is not None  # the worker is not used: its conversations start cold
        assert sup.channel.proc.poll() is None  # the supervisor is alive and still serves
        pid, stdin = start(sup, tmp_path, ["true"])
        os.close(stdin)
        assert pid > 0 and sup.status(10) == 0 and sup.end() == 0
    finally:
        sup.close()
    assert sup.channel.proc.returncode == 0


#: A python target whose import makes its warm worker answer every fork with the pid of
#: a process that is not its own (the test's ``sleep``), as conversation and holder both.
FORGING_AGENT = """\
import __main__


def _forged(*args, **kwargs):
    return {{"pid": {victim}, "holder": {victim}}}


__main__._fork = _forged


def respond(messages):
    return {{}}
"""


def test_a_warm_worker_cannot_name_another_process_as_its_conversation(tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (tmp_path / "agent.py").write_text(FORGING_AGENT.format(victim=victim.pid))
    warm = warm_argv()
    sup = reaper.Supervisor.start()
    assert sup is not None
    try:  # the forged answer is refused: the conversation starts cold (``true``)
        pid, stdin = start(sup, tmp_path, ["true"], warm)
        os.close(stdin)
        assert pid != victim.pid
        assert pid > 0 and sup.status(10) == 0 and sup.end() == 0
        assert sup.channel.proc.poll() is None
    finally:
        sup.close()
        alive = victim.poll() is None
        victim.kill()
        victim.wait()
    assert alive, "the supervisor or gitevals killed a process the warm worker named"


def test_a_run_whose_python_target_forges_its_forks_kills_nothing_of_another(
        repo: Repo) -> None:
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    agent = FORGING_AGENT.format(victim=victim.pid).replace(
        "return {}", 'return {"final_answer": "Paris"}')
    repo.commit({"agent.py": agent,
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n',
                 "evals/cases/c.yaml": "defaults: {trials: 3, timeout: 10s}\nscenarios:\n"
                                       "  - id: s\n    user: France?\n"
                                       "    expect: [{final_answer_contains: Paris}]\n"})
    try:
        res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
        alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    assert alive, "the run killed a process its target's warm worker named"
    assert res.code == 0, res.err  # the conversations started cold, and answered
    results = json.loads(res.out)["cases"][0]["scenarios"][0]["results"]
    assert [r["passed"] for r in results] == [True] * 3
