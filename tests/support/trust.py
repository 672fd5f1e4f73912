"""Attacks on the task sandbox: a target running a test's attack each turn, an honest
verifier, and the one trial of the run."""

from __future__ import annotations

import os
from typing import Any

from gitevals.run.artifact import load as load_artifact
from tests.support.users import Who

#: The honest verifier of these tests: it always scores 0.
HONEST = "echo 0 > /logs/verifier/reward.txt\n"


#: A target (the protocol: one JSON line in, one out) whose attack is ``ATTACK``, run on
#: every turn with ``ws`` (the workspace) and ``msg`` bound.
TARGET = '''\
import json, os, subprocess, sys, time

def attack(ws, msg):
{attack}

for line in sys.stdin:
    msg = json.loads(line)
    attack(msg["workspace"], msg)
    print(json.dumps({{"final_answer": "done", "tool_calls": [], "hooks": [],
                      "error": None}}), flush=True)
'''


def commit_attack(who: Who, attack: str, test_sh: str = HONEST, toml: str = "max_iterations = 1\n",
            extra: dict[str, str] | None = None) -> None:
    body = "\n".join("    " + line for line in attack.strip("\n").splitlines())
    base = "evals/tasks/t"
    who.repo.commit({
        "target.py": TARGET.format(attack=body),
        # -S: the target imports only the standard library; no site to set up each start
        "pyproject.toml": ('[tool.gitevals.target]\n'
                           f'command = ["{who.python}", "-S", "target.py"]\n'),
        "evals/.gitignore": "results/\n",
        f"{base}/task.toml": toml, f"{base}/instruction.md": "Do it.\n",
        f"{base}/tests/test.sh": test_sh, f"{base}/environment/seed.txt": "seed\n",
        f"{base}/solution/solve.sh": "true\n", **(extra or {})})


def only_trial(who: Who) -> dict[str, Any]:
    results = sorted((who.repo.path / "evals" / "results").glob("*.json"),
                     key=os.path.getmtime)
    assert results, "the run left no artifact"
    (case,) = load_artifact(results[-1])["cases"]
    return dict(case["scenarios"][0]["results"][0])
