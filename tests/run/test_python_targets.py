"""``python`` targets as a user runs them: warm workers that fork a fresh child per
conversation, the interpreter they run in, and the one line when the module does not
import there. Every test drives the real ``gitevals run`` on a real repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, run_cli

# A module-level counter every call bumps; a line appended to IMPORTS each time the module
# is imported (a path outside the tree, filled in per test).
COUNTING = """\
import os, sys

COUNT = 0
with open({imports!r}, "a") as f:
    f.write(str(os.getpid()) + "\\n")


def respond(messages):
    global COUNT
    COUNT += 1
    marked = messages[0].get("marked", False)  # set by this conversation's first call
    messages[-1]["marked"] = True
    return {{"final_answer": "count " + str(COUNT), "python": sys.executable,
             "turns_seen": len(messages), "saw_its_mark": marked}}
"""
CASE = "scenarios:\n  - id: s\n    user: [hello, again]\n    trials: {trials}\n"
SETTINGS = '[tool.gitevals.target]\npython = "agent:respond"\n'


def _answers(out: str) -> list[list[dict[str, Any]]]:
    """Every trial's turns (the replies as recorded), all cases in order."""
    run = json.loads(out)
    return [r["transcript"]["turns"] for c in run["cases"] for s in c["scenarios"]
            for r in s["results"]]


def _counting_repo(repo: Repo, tmp_path: Path, cases: int = 3, trials: int = 2,
                   settings: str = SETTINGS) -> Path:
    imports = tmp_path / "imports.txt"
    files = {"agent.py": COUNTING.format(imports=str(imports)), "pyproject.toml": settings,
             ".gitignore": ".venv/\n"}
    files.update({f"evals/cases/c{i}.yaml": CASE.format(trials=trials) for i in range(cases)})
    repo.commit(files)
    return imports


def test_state_never_leaks_between_conversations_and_the_module_imports_once(
        repo: Repo, tmp_path: Path) -> None:
    imports = _counting_repo(repo, tmp_path, cases=3, trials=2)
    res = run_cli("run", "--jobs", "1", "--no-preflight", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    trials = _answers(res.out)
    assert len(trials) == 6
    # Each conversation starts from the module as imported: the counter its first turn
    # bumped is fresh (1), and only its own second turn sees 2.
    assert [[t["final_answer"] for t in turns] for turns in trials] == [
        ["count 1", "count 2"]] * 6
    assert [[t["turns_seen"] for t in turns] for turns in trials] == [[1, 3]] * 6
    # The history is one list, handed over uncopied: a mark the first call left on its
    # message is there on the second call (a copy per turn, quadratic, would lose it).
    assert [[t["saw_its_mark"] for t in turns] for turns in trials] == [[False, True]] * 6
    # One job slot: one import for the six conversations.
    assert len(imports.read_text().split()) == 1


def test_the_import_is_once_per_run_the_preflights_included(repo: Repo, tmp_path: Path) -> None:
    imports = _counting_repo(repo, tmp_path, cases=4, trials=2)
    res = run_cli("run", "--jobs", "2", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert len(_answers(res.out)) == 8
    # One warm worker for the run: its import is the preflight's (#27 items 3-4).
    assert len(imports.read_text().split()) == 1


def test_a_module_that_does_not_import_is_one_target_start_line_per_trial(
        repo: Repo) -> None:
    repo.commit({"agent.py": "import not_installed_anywhere\n\ndef respond(m):\n    return {}\n",
                 "pyproject.toml": SETTINGS, "evals/cases/c.yaml": CASE.format(trials=2)})
    res = run_cli("run", "--no-preflight", "--format", "json", cwd=repo.path)
    assert res.code == 1
    run = json.loads(res.out)
    errors = [r["error"] for r in run["cases"][0]["scenarios"][0]["results"]]
    assert len(errors) == 2
    for error in errors:
        assert error["kind"] == "target_start"
        message = error["message"]
        assert "\n" not in message and "Traceback" not in message
        assert message.startswith("cannot load the python target: agent:respond does not "
                                  "load in the commit: ModuleNotFoundError: No module named "
                                  "'not_installed_anywhere' (in ")
        assert message.endswith("install what it needs into that interpreter, or name another "
                                "with [target] interpreter")


def _venv(where: Path) -> Path:
    """A real, empty virtual environment (no pip, no gitevals, no yaml)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    for module in ("gitevals", "yaml"):
        assert subprocess.run([str(python), "-c", f"import {module}"], cwd=where,
                              capture_output=True).returncode != 0
    return python


NEEDS_YAML = """\
import sys
import yaml


def respond(messages):
    return {"final_answer": "yaml " + yaml.__version__, "python": sys.executable}
"""
PLAIN = """\
import sys


def respond(messages):
    return {"final_answer": "plain", "python": sys.executable}
"""


def _commit_agent(repo: Repo, agent: str, settings: str = SETTINGS) -> None:
    repo.commit({"agent.py": agent, "pyproject.toml": settings, ".gitignore": ".venv/\nother/\n",
                 "evals/cases/c.yaml": CASE.format(trials=1)})


def test_the_repository_venv_is_the_default_interpreter(repo: Repo) -> None:
    python = _venv(repo.path / ".venv")
    _commit_agent(repo, PLAIN)
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    (turns,) = _answers(res.out)
    # the worker booted in an interpreter without gitevals: it is a standalone script
    assert turns[0]["python"] == str(python)


def test_a_module_missing_from_the_repository_venv_is_one_clear_line(repo: Repo) -> None:
    python = _venv(repo.path / ".venv")
    _commit_agent(repo, NEEDS_YAML)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        "gitevals: error: python target agent:respond does not load in the commit: "
        f"ModuleNotFoundError: No module named 'yaml' (in {python}); install what it needs "
        "into that interpreter, or name another with [target] interpreter; or pass "
        "--no-preflight to run anyway"]
    assert not (repo.path / "evals" / "results").exists()


@pytest.mark.parametrize("written", ["relative", "absolute"])
def test_the_interpreter_setting_names_where_the_target_runs(repo: Repo, written: str) -> None:
    _venv(repo.path / ".venv")  # would miss yaml: the setting must win over it
    named = _gitevals_python(repo, written)
    _commit_agent(repo, NEEDS_YAML, SETTINGS + f'interpreter = "{named}"\n')
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    (turns,) = _answers(res.out)
    assert turns[0]["final_answer"].startswith("yaml ")


def _gitevals_python(repo: Repo, written: str) -> str:
    """gitevals' interpreter (it has yaml), written as the setting is tested."""
    if written == "absolute":
        return sys.executable
    link = repo.path / "other" / "python"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    return "other/python"


def test_a_missing_module_in_a_named_venv_then_present_runs(repo: Repo, tmp_path: Path) -> None:
    python = _venv(tmp_path / "agent-venv")
    settings = SETTINGS + f'interpreter = "{python}"\n'
    repo.commit({"agent.py": "import helper\n\ndef respond(m):\n    return helper.answer()\n",
                 "pyproject.toml": settings, "evals/cases/c.yaml": CASE.format(trials=1)})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert f"No module named 'helper' (in {python}); install what it needs" in res.err
    # installed into that venv (not into gitevals'), the same commit runs
    site = next((tmp_path / "agent-venv" / "lib").glob("python3*/site-packages"))
    (site / "helper.py").write_text("def answer():\n    return {'final_answer': 'installed'}\n")
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert _answers(res.out)[0][0]["final_answer"] == "installed"
