"""A start imports what its command uses (#27 item 4): the one-file commit hook stays
within reach of ``import pygit2, yaml``.

The check runs the real CLI once under ``python -X importtime`` and reads the modules it
imported (what Python lists on stderr), after a first run filled the caches.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import GIT_ENV, Repo

CASE = ("scenarios:\n  - id: s\n    user: hello\n"
        "    expect: [{final_answer_contains: ok}]\n")

#: Never needed to lint one clean case file: each was imported by the hook before.
NOT_IN_THE_HOOK = {
    "numpy", "rich", "jsonschema", "pkgutil",  # heavy, or a listing that costs more than it saves
    "gitevals.run.pricing", "gitevals.prices",  # priced runs only
    "gitevals.text",  # only to escape what is printed from the tree
    "gitevals.run.runner", "gitevals.stats", "gitevals.diff", "gitevals.calibration",
    "concurrent", "logging", "decimal",  # a thread pool's imports; generated validators'
    "gitevals.api",  # its option types: the command calls the feature lint_tree
}


def _imported(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """The exit code of ``gitevals ARGS`` and every module it imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gitevals", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **GIT_ENV})
    names = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:")}
    return proc.returncode, names


def _top(names: set[str]) -> set[str]:
    """``names`` and each of their parent packages (``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``)."""
    return {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 2)}


def test_the_one_file_hook_imports_only_what_linting_a_case_needs(repo: Repo) -> None:
    repo.commit({"evals/cases/a.yaml": CASE,
                 "pyproject.toml": '[tool.gitevals.target]\ncommand = ["true"]\n'})
    repo.write({"evals/cases/a.yaml": CASE + "# edited\n"})
    repo.git("add", "-A")
    hook = ["lint", "--staged", "evals/cases/a.yaml"]
    assert _imported(hook, repo.path)[0] == 0  # fills the schema and lint caches
    code, names = _imported(hook, repo.path)
    assert code == 0
    assert "gitevals.lint.cases" in names  # the probe sees the hook's own imports
    assert not NOT_IN_THE_HOOK & _top(names), sorted(NOT_IN_THE_HOOK & _top(names))



#: Never needed by a run of one case with a python target, no grader, no goldens, no
#: task, and --format json: each was on that path before (#27: the one-sample start).
NOT_IN_A_ONE_CASE_RUN = {
    "numpy", "rich", "jsonschema", "secrets",
    "gitevals.run.tasks", "gitevals.tasks.load", "gitevals.tasks.sandbox",  # no tasks/
    "gitevals.goldens.plan", "gitevals.goldens.mapping", "gitevals.run.goldens",  # no goldens
    "gitevals.calibration.tree", "gitevals.calibration.status",  # no judge grader
    "gitevals.report.runs",  # --format json prints the artifact as written
    "gitevals.stats", "gitevals.diff", "gitevals.suite", "gitevals.run.pricing",
    "concurrent", "logging",  # the trials' threads are started with threading alone
    "decimal",  # generated schema checks: no value they see is a Decimal
}


def test_a_one_case_run_imports_only_what_it_runs(repo: Repo) -> None:
    repo.commit({"evals/cases/a.yaml": CASE,
                 "agent.py": "def respond(messages):\n    return {'final_answer': 'ok'}\n",
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n'})
    run = ["run", "--no-note", "--format", "json"]
    assert _imported(run, repo.path)[0] == 0  # fills the schema and lint caches
    code, names = _imported(run, repo.path)
    assert code == 0
    assert "gitevals.run.runner" in names  # the probe sees the run's own imports
    assert not NOT_IN_A_ONE_CASE_RUN & _top(names), sorted(NOT_IN_A_ONE_CASE_RUN & _top(names))


#: Never needed to diff the goldens of two commits (#27 item 4, issue 4's benchmark): the
#: verdicts' statistics, the case model and its schema checks, the run artifact's types.
NOT_IN_A_GOLDENS_DIFF = {
    "numpy", "rich", "jsonschema", "statistics", "decimal",
    "gitevals.diff.suite", "gitevals.diff.verdicts", "gitevals.diff.power",
    "gitevals.diff.graders", "gitevals.diff.rules", "gitevals.stats",
    "gitevals.model", "gitevals.validation", "gitevals.run.artifact", "gitevals.lint",
    "gitevals.api",  # its option types: the command calls the feature diff.collect
}


def test_a_goldens_diff_imports_only_what_comparing_goldens_needs(repo: Repo) -> None:
    a = repo.commit({"evals/goldens.jsonl": '{"id": "g1", "bucket": "b", "q": "x"}\n'})
    b = repo.commit({"evals/goldens.jsonl": '{"id": "g1", "bucket": "b", "q": "y"}\n'})
    code, names = _imported(["diff", a, b, "--only", "goldens"], repo.path)
    assert code == 0
    assert "gitevals.diff.goldens" in names  # the probe sees the diff's own imports
    assert not NOT_IN_A_GOLDENS_DIFF & _top(names), sorted(NOT_IN_A_GOLDENS_DIFF & _top(names))


def test_the_python_worker_starts_on_what_it_uses_of_the_standard_library(
        tmp_path: Path) -> None:
    # The warm worker's start is on the way to a run's first conversation: it reads no
    # gitevals module (it may run in another interpreter), nor ``typing``, nor ``json``
    # (its C parts do: ``re`` and ``enum`` come with json), nor ``socket`` or ``signal``
    # (their C modules do: ``enum`` again).
    from gitevals.run.targets import PYWORKER

    (tmp_path / "agent.py").write_text("def respond(messages):\n    return {}\n")
    proc = subprocess.run([sys.executable, "-X", "importtime", PYWORKER, "--check",
                           "agent:respond"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    names = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:")}
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "importlib" in names  # the probe sees the worker's imports (its _load)
    refused = {"gitevals", "typing", "json", "re", "enum", "socket", "signal"}
    assert not refused & _top(names), sorted(refused & _top(names))
