"""Real Harbor / Terminal-Bench task definitions (``../shared/data/harbor-tasks/``, read in
place, copied only into the test's own temporary repository) lint clean and compile, with
the Dockerfile as an unrealized ``image_build`` gap and Harbor's default verifier; the
Terminal-Bench 1 directory is skipped with a note. Without the data the module is skipped
at collection with one line naming it."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import Repo, run_cli
from tests.support import refdata
from tests.support.task_dirs import DOCKERFILE, SOLVE_SH, TEST_SH

DATA = refdata.find("harbor-tasks")
if DATA is None:
    pytest.skip(refdata.why_missing("harbor-tasks"), allow_module_level=True)
HARBOR = sorted(p.name for p in DATA.iterdir() if (p / "task.toml").is_file())
TB1 = sorted(p.name for p in DATA.iterdir() if (p / "task.yaml").is_file())


@pytest.fixture
def harbor(repo: Repo) -> Repo:
    """Every directory of the data set under evals/tasks/, the task.toml ones given a
    tests/test.sh, an environment/Dockerfile and a solution/solve.sh (the data holds
    none of them); committed."""
    for src in DATA.iterdir():
        dest = repo.path / "evals" / "tasks" / src.name
        shutil.copytree(src, dest)
        for p in (dest, *dest.iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o644)  # the data is read-only
        if src.name in HARBOR:
            repo.write({f"evals/tasks/{src.name}/tests/test.sh": TEST_SH,
                        f"evals/tasks/{src.name}/environment/Dockerfile": DOCKERFILE,
                        f"evals/tasks/{src.name}/solution/solve.sh": SOLVE_SH})
    repo.commit(msg="harbor tasks")
    return repo


def test_the_data_holds_both_kinds() -> None:
    assert len(HARBOR) >= 6 and TB1 == ["tb1-evoeval-0"]


def test_they_lint_clean(harbor: Repo) -> None:
    notes = "".join(f"gitevals: skipped evals/tasks/{name}: a Terminal-Bench 1 task.yaml "
                    "directory; gitevals reads task.toml tasks (Harbor's format)\n"
                    for name in TB1)  # a note on stderr, no finding
    for where in ((), ("--rev", "HEAD"), ("--staged",)):
        r = run_cli("lint", *where, cwd=harbor.path)
        assert (r.code, r.out, r.err) == (0, f"{len(HARBOR)} files checked: no problems\n",
                                          notes), where


@pytest.mark.parametrize("name", HARBOR)
def test_each_compiles(harbor: Repo, name: str) -> None:
    r = run_cli("task", "compile", name, "--json", cwd=harbor.path)
    assert (r.code, r.err) == (0, "")
    doc = json.loads(r.out)
    assert doc["description"] == (DATA / name / "instruction.md").read_text(encoding="utf-8")
    assert doc["verifier"]["argv"] == ["bash", "/tests/test.sh"]
    assert doc["verifier"]["default"] is True
    assert "no [verifier] command" in doc["verifier"]["note"]
    env = doc["environment"]
    assert env["dockerfile"] == DOCKERFILE
    assert [g["kind"] for g in env["gaps"]] == ["image_build"]
    assert doc["max_iterations"] == 1 and doc["pass_threshold"] == 1.0
    assert doc["timeouts"]["verifier_sec"] > 0 and doc["timeouts"]["agent_sec"] > 0
    # The same definition from git objects, and as text naming the gap and the default.
    rev = run_cli("task", "compile", f"evals/tasks/{name}", "--json", "--rev", "HEAD",
                  cwd=harbor.path)
    assert json.loads(rev.out) == doc
    text = run_cli("task", "compile", name, cwd=harbor.path)
    assert text.code == 0
    assert 'verifier argv     ["bash", "/tests/test.sh"] (2 members)' in text.out
    assert "gap image_build: " in text.out and "  | FROM python:3.12-slim" in text.out


def test_real_keys_are_kept_or_named_unused(harbor: Repo) -> None:
    r = run_cli("task", "compile", "cumcm-2025-b-sic-thickness", "--json", cwd=harbor.path)
    doc = json.loads(r.out)
    assert doc["declared_name"] == "wxj630/cumcm-2025-b-sic-thickness"
    assert doc["environment"]["memory_mb"] == 8192 and doc["environment"]["cpus"] == 2
    assert doc["metadata"]["expert_time_estimate_hours"] == 6.0
    assert {"artifacts", "environment.mcp_servers", "verifier.environment_mode"} <= set(
        doc["unused_keys"])
    mcp = json.loads(run_cli("task", "compile", "mcp-tools", "--json", cwd=harbor.path).out)
    assert mcp["unused_keys"] == ["environment.mcp_servers"]


def test_terminal_bench_1_is_skipped_with_a_note(harbor: Repo) -> None:
    from gitevals.git.trees import open_tree
    from gitevals.settings import load_settings
    from gitevals.tasks.load import load_tasks, task_dirs

    tree = open_tree(rev="HEAD", start=harbor.path)
    settings, _ = load_settings(tree)
    assert sorted(task_dirs(tree, settings.root)) == HARBOR
    tasks, findings, notes = load_tasks(tree, settings)
    assert [t.name for t in tasks] == HARBOR and findings == []
    assert notes == ["skipped evals/tasks/tb1-evoeval-0: a Terminal-Bench 1 task.yaml "
                     "directory; gitevals reads task.toml tasks (Harbor's format)"]
    r = run_cli("task", "compile", "tb1-evoeval-0", cwd=harbor.path)
    assert r.code == 2 and r.out == ""
    assert "a Terminal-Bench 1 task.yaml directory" in r.err
    assert len(r.err.splitlines()) == 1
