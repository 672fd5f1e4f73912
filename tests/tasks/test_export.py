"""``gitevals task export NAME --rev REV DIR`` (#23 item 12): a task written back as Harbor
reads it; compiling the export gives the definition compiled from the repository."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tests.conftest import Repo, run_cli

TOML = ('version = "1.0"\nmax_iterations = 3\n\n[verifier]\ncommand = ["bash", '
        '"/tests/run.sh"]\ntimeout_sec = 20\n\n[environment]\ncpus = 1\nmemory_mb = 512\n'
        '\n[metadata]\ndifficulty = "easy"\n')


def _commit(repo: Repo, instruction: str = "Sort the numbers.\n") -> str:
    base = "evals/tasks/sort"
    sha = repo.commit({f"{base}/task.toml": TOML, f"{base}/instruction.md": instruction,
                       f"{base}/tests/run.sh": "echo 1 > /logs/verifier/reward.txt\n",
                       f"{base}/environment/data.bin": bytes(range(256)),
                       f"{base}/environment/Dockerfile": "FROM debian:bookworm\n",
                       f"{base}/solution/solve.sh": "sort -n data > out\n"})
    os.chmod(repo.path / base / "solution/solve.sh", 0o755)
    os.symlink("data.bin", repo.path / base / "environment/alias")
    return repo.commit(msg="exec bit and a link") if sha else sha


def _relative(doc: dict[str, Any], path: str) -> dict[str, Any]:
    """``doc`` with every string that starts with the task's tree path starting ``<task>``."""
    whole = json.dumps({**doc, "path": path + "/"})
    text = re.sub(r'(?<=")' + re.escape(path) + r"(?=/)", "<task>", whole)
    out: dict[str, Any] = json.loads(text)
    return out


def test_export_then_compile_gives_the_same_definition(repo: Repo, tmp_path: Path) -> None:
    _commit(repo)
    before = run_cli("task", "compile", "sort", "--json", "--rev", "HEAD", cwd=repo.path)
    assert before.code == 0, before.err
    dest = tmp_path / "out" / "sort"
    res = run_cli("task", "export", "sort", "--rev", "HEAD", str(dest), cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.startswith("exported task sort (7 files) from ")
    assert "Harbor ignores [verifier] command (it runs tests/test.sh)" in res.err
    assert "Harbor ignores max_iterations" in res.err
    after = run_cli("task", "compile", str(dest), "--json", cwd=dest.parent)
    assert after.code == 0, after.err
    first, second = json.loads(before.out), json.loads(after.out)
    assert second["path"] == "sort" and len(first["files"]) == 6  # the link is no file
    assert _relative(first, "evals/tasks/sort") == _relative(second, "sort")
    assert _relative(first, "evals/tasks/sort")["path"] == "<task>/"
    # bytes, the executable bit and the link inside the task are kept
    assert (dest / "environment/data.bin").read_bytes() == bytes(range(256))
    assert os.access(dest / "solution/solve.sh", os.X_OK)
    assert not os.access(dest / "tests/run.sh", os.X_OK)
    assert os.readlink(dest / "environment/alias") == "data.bin"


def test_export_reads_the_revision_and_never_writes_into_a_directory(
        repo: Repo, tmp_path: Path) -> None:
    _commit(repo, "First words.\n")
    old = repo.git("rev-parse", "HEAD")
    repo.commit({"evals/tasks/sort/instruction.md": "Second words.\n"})
    dest = tmp_path / "old"
    assert run_cli("task", "export", "sort", "--rev", old, str(dest), cwd=repo.path).code == 0
    assert (dest / "instruction.md").read_text() == "First words.\n"
    again = run_cli("task", "export", "sort", str(dest), cwd=repo.path)
    assert again.code == 2 and len(again.err.strip().splitlines()) == 1
    assert "exists and is not an empty directory" in again.err
    assert (dest / "instruction.md").read_text() == "First words.\n"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old", "repo"]  # no leftovers
    unknown = run_cli("task", "export", "nope", str(tmp_path / "x"), cwd=repo.path)
    assert unknown.code == 2 and not (tmp_path / "x").exists()
