"""Issue 25, second pass, through the real CLI as root and as an unprivileged user: the
target of a task trial lives in a pid namespace of its own (it cannot see, read through,
trace or signal a running verifier), a fork bomb on either side stops at its process
limit and leaves nothing behind, and a verifier started by root reads no file only root
may read (it runs as nobody).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from gitevals.run.reaper import descendants
from gitevals.tasks.sandbox import PIDS, TARGET_PIDS
from tests.support.trust import HONEST, commit_attack, only_trial
from tests.support.users import Who

#: The target's attack on a verifier: while its turn lasts (the verifier's sandbox is
#: started then, waiting), look for its processes in /proc and go through each; a byte
#: in ``scans-TOKEN`` per look, until the test puts ``stop-TOKEN`` in the workspace
#: (``_hunt_watched``: once it saw the verifier waiting and the hunt look at it a few
#: times), or 20 s.
HUNT = r'''
import ctypes, signal
libc = ctypes.CDLL(None, use_errno=True)
seen, did = set(), []
deadline = time.monotonic() + 20
scans = open(os.path.join(ws, "scans-TOKEN"), "wb", buffering=0)
while time.monotonic() < deadline and not os.path.exists(os.path.join(ws, "stop-TOKEN")):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"gitevals-verifier" not in f.read():
                    continue
        except OSError:
            continue
        seen.add(pid)
        for what, fn in (
                ("read tests", lambda: open(f"/proc/{pid}/root/tests/test.sh").read()),
                ("write reward", lambda: open(f"/proc/{pid}/root/logs/verifier/reward.txt",
                                              "w").write("1\n")),
                ("cwd", lambda: os.listdir(f"/proc/{pid}/cwd")),
                ("fds", lambda: os.listdir(f"/proc/{pid}/fd")),
                ("environ", lambda: open(f"/proc/{pid}/environ", "rb").read()),
                ("ptrace", lambda: libc.ptrace(16, int(pid), None, None) == 0
                 or (_ for _ in ()).throw(OSError())),
                ("signal", lambda: os.kill(int(pid), signal.SIGSTOP))):
            try:
                fn()
                did.append(f"{what} {pid}")
            except Exception:
                pass
    scans.write(b".")
    time.sleep(0.05)
print(f"SAW {len(seen)} DID {did}", file=sys.stderr, flush=True)
with open(os.path.join(ws, "report.txt"), "w") as f:
    f.write(f"saw {len(seen)} did {did}\n")
'''


#: Looks the hunt makes after the test saw the verifier's sandboxed process waiting.
LOOKS = 5


@contextmanager
def _hunt_watched(token: str) -> Iterator[list[str]]:
    """While the block runs the CLI: wait for the verifier's process in its sandbox (a
    descendant of this process, not bubblewrap itself) and for the hunt's workspace,
    let the hunt look ``LOOKS`` more times, then stop it. Yields what was seen, for the
    test to assert the hunt overlapped a waiting verifier (not only a fixed time)."""
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        ws, verifier, scans = None, None, 0
        while not done.wait(0.01):
            if ws is None:
                ws = next(iter(Path(tempfile.gettempdir()).glob(
                    f"gitevals-*/tasks/*/*/workspace/scans-{token}")), None)
            elif verifier is None:
                verifier = _sandboxed_verifier()
                if verifier is not None:
                    scans = ws.stat().st_size
                    seen.append("verifier")
            if verifier is not None and ws is not None and ws.stat().st_size >= scans + LOOKS:
                seen.append(f"{LOOKS} looks")
                (ws.parent / f"stop-{token}").touch()
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


def _sandboxed_verifier() -> int | None:
    """A waiting verifier beneath this process: its ``gitevals-verifier`` shell, not the
    bubblewrap that started it."""
    for pid in descendants(os.getpid()):
        with suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
            if b"gitevals-verifier" in argv and not argv[0].endswith(b"bwrap"):
                return pid
    return None


def test_a_target_cannot_see_read_trace_or_signal_the_verifier(who: Who) -> None:
    # the verifier's sandbox is started while the target works: the target hunts it then
    token = uuid.uuid4().hex
    commit_attack(who, HUNT.replace("TOKEN", token), test_sh="cat /app/report.txt; " + HONEST)
    with _hunt_watched(token) as watched:
        res = who.cli("run")
    assert watched == ["verifier", f"{LOOKS} looks"]  # it hunted while the verifier waited
    assert res.code == 1, res.out + res.err
    trial = only_trial(who)
    assert trial["task"]["state"] == "max_iterations_reached", trial["task"]
    assert trial["task"]["final_reward"] == 0.0
    (it,) = trial["task"]["iterations"]
    assert it["error"] is None and it["rewards"] == {"reward": 0.0}
    assert "saw 0 did []" in it["verifier_tail"], it["verifier_tail"]


#: The same hunt as a ``python`` target (``module:function``): its module imports in
#: the trial's namespace, not in the warm worker outside it.
PYTHON_TARGET = """\
import os, sys, time


def respond(messages):
    ws = messages[-1]["workspace"]
{hunt}
    return {{"final_answer": "done", "tool_calls": [], "hooks": [], "error": None}}
