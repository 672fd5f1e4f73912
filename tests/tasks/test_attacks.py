"""The sandbox under attack, in the spirit of Harbor's and gVisor's escape suites: a hostile
verifier and a hostile target try every write, read, mount, ptrace, network and process
escape they can think of, through the real CLI, as root and as an unprivileged user.
Each attempt that succeeds prints ``ESCAPED <what>``; none may.

One run per side keeps the suite to seconds: every attempt is a line of one script.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gitevals.run.artifact import load as load_artifact
from tests.support.users import Who

#: The hostile verifier (Python, as the host's python3 inside the sandbox). ``{port}``: a
#: host listener on 127.0.0.1; ``{pid}``: a host process; ``{token}``: a name to write.
VERIFIER = r'''
import ctypes, errno, os, socket, subprocess, sys

def escaped(what):
    print("ESCAPED", what, flush=True)

def attempt(what, fn):
    try:
        fn()
    except Exception:
        return
    escaped(what)

def write(path, data=b"x"):
    with open(path, "wb") as f:
        f.write(data)

def read(path):
    with open(path, "rb") as f:
        if not f.read(64):
            raise OSError("empty")

def sh(cmd):
    if subprocess.run(["sh", "-c", cmd + " 2>/dev/null"], stdin=subprocess.DEVNULL,
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise OSError(cmd)

libc = ctypes.CDLL(None, use_errno=True)

def call(name, *args):
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), name)

# -- writes outside the workspace
for d in ("/usr", "/etc", "/opt", "/", "/tests", "/proc", "/dev", "/usr/lib", "/bin",
          "/proc/sys/kernel"):
    attempt("write " + d, lambda d=d: write(os.path.join(d, "{token}")))
attempt("rewrite /tests/test.sh", lambda: write("/tests/test.sh"))
attempt("chmod /usr/bin/env", lambda: os.chmod("/usr/bin/env", 0o777))
attempt("chown /etc/passwd", lambda: os.chown("/etc/passwd", 1, 1))
for knob in ("kernel/core_pattern", "kernel/hostname", "vm/drop_caches"):  # opened only
    attempt("open /proc/sys/" + knob, lambda k=knob: os.close(os.open("/proc/sys/" + k,
                                                                      os.O_WRONLY)))
attempt("write /proc/sysrq-trigger", lambda: write("/proc/sysrq-trigger", b"h"))
attempt("mknod", lambda: os.mknod("/tmp/sda", 0o600 | 0o060000, os.makedev(8, 0)))
attempt("hard link /etc/passwd", lambda: os.link("/etc/passwd", "/app/passwd-link"))
attempt("write via /proc/1/root", lambda: write("/proc/1/root/usr/{token}"))
# -- mounts, roots and namespaces
for target in ("/usr", "/etc", "/tests", "/", "/app", "/proc"):
    attempt("remount " + target, lambda t=target: call(
        "mount", None, t.encode(), None, 0x20 | 0x1000, None))  # MS_REMOUNT | MS_BIND
attempt("mount tmpfs", lambda: call("mount", b"none", b"/tmp", b"tmpfs", 0, None))
attempt("mount proc", lambda: call("mount", b"proc", b"/tmp", b"proc", 0, None))
attempt("umount /tests", lambda: call("umount2", b"/tests", 2))
attempt("pivot_root", lambda: call("pivot_root", b"/tmp", b"/tmp"))
attempt("chroot", lambda: call("chroot", b"/tmp"))
attempt("unshare user", lambda: call("unshare", 0x10000000))
attempt("unshare mount", lambda: call("unshare", 0x00020000))
attempt("setns", lambda: call("setns", os.open("/proc/1/ns/mnt", os.O_RDONLY), 0))
attempt("unshare -Urm remount", lambda: sh("unshare -Urm mount -o remount,rw,bind /usr"))
attempt("open_by_handle_at", lambda: call("open_by_handle_at", -100, None, 0))
attempt("keyctl", lambda: call("syscall", 250, 0, 0, 0, 0) if os.uname().machine
        == "x86_64" else (_ for _ in ()).throw(OSError()))
# -- reads of host secrets
for path in ("/etc/shadow", "/etc/gshadow", "/root/.bashrc", "/root/.profile",
             "/proc/kcore", "/dev/mem", "/sys/kernel/notes", "{secret}"):
    attempt("read " + path, lambda p=path: read(p))
for path in ("/root", "/home", "/work", "/run", "/var", "/sys", "/mnt", "/media"):
    attempt("list " + path, lambda p=path: os.listdir(p) or (_ for _ in ()).throw(OSError()))
# -- the network and the host's processes
attempt("connect to the host", lambda: socket.create_connection(("127.0.0.1", {port}), 1))
attempt("connect outside", lambda: socket.create_connection(("1.1.1.1", 53), 1))
attempt("signal a host process", lambda: os.kill({pid}, 0))
attempt("ptrace a host process", lambda: call("ptrace", 16, {pid}, None, None))  # ATTACH
attempt("see host processes", lambda: len([p for p in os.listdir("/proc") if p.isdigit()])
        <= 10 and (_ for _ in ()).throw(OSError()))
# -- resources: the bounded tmpfs fills, the read-only root does not take a byte
def fill(path):
    with open(path, "wb") as f:
        for _ in range(({logs_mb} + 1) * 4):
            f.write(b"\0" * (256 << 10))
attempt("fill /logs/verifier past its bound", lambda: fill("/logs/verifier/big"))
os.unlink("/logs/verifier/big")
# -- what it leaves behind must not outlive the call
subprocess.Popen(["bash", "-c", "exec -a {token}-left sleep 300"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
print("ATTEMPTS DONE", flush=True)
write("/logs/verifier/reward.txt", b"0\n")
'''

#: The hostile target: beyond the issue's three forgeries (test_trust.py), it hunts every
#: host path bubblewrap was given, and every descriptor it holds, for the tests and logs.
TARGET = r'''
import json, os, sys

FORGED = b"echo 1 > /logs/verifier/reward.txt\n"

def mine(pid):
    """A bubblewrap of this run: a child of the process that started this target."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rpartition(b")")[2].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    return argv if ppid == os.getppid() and argv[0].endswith(b"bwrap") else None

