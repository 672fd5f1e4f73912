"""``[agent] sandbox = true`` (#23 item 12): the target itself runs in bubblewrap with the
task's workspace at ``workdir``, through the real CLI: it does the work there, writes
nothing else, and sees no process of the host."""

from __future__ import annotations

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

#: Writes 42 into the workspace it is told of, tries to write beside it, and reports
#: what it could do and see.
TARGET = '''import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    with open(os.path.join(msg["workspace"], "answer.txt"), "w") as f:
        f.write("42\\n")
    tried = {}
    for where in ("escape.txt", os.path.join(os.environ["HOST_DIR"], "escape.txt")):
        try:
            open(where, "w").close()
            tried[where] = "written"
        except OSError as exc:
            tried[where] = exc.strerror
    seen = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "host_pid": os.path.exists("/proc/" + os.environ["HOST_PID"]), "tried": tried}
    print(json.dumps({"final_answer": json.dumps(seen), "tool_calls": [], "hooks": [],
                      "error": None, "echo": msg}), flush=True)
'''
CHECK = ('#!/bin/bash\nif [ "$(cat /app/answer.txt)" = 42 ]; then echo 1; else echo 0; fi'
         ' > /logs/verifier/reward.txt\n')


def _run(repo: Repo, sandbox: bool, *extra: str,
         program: str = sys.executable) -> tuple[int, dict[str, Any]]:
    base = "evals/tasks/t"
    repo.commit({"target.py": TARGET, "evals/.gitignore": "results/\n",
                 "pyproject.toml": ('[tool.gitevals.target]\ncommand = '
                                    f'["{program}", "target.py"]\n'),
                 f"{base}/task.toml": f"[agent]\nsandbox = {str(sandbox).lower()}\n",
                 f"{base}/instruction.md": "Write 42.\n", f"{base}/tests/test.sh": CHECK,
                 f"{base}/environment/seed": "x\n", f"{base}/solution/solve.sh": "true\n"})
    env = [f"HOST_PID={os.getpid()}", f"HOST_DIR={repo.path}"]
    res = run_cli("run", *extra, *[x for e in env for x in ("--target-env", e)],
                  cwd=repo.path)
    paths = sorted((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    (entry,) = load_artifact(paths[-1])["cases"]
    return res.code, dict(entry)


def test_a_sandboxed_target_works_in_its_workspace_and_nowhere_else(repo: Repo) -> None:
    import json

    code, entry = _run(repo, True)
    (trial,) = entry["scenarios"][0]["results"]
    assert code == 0 and trial["passed"] is True, trial["error"]
    assert entry["task"]["agent_sandbox"] is True
    turn = trial["transcript"]["turns"][0]
    assert turn["echo"]["workspace"] == "/app"  # the workspace as the target sees it
    seen = json.loads(turn["final_answer"])
    assert not seen["host_pid"] and max(seen["pids"]) < 100  # a pid namespace of its own
    # the commit is read-only; the repository (under the host's /tmp here) is not there
    assert seen["tried"]["escape.txt"] == "Read-only file system"
    assert "written" not in seen["tried"].values(), seen["tried"]
    assert not (repo.path / "escape.txt").exists()
    # without it (a pid namespace only), the same target writes beside its workspace
    code, entry = _run(repo, False)
    assert (repo.path / "escape.txt").exists()
    assert "agent_sandbox" not in entry["task"]


def test_a_target_under_tmp_is_refused_in_one_line_not_a_crash(repo: Repo,
                                                                tmp_path: Path) -> None:
    """The sandbox has a /tmp of its own: a program (a virtualenv's python) under the
    host's /tmp cannot start in it. Said at the start, with what to do, instead of
    bubblewrap's ``execvp ... No such file or directory`` as a crash of the target."""
    link = tmp_path / "venv" / "bin" / "python"  # tmp_path is under /tmp
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    assert str(link).startswith("/tmp/")
    code, entry = _run(repo, True, program=str(link))
    (trial,) = entry["scenarios"][0]["results"]
    assert code == 1
    assert trial["error"] == {
        "kind": "target_start",
        "message": f"[agent] sandbox = true: the target's program {link} is under /tmp, "
                   "which the sandbox replaces with an empty one of its own: install it "
                   "elsewhere (e.g. a virtualenv under your home), or set [agent] sandbox "
                   "= false"}
    # without the agent's sandbox the same program runs
    code, entry = _run(repo, False, program=str(link))
    assert code == 0, entry["scenarios"][0]["results"][0]["error"]


def test_a_sandboxed_target_needs_the_sandbox(repo: Repo) -> None:
    code, entry = _run(repo, True, "--no-sandbox")
    assert code == 1
    (trial,) = entry["scenarios"][0]["results"]
    assert trial["error"]["kind"] == "target_start"
    assert "run without --no-sandbox" in trial["error"]["message"]
    assert entry["task"]["agent_sandbox"] is False
