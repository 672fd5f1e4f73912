"""Benchmark of ``gitevals experiment``, measured side by side with its baseline in one run.

An experiment of 1,000 trivial conversations across 4 lanes (10 cases x 4 lanes x 25
repeats; two commits, each with two values of the target's MODEL) vs the same 1,000
conversations as four plain ``gitevals run --rev REV --trials 25 --target-env MODEL=..``
in sequence, one per lane. Both sides run with ``--jobs 2``. Target (issue 11): ratio
<= 1.1, i.e. the lane machinery (resolving, control checks, report) costs nothing
measurable next to the conversations.

Usage: .venv/bin/python benchmarks/bench_experiment.py [--cases 10] [--repeat 25] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HARNESS = """\
import json, os, sys
model = os.environ.get("MODEL", "")
for line in sys.stdin:
    print(json.dumps({"final_answer": "ok " + model,
                      "usage": {"prompt_tokens": 10, "completion_tokens": 2}}), flush=True)
"""
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, env=ENV, text=True,
                          capture_output=True).stdout.strip()


def _repo(root: Path, cases: int) -> tuple[Path, list[tuple[str, str, str]]]:
    """A repo with two commits (the second changes the harness); the 4 lanes."""
    repo = root / "repo"
    (repo / "evals" / "cases").mkdir(parents=True)
    (repo / "harness.py").write_text(HARNESS)
    (repo / "pyproject.toml").write_text(
        f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n')
    (repo / ".gitignore").write_text("evals/results/\n")
    for i in range(cases):
        (repo / "evals" / "cases" / f"case{i:02d}.yaml").write_text(
            "defaults: {trials: 1, timeout: 30s}\nscenarios:\n"
            "  - id: trivial\n    user: hi\n    expect: [{final_answer_contains: ok}]\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    one = _git(repo, "rev-parse", "HEAD")
    (repo / "harness.py").write_text(HARNESS + "# a second harness version\n")
    _git(repo, "commit", "-qam", "two")
    two = _git(repo, "rev-parse", "HEAD")
    lanes = [(f"{c}{m}", rev, m) for c, rev in (("one", one), ("two", two)) for m in "ab"]
    return repo, lanes


def _timed(cmds: list[list[str]], cwd: Path) -> float:
    started = time.perf_counter()
    for cmd in cmds:
        proc = subprocess.run(cmd, cwd=cwd, text=True, env=ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[3:5]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gitevals = [sys.executable, "-m", "gitevals"]
    with tempfile.TemporaryDirectory(prefix="gitevals-bench-exp-") as tmp:
        repo, lanes = _repo(Path(tmp), args.cases)
        experiment = [*gitevals, "experiment", "--jobs", "2", "--repeat", str(args.repeat),
                      "--format", "json",
                      *(a for name, rev, m in lanes
                        for a in ("--lane", f"{name}={rev},env:MODEL={m}"))]
        runs = [[*gitevals, "run", "--rev", rev, "--trials", str(args.repeat), "--jobs", "2",
                 "--target-env", f"MODEL={m}", "--no-note", "--format", "json"]
                for _, rev, m in lanes]
        total = args.cases * len(lanes) * args.repeat
        # Alternate and keep the best of each: a shared machine's noise hits both alike.
        exp = plain = float("inf")
        for _ in range(args.rounds):
            plain = min(plain, _timed(runs, repo))
            exp = min(exp, _timed([experiment], repo))
    ratio = exp / plain
    print(f"{total:,} conversations, {len(lanes)} lanes, --jobs 2: gitevals experiment "
          f"{exp:.2f} s; {len(lanes)} x gitevals run in sequence {plain:.2f} s; ratio "
          f"{ratio:.3f} (target <= 1.1) {'OK' if ratio <= 1.1 else 'FAIL'}")
    return 0 if ratio <= 1.1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