def hunt(report):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        argv = mine(pid)
        if argv is None:
            continue
        for arg in argv:  # every path of a run's own directories it names
            path = arg.decode(errors="replace")
            if not path.startswith("/") or "gitevals-" not in path:
                continue
            for name, data in (("reward.txt", b"1\n"), ("test.sh", FORGED)):
                try:
                    with open(os.path.join(path, name), "wb") as f:
                        f.write(data)
                    report.append(f"{path}/{name}")
                except OSError:
                    pass
        for fd in os.listdir(f"/proc/{pid}/fd"):  # the tests it holds, in memory
            link = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(link).startswith("/memfd:"):
                    continue
                with open(link, "r+b") as f:
                    f.write(FORGED)
                report.append(f"fd {fd} of {pid}")
            except OSError:
                pass

for line in sys.stdin:
    msg = json.loads(line)
    report = []
    hunt(report)
    print(json.dumps({"final_answer": "wrote " + ", ".join(report), "tool_calls": [],
                      "hooks": [], "error": None}), flush=True)
'''


def _commit(who: Who, test_sh: str, target: str) -> None:
    base = "evals/tasks/t"
    who.repo.commit({
        "target.py": target,
        "pyproject.toml": f'[tool.gitevals.target]\ncommand = ["{who.python}", "target.py"]\n',
        "evals/.gitignore": "results/\n", f"{base}/task.toml": "max_iterations = 1\n",
        f"{base}/instruction.md": "Do it.\n", f"{base}/tests/test.sh": test_sh,
        f"{base}/tests/attack.py": VERIFIER if "attack.py" in test_sh else "pass\n",
        f"{base}/environment/seed.txt": "seed\n"})


def _trial(who: Who) -> dict[str, Any]:
    (path,) = (who.repo.path / "evals" / "results").glob("*.json")
    (case,) = load_artifact(path)["cases"]
    return dict(case["scenarios"][0]["results"][0])


def _alive(token: str) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    out.append(int(pid))
        except OSError:
            continue
    return out


def test_a_hostile_verifier_escapes_nothing(who: Who, tmp_path: Path) -> None:
    from gitevals.tasks.sandbox import LOGS_BYTES

    token = f"gitevals-attack-{os.getpid()}-{who.name}"
    secret = tmp_path / "secret"  # outside everything the sandbox shows
    secret.write_text("the host's secret\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    script = VERIFIER.format(token=token, port=listener.getsockname()[1], pid=host.pid,
                             secret=secret, logs_mb=LOGS_BYTES >> 20)
    _commit(who, "python3 /tests/attack.py\n", "")
    who.repo.commit({"evals/tasks/t/tests/attack.py": script,
                     "target.py": TARGET})
    try:
        started = time.monotonic()
        res = who.cli("run")
        took = time.monotonic() - started
        assert res.code == 1, res.out + res.err
        trial = _trial(who)
        (it,) = trial["task"]["iterations"]
        tail = it["verifier_tail"]
        assert "ATTEMPTS DONE" in tail, tail  # every attempt ran
        assert "ESCAPED" not in tail, tail
        assert it["reward"] == 0.0
        host.poll()
        assert host.returncode is None  # the host process was not touched
        try:
            listener.accept()
            raise AssertionError("the sandbox reached the host's listener")
        except BlockingIOError:
            pass
        assert took < 60
    finally:
        host.kill()
        host.wait()
        listener.close()
        for d in ("/usr", "/etc", "/opt", "/"):
            leaked = Path(d, token)
            if leaked.exists():
                leaked.unlink()
                raise AssertionError(f"the verifier wrote {leaked}")
    assert _alive(token + "-left") == []


def test_a_hostile_target_reaches_no_tests_logs_or_reward(who: Who) -> None:
    # an honest verifier that always scores 0, slow enough for a target left running
    _commit(who, "echo 0 > /logs/verifier/reward.txt\nsleep 0.2\n", TARGET)
    res = who.cli("run")
    assert res.code == 1, res.out + res.err
    trial = _trial(who)
    assert trial["task"]["state"] == "max_iterations_reached", trial["task"]
    assert trial["task"]["final_reward"] == 0.0
    answer = trial["transcript"]["turns"][0]["final_answer"]
    assert answer == "wrote ", answer  # nothing it found could be written
