"""Issue 25's findings on the verifier's sandbox and the reward, through the real CLI, each
as root and as an unprivileged user: the verifier cannot remount, keep capabilities or
read host secrets; the target cannot reach the tests, the logs or the reward; a target
that swaps its workspace for a link or pre-creates directories loses nothing of the run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.artifact import load as load_artifact
from tests.support.trust import HONEST, commit_attack, only_trial
from tests.support.users import Who


def _tails(trial: dict[str, Any]) -> str:
    return "\n".join(it["verifier_tail"] for it in trial["task"]["iterations"])


# -- 1. the verifier keeps no capability and cannot mount ------------------------------


REMOUNT = '''\
grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
for d in /usr /etc /tests /; do
  mount -o remount,rw,bind "$d" 2>/dev/null && echo "REMOUNTED $d"
  mount -o remount,rw "$d" 2>/dev/null && echo "REMOUNTED $d"
done
touch /usr/{token} 2>/dev/null && echo WROTE-USR
touch /etc/{token} 2>/dev/null && echo WROTE-ETC
unshare -Urm sh -c 'mount -o remount,rw,bind /usr && touch /usr/{token}' 2>/dev/null \
  && echo UNSHARED-REMOUNT
mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED-TMPFS
echo 0 > /logs/verifier/reward.txt
'''


def test_the_verifier_has_no_capability_and_cannot_remount(who: Who) -> None:
    token = f"gitevals-escape-{os.getpid()}-{who.name}"
    commit_attack(who, "pass", test_sh=REMOUNT.format(token=token))
    try:
        res = who.cli("run")
        assert res.code == 1, res.err
        tail = _tails(only_trial(who))
    finally:
        for d in ("/usr", "/etc"):
            Path(d, token).unlink(missing_ok=True)
            assert not Path(d, token).exists()
    lines = dict(line.split(":", 1) for line in tail.splitlines() if ":" in line)
    assert {k: v.strip() for k, v in lines.items() if k.startswith("Cap")} == {
        "CapEff": "0" * 16, "CapPrm": "0" * 16, "CapBnd": "0" * 16}, tail
    assert lines["Seccomp"].strip() == "2", tail  # a filter is loaded
    assert lines["NoNewPrivs"].strip() == "1", tail
    for word in ("REMOUNTED", "WROTE", "UNSHARED", "MOUNTED"):
        assert word not in tail, tail


# -- 2. the target has no path to the tests, the logs or the reward -------------------

#: Three forgeries, each as issue 25 found it, against the layout of the host copies.
FORGE = {
    # swap the logs directory the verifier is bound to for one holding reward 1
    "logs-before": '''
base = os.path.dirname(ws)
for name in os.listdir(base):
    if name.startswith("logs"):
        os.rename(os.path.join(base, name), os.path.join(base, "old-" + name))
        os.mkdir(os.path.join(base, name))
        with open(os.path.join(base, name, "reward.txt"), "w") as f:
            f.write("1\\n")
''',
    # rewrite the host copy of the tests before the verifier runs
    "tests-before": '''
for root, _dirs, files in os.walk(os.path.dirname(ws)):
    for n in files:
        if n == "test.sh":
            with open(os.path.join(root, n), "w") as f:
                f.write("echo 1 > /logs/verifier/reward.txt\\n")
''',
    # overwrite reward.txt after the verifier wrote it, from a process left behind
    "reward-after": '''
code = ("import os, sys, time\\n"
        "base = sys.argv[1]; end = time.monotonic() + 8\\n"
        "while time.monotonic() < end:\\n"
        "    for root, dirs, files in os.walk(base):\\n"
        "        for n in files:\\n"
        "            if n == 'reward.txt':\\n"
        "                try:\\n"
        "                    open(os.path.join(root, n), 'w').write('1\\\\n')\\n"
        "                except OSError: pass\\n"
        "    time.sleep(0.001)\\n")
subprocess.Popen([sys.executable, "-c", code, os.path.dirname(ws)],
                 start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.2)
''',
}


@pytest.mark.parametrize("way", list(FORGE))
def test_the_target_cannot_forge_its_reward(who: Who, way: str) -> None:
    slow = "echo 0 > /logs/verifier/reward.txt\nsleep 0.3\n"  # room for the race
    commit_attack(who, FORGE[way], test_sh=slow)
    res = who.cli("run")
    assert res.code == 1, res.out + res.err
    trial = only_trial(who)
    assert trial["task"]["state"] == "max_iterations_reached", trial["task"]
    assert trial["task"]["final_reward"] == 0.0 and trial["passed"] is False


# -- 3. a workspace swapped for a link is refused, never bound ------------------------

SWAP = '''
if msg["iteration"] == 0:
    os.rename(ws, ws + ".moved")
    os.symlink(os.environ["OUTSIDE"], ws)
'''


def test_a_workspace_swapped_for_a_link_is_refused(who: Who) -> None:
    outside = who.repo.path.parent / "outside"
    outside.mkdir()
    who.env["OUTSIDE"] = str(outside)
    commit_attack(who, SWAP, test_sh="touch /app/pwned\n" + HONEST, toml="max_iterations = 2\n")
    res = who.cli("run")
    assert res.code == 1, res.out + res.err
    assert not (outside / "pwned").exists()
    trial = only_trial(who)
    assert trial["task"]["state"] == "error"
    assert trial["error"]["kind"] == "workspace_error", trial["error"]
    assert "no longer the directory the trial made: the target replaced it with a " \
           "symbolic link" in trial["error"]["message"], trial["error"]


# -- 4. the verifier sees no host secret and a bounded /tmp ---------------------------

SECRETS = '''\
cat /etc/shadow /etc/gshadow 2>/dev/null | head -c 200 | grep -q . && echo READ-SHADOW
ls /root 2>/dev/null | grep -q . && echo SAW-ROOT
ls /home 2>/dev/null | grep -q . && echo SAW-HOME
ls -d /work /run /var /srv 2>/dev/null | grep -q . && echo SAW-HOST-DIRS
for d in /tmp /logs/verifier; do
  python3 -c "import os,sys;s=os.statvfs(sys.argv[1]);print(sys.argv[1],s.f_blocks*s.f_frsize)" "$d"
done
touch /newdir 2>/dev/null && echo WROTE-ROOTFS
id -un 2>/dev/null
echo 0 > /logs/verifier/reward.txt
'''


def test_the_verifier_sees_no_host_secret_and_a_bounded_tmp(who: Who) -> None:
    commit_attack(who, "pass", test_sh=SECRETS)
    res = who.cli("run")
    assert res.code == 1, res.err
    tail = _tails(only_trial(who))
    for word in ("READ-SHADOW", "SAW-ROOT", "SAW-HOME", "SAW-HOST-DIRS", "WROTE-ROOTFS"):
        assert word not in tail, tail
    from gitevals.tasks.sandbox import LOGS_BYTES, TMP_BYTES

    sizes = dict(line.split() for line in tail.splitlines() if line.startswith(("/tmp ", "/logs")))
    assert int(sizes["/tmp"]) == TMP_BYTES and int(sizes["/logs/verifier"]) == LOGS_BYTES
    assert TMP_BYTES <= 1 << 30


# -- 5. what a target pre-creates costs nothing of the run ----------------------------

PRECREATE = '''
base = os.path.dirname(ws)
for i in range(3):
    for a in (1, 2):
        os.makedirs(os.path.join(base, f"logs-{i}-{a}"), exist_ok=True)
'''


def test_a_target_that_precreates_directories_loses_nothing(who: Who) -> None:
    commit_attack(who, PRECREATE, toml="max_iterations = 3\n")
    res = who.cli("run")
    assert res.code == 1, res.out + res.err  # a failed trial, not a lost run
    trial = only_trial(who)
    assert trial["task"]["state"] == "max_iterations_reached", trial
    assert [it["reward"] for it in trial["task"]["iterations"]] == [0.0, 0.0, 0.0]


# -- 11 and 15. the reward is read strictly, in one clear line ------------------------


#: What a verifier writes to reward.txt -> what the run makes of it (None: not a reward).
REWARDS = {"0_1": None, "\u0661": None, "\u0661.\u0660": None, "0x1": None, "infinity": None,
           "+1": None, "1e0": 1.0, "10e-1": 1.0, "1.0": 1.0, "1": 1.0, " 1.000": 1.0,
           ".5": 0.5, "5E-1": 0.5}


#: A python target that does nothing (``module:function``, forked per trial from one
#: import): what the reward tests below read is the verifier's file, not the target.
IDLE = {"idle.py": 'def respond(messages):\n    return {"final_answer": "done", "tool_calls": '
                   '[], "hooks": [], "error": None}\n',
        "pyproject.toml": '[tool.gitevals.target]\npython = "idle:respond"\n'}


def test_a_reward_is_ascii_decimal_only(me: Who) -> None:
    names = {f"r{n}": written for n, written in enumerate(REWARDS)}
    extra = dict(IDLE)
    for name, written in names.items():
        extra |= {f"evals/tasks/{name}/task.toml": "max_iterations = 1\n",
                  f"evals/tasks/{name}/instruction.md": "Do it.\n",
                  f"evals/tasks/{name}/tests/test.sh":
                  f"printf '%s\\n' '{written}' > /logs/verifier/reward.txt\n"}
    commit_attack(me, "pass", extra=extra)
    res = me.cli("run", "-j", "4", *names)
    assert res.code == 1, res.err
    results = sorted((me.repo.path / "evals" / "results").glob("*.json"))
    trials = {c["name"]: c["scenarios"][0]["results"][0]
              for c in load_artifact(results[-1])["cases"]}
    for name, written in names.items():
        trial, expected = trials[name], REWARDS[written]
        if expected is None:
            assert trial["error"]["kind"] == "reward_unreadable", (written, trial)
            assert f"holds {written.strip()!r}, not a decimal number" in \
                trial["error"]["message"], trial["error"]
        else:
            assert trial["error"] is None and trial["task"]["final_reward"] == expected, \
                (written, trial)


def test_a_reward_json_with_a_duplicate_key_is_refused(me: Who) -> None:
    doc = '{"reward": 0.0, "reward": 1.0}'
    commit_attack(me, "pass", test_sh=f"echo '{doc}' > /logs/verifier/reward.json\n",
            toml='max_iterations = 1\n[verifier]\nreward_format = "reward_json"\n')
    res = me.cli("run")
    assert res.code == 1, res.out + res.err
    trial = only_trial(me)
    assert trial["error"]["kind"] == "reward_unreadable"
    assert "'reward' twice" in trial["error"]["message"], trial["error"]


def test_a_symlinked_reward_file_says_so(me: Who) -> None:
    commit_attack(me, "pass", test_sh="echo 1 > /tmp/r\nln -s /tmp/r /logs/verifier/reward.txt\n")
    res = me.cli("run")
    assert res.code == 1, res.out + res.err
    message = only_trial(me)["error"]["message"]
    assert "/logs/verifier/reward.txt is a symbolic link, not a regular file" in message
    assert "Too many levels" not in message
    shown = json.dumps(only_trial(me))
    assert "Traceback" not in shown and shutil.which("bwrap")


OLD_BWRAP = """#!/bin/sh
for a in "$@"; do
  [ "$a" = --size ] && {{ echo "bwrap: Unknown option --size" >&2; exit 1; }}
done
exec {bwrap} "$@"
"""


def test_a_bubblewrap_too_old_to_confine_is_refused_before_the_run(me: Who,
                                                                  tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(OLD_BWRAP.format(bwrap=shutil.which("bwrap")))
    fake.chmod(0o755)
    commit_attack(me, "pass")
    me.env["GITEVALS_BWRAP"] = str(fake)
    res = me.cli("run")
    assert res.code == 2, res.out + res.err
    (line,) = res.err.splitlines()
    assert "cannot make a sandbox here (bwrap: Unknown option --size)" in line, line
    assert not (me.repo.path / "evals" / "results").exists()