"""


def test_a_python_target_hunts_from_its_namespace_too(who: Who) -> None:
    commit_attack(who, "pass", test_sh="cat /app/report.txt; " + HONEST)
    token = uuid.uuid4().hex
    body = "\n".join("    " + line for line in HUNT.replace("TOKEN", token).strip("\n")
                     .splitlines())
    who.repo.commit({
        "hunter.py": PYTHON_TARGET.format(hunt=body),
        "pyproject.toml": ('[tool.gitevals.target]\npython = "hunter:respond"\n'
                           f'interpreter = "{who.python}"\n')})
    with _hunt_watched(token) as watched:
        res = who.cli("run")
    assert watched == ["verifier", f"{LOOKS} looks"]  # it hunted while the verifier waited
    assert res.code == 1, res.out + res.err
    (it,) = only_trial(who)["task"]["iterations"]
    assert "saw 0 did []" in it["verifier_tail"], it["verifier_tail"]
    assert it["rewards"] == {"reward": 0.0}


#: A verifier that forks (sleeping children, so the test stays gentle on the machine)
#: until the kernel refuses, or well past its limit; then scores 0. ``{token}`` is on
#: the command line of each of its processes: ``_left`` counts this test's leftovers
#: only, not those of a bomb another test runs at the same time.
VERIFIER_BOMB = f'''\
python3 - {{token}} <<'EOF'
import os, time
n = 0
while n < {PIDS * 3}:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    n += 1
print("FORKED", n, flush=True)
EOF
{HONEST}'''

#: A target that starts threads (each a task, as a process is, to the kernel's limits and
#: to a pids cgroup; cheaper on the machine than processes) until refused.
TARGET_BOMB = f'''
import threading
n = 0
while n < {TARGET_PIDS * 2}:
    try:
        threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
    except RuntimeError:
        break
    n += 1
with open(os.path.join(ws, "threads.txt"), "w") as f:
    f.write(str(n))
'''


def test_a_fork_bomb_in_the_verifier_stops_at_its_limit_and_leaves_nothing(who: Who) -> None:
    token = f"gitevals-bomb-{uuid.uuid4().hex}"
    commit_attack(who, "pass", test_sh=VERIFIER_BOMB.replace("{token}", token))
    started = time.monotonic()
    res = who.cli("run")
    took = time.monotonic() - started
    assert res.code == 1, res.out + res.err
    trial = only_trial(who)
    assert not trial["passed"]
    (it,) = trial["task"]["iterations"]
    forked = int(it["verifier_tail"].split("FORKED", 1)[1].split()[0])
    assert 0 < forked < PIDS, it["verifier_tail"]  # refused at the limit, not at 3 x
    assert took < 90
    assert subprocess.run(["true"], check=False).returncode == 0  # the host still forks
    assert _left(token) == 0


def test_a_fork_bomb_in_the_target_stops_at_its_limit(who: Who) -> None:
    token = f"gitevals-bomb-{uuid.uuid4().hex}"
    commit_attack(who, TARGET_BOMB, test_sh="echo threads $(cat /app/threads.txt); " + HONEST)
    who.repo.commit({"pyproject.toml": (  # the same target, with the token on its command line
        f'[tool.gitevals.target]\ncommand = ["{who.python}", "-S", "target.py", "{token}"]\n')})
    res = who.cli("run")
    assert res.code == 1, res.out + res.err
    (it,) = only_trial(who)["task"]["iterations"]
    threads = int(it["verifier_tail"].split("threads", 1)[1].split()[0])
    assert 0 < threads < TARGET_PIDS, it["verifier_tail"]
    assert _left(token) == 0


def _left(token: str, grace: float = 0.5) -> int:
    """Processes of this test's bomb still alive: any with ``token`` on its command line
    (the verifier's sleeping children, the target with its threads), counted as soon as
    none is left, or after ``grace`` s (a process killed has that long to go)."""
    deadline = time.monotonic() + grace
    while (out := _count(token)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return out


def _count(token: str) -> int:
    out = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        out += token.encode() in argv.split(b"\0")
    return out


@pytest.fixture
def root_only() -> Iterator[Path]:
    """A file only root may read, in a directory of the host the sandbox shows (/opt)."""
    if os.geteuid() != 0:
        pytest.skip("only root can make a file only root may read")
    top = Path("/opt") / f"gitevals-test-{uuid.uuid4().hex[:8]}"
    top.mkdir(mode=0o755)
    try:
        secret = top / "credential"
        secret.write_text("root's secret\n")
        secret.chmod(0o600)
        yield secret
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_verifier_started_by_root_reads_no_root_only_file(who: Who, root_only: Path) -> None:
    # the target also plants a hard link to it in the workspace: the workspace is handed
    # to the verifier's user, but never a file that is also somewhere else
    attack = (f"try:\n    os.link({str(root_only)!r}, os.path.join(ws, 'planted'))\n"
              "except OSError:\n    pass")
    test_sh = (f"id -u; cat {root_only} /app/planted 2>&1; touch /app/made-by-verifier && "
               f"echo wrote; {HONEST}")
    commit_attack(who, attack, test_sh=test_sh)
    res = who.cli("run")
    assert res.code == 1, res.out + res.err
    (it,) = only_trial(who)["task"]["iterations"]
    tail = it["verifier_tail"]
    assert "root's secret" not in tail, tail
    assert tail.split()[0] == "65534", tail  # nobody, whoever started gitevals
    assert "wrote" in tail, tail  # the workspace is the verifier's to write
    st = root_only.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)  # the host file is as it was
