"""The goldens gate: a harness passing the first N goldens of each bucket (N committed in
``passes.json``), its settings and graders, goldens-only runs and a repository with a baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo, built_once, git, run_cli

#: Answers "ok" to the first N goldens of a bucket (ids f00.., t00..), "no" to the rest;
#: N per id prefix comes from passes.json in the commit. A python target: imported once
#: per run and forked per golden (a command harness started a Python per golden, 40 a
#: run; the goldens' own command-target path is tested in test_goldens_run).
HARNESS = """\
import json

passes = json.load(open("passes.json"))


def respond(messages):
    sid = messages[-1]["scenario"]
    ok = int(sid[1:]) < passes.get(sid[0], 0)
    return {"final_answer": "ok" if ok else "no", "tool_calls": [], "hooks": [], "error": None}
"""

TARGET = {"python": "harness:respond"}

SETTINGS = f"""\
[tool.gitevals.target]
python = "{TARGET['python']}"

[tool.gitevals.goldens]
graders = {{format = "checks.exact", tone = "checks.exact"}}
"""


GRADERS = 'def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n'


SUITE = """\
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""


def goldens(n: int = 20) -> str:
    rows = [{"id": f"{p}{i:02d}", "bucket": b, "input": f"q{i}", "expected": "ok"}
            for p, b in (("f", "format"), ("t", "tone")) for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def commit(repo: Repo, f: int, t: int, extra: dict[str, str | bytes] | None = None) -> str:
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS,
        "passes.json": json.dumps({"f": f, "t": t}),
        "evals/graders/checks.py": GRADERS, "evals/goldens.jsonl": goldens(),
        "evals/drift-suite.yaml": SUITE, **(extra or {})}
    return repo.commit(files)


def goldens_run(repo: Repo, rev: str = "HEAD", note: bool = False) -> Path:
    res = run_cli("run", "--goldens-only", "--rev", rev, *(() if note else ("--no-note",)),
                  cwd=repo.path)
    assert res.code in (0, 1), res.err
    newest = max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    return newest


def _build_based(root: Path) -> None:
    """The repository of ``based`` in ``root/repo``; the artifact's path in it in
    ``root/artifact``."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    commit(repo, 15, 10)
    artifact = goldens_run(repo, note=True)  # a baseline is checked against its run's note
    res = run_cli("baseline", str(artifact), "--model", "base-7b", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.startswith("wrote evals/baseline-base-7b.json: 2 slices of run ")
    repo.commit(msg="baseline")
    (root / "artifact").write_text(artifact.relative_to(path).as_posix())


@pytest.fixture
def based(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Repo, Path]:
    """A repo whose base model passes 15/20 format and 10/20 tone, with that baseline: built
    once for the test run (a goldens run, its note, the baseline and its commit), each test
    getting its own copy of the repository (notes, results and all) to change."""
    built = built_once(tmp_path_factory, "gate-based", _build_based)
    path = tmp_path / "repo"
    shutil.copytree(built / "repo", path, symlinks=True)
    return Repo(path), path / (built / "artifact").read_text()


@pytest.fixture
def rerun(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Repo, Path]:
    """``based`` with the same counts (15/20 format, 10/20 tone) committed again and that
    commit's goldens run (no note): built once for the test run (the tests that only
    gate that run share it), each test getting its own copy; the run's artifact path."""
    based_dir = built_once(tmp_path_factory, "gate-based", _build_based)

    def build(root: Path) -> None:
        shutil.copytree(based_dir / "repo", root / "repo", symlinks=True)
        repo = Repo(root / "repo")
        commit(repo, 15, 10)
        (root / "artifact").write_text(goldens_run(repo).relative_to(repo.path).as_posix())

    built = built_once(tmp_path_factory, "gate-rerun", build)
    path = tmp_path / "repo"
    shutil.copytree(built / "repo", path, symlinks=True)
    return Repo(path), path / (built / "artifact").read_text()
