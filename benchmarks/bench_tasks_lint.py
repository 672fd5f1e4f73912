"""Task directories in lint (issue 10), measured side by side in one run.

    python benchmarks/bench_tasks_lint.py [--repo DIR] [--tasks 200] [--repeat 3]

Builds (or reuses) the synthetic repo of ``make_synthetic.py`` and adds ``--tasks`` task
directories (task.toml, instruction.md, tests/test.sh, environment/Dockerfile and a
64 KiB data file each), committed. Times fresh processes, best of ``--repeat``:

- ``gitevals lint`` cold (empty cache) and warm, with the tasks;
- the commit hook's form for a task: ``lint --staged <one edited task.toml>``, with the
  tree linted before (daily use) and with an empty cache;
- the same hook for one edited case file (bench_lint.py's figure) in this repo.

Prints the ratios against issue 2's bar for the hook: <= 0.15x a cold full lint.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_lint import HERE, best, gitevals, timed

TOML = ('version = "1.0"\n\n[agent]\ntimeout_sec = 600.0\n\n[verifier]\ntimeout_sec = 120.0\n'
        '\n[environment]\ncpus = 1\nmemory_mb = 2048\n')


def add_tasks(repo: Path, n: int) -> None:
    """``n`` task directories under evals/tasks/, committed (once: kept with --repo)."""
    if (repo / "evals/tasks").exists():
        return
    for i in range(n):
        d = repo / f"evals/tasks/task-{i:04d}"
        (d / "tests").mkdir(parents=True)
        (d / "environment").mkdir()
        (d / "task.toml").write_text(TOML)
        (d / "instruction.md").write_text(f"Task {i}: write the answer to /app/out.txt.\n" * 8)
        (d / "tests/test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
        (d / "environment/Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
        (d / "environment/data.bin").write_bytes(bytes(range(256)) * 256)
    subprocess.run(["git", "add", "-A", "evals/tasks"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "tasks"], cwd=repo, check=True)


def edit_and_stage(repo: Path, path: str) -> None:
    target = repo / path
    target.write_text(target.read_text() + f"# edited {time.time()}\n")
    subprocess.run(["git", "add", path], cwd=repo, check=True)


def restore(repo: Path, path: str) -> None:
    subprocess.run(["git", "reset", "-q", "HEAD", "--", path], cwd=repo, check=True)
    subprocess.run(["git", "checkout", "-q", "--", path], cwd=repo, check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", type=Path, help="reuse this synthetic repo (made if missing)")
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitevals-bench-tasks-"))
    repo = args.repo or work / "repo"
    if not (repo / "evals").exists():
        subprocess.run([sys.executable, str(HERE / "make_synthetic.py"), str(repo)], check=True)
    add_tasks(repo, args.tasks)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "gitevals")],
                   check=True)
    try:
        run(repo, work, args.repeat, args.tasks)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(repo: Path, work: Path, n: int, tasks: int) -> None:
    import os

    cache = work / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}

    def clear() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    t: dict[str, tuple[float, float]] = {}
    t["lint cold"] = best(n, lambda: timed(gitevals("lint"), repo, env, before=clear))
    t["lint warm"] = best(n, lambda: timed(gitevals("lint"), repo, env))
    for label, path in (("task.toml", "evals/tasks/task-0007/task.toml"),
                        ("case", "evals/cases/case-0007.yaml")):
        edit_and_stage(repo, path)
        try:
            timed(gitevals("lint"), repo, env, before=clear)  # the tree linted before
            hook = gitevals("lint", "--staged", path)
            t[f"hook --staged 1 {label}"] = best(n, lambda h=hook: timed(h, repo, env))
            t[f"hook --staged 1 {label}, empty cache"] = best(
                n, lambda h=hook: timed(h, repo, env, before=clear))
        finally:
            restore(repo, path)
    print(f"\n2,000 case files and {tasks} task directories; wall seconds, best (median)\n")
    for name, (lo, med) in t.items():
        print(f"  {name:40s} {lo:8.3f}  ({med:.3f})")
    cold = t["lint cold"][0]
    print("\n  ratio                                              measured  target")
    for name in [k for k in t if k.startswith("hook")]:
        ratio = t[name][0] / cold
        print(f"  {name + ' / cold full lint':50s} {ratio:7.3f}x  <= 0.15x  "
              f"{'ok' if ratio <= 0.15 else 'OVER'}")


if __name__ == "__main__":
    main()
