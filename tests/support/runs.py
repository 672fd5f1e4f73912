"""``gitevals run`` on a real repository: the example harness (``tests/data/run_harness.py``)
and its settings, case texts, and the artifacts a run leaves."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, built_once, git
from tests.support.paths import HARNESS_SETTINGS_NO_SITE, RUN_HARNESS

HARNESS = RUN_HARNESS


#: The harness's interpreter is started with ``-S`` (it imports only the standard library):
#: still a command target, one Python started per conversation, without site's work (the
#: venv's .pth files, about two thirds of a start).
SETTINGS = HARNESS_SETTINGS_NO_SITE

#: The same settings, under the name the modules that asked for ``-S`` first import.
SETTINGS_NO_SITE = HARNESS_SETTINGS_NO_SITE

#: The example harness's answering scenarios (ok*, flaky*, slow* and any other id that
#: answers) as a python target (``AGENT_SETTINGS``): imported once a run and forked per
#: conversation, where the command harness starts a Python for each. The same answer,
#: tool calls, hooks, tokens and echo of the turn for the same turn. For tests that are
#: not about command targets; the misbehaving ids (crash, hang, garbage, half, silent)
#: are the command harness's alone.
AGENT = """\
import time


def respond(messages):
    msg = {k: messages[-1][k] for k in ("text", "turn", "case", "scenario", "trial")}
    sid = msg["scenario"]
    if sid.startswith("slow"):
        time.sleep(0.3)
    answer = "Paris" if "France" in msg["text"] else "answer: " + msg["text"]
    if sid.startswith("flaky") and msg["trial"] % 2:
        answer = "I do not know"
    calls = ([{"name": "shell__run", "args": {"cmd": "ls"}, "result": "a b"}]
             if "files" in msg["text"] else [])
    return {"final_answer": answer, "tool_calls": calls,
            "hooks": [{"name": "guard", "decision": "allow"}], "error": None,
            "tokens": 7, "echo": msg}
"""
AGENT_SETTINGS = '[tool.gitevals.target]\npython = "run_agent:respond"\n'


TONE = """\
defaults: {trials: 3, timeout: 5s}
scenarios:
  - id: ok-capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - no_error: true
  - id: ok-files
    user: [List the files., Now count them.]
    trials: 2
    expect:
      - tool_called: {name: shell__run}
      - hook_called: {name: guard, decision: allow}
"""


def scenario_case(sid: str, trials: int = 2, timeout: str = "20s") -> str:
    return (f"defaults: {{trials: {trials}, timeout: {timeout}}}\nscenarios:\n"
            f"  - id: {sid}\n    user: What is the capital of France?\n"
            "    expect: [{final_answer_contains: Paris}]\n")


def setup(repo: Repo, cases: dict[str, str], graders: dict[str, str] | None = None,
           settings: str = SETTINGS) -> str:
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": settings}
    if settings.startswith(AGENT_SETTINGS):  # with more settings after it too
        files["run_agent.py"] = AGENT
    files.update({f"evals/cases/{n}.yaml": c for n, c in cases.items()})
    files.update({f"evals/graders/{n}.py": g for n, g in (graders or {}).items()})
    return repo.commit(files)


def artifacts(repo: Repo) -> list[dict[str, Any]]:
    return [load_artifact(p) for p in sorted((repo.path / "evals" / "results").glob("*.json"))]


def only_artifact(repo: Repo) -> dict[str, Any]:
    (artifact,) = artifacts(repo)
    return artifact


def scenarios(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{c['name']}/{s['id']}": s for c in artifact["cases"] for s in c["scenarios"]}


def repo_copy(factory: pytest.TempPathFactory, tmp_path: Path, name: str,
              build: Callable[[Repo], None]) -> Repo:
    """A copy, in ``tmp_path/repo``, of the repository ``build`` makes (from ``git init``)
    once for the whole test run under ``name`` (``built_once``): for fixtures whose
    commits and runs many tests read, each test free to change its own copy."""
    def make(root: Path) -> None:
        (root / "repo").mkdir()
        git(root / "repo", "init", "-q", "-b", "main")
        build(Repo(root / "repo"))

    built = built_once(factory, name, make)
    shutil.copytree(built / "repo", tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo")
