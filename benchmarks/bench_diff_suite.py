"""Speed of ``gitevals diff`` on a big suite (issue 21): before and after the suite decision.

    .venv/bin/python benchmarks/bench_diff_suite.py [--dir DIR] [--repeat 3] [--old REV]

Two run artifacts of 1,000 scenarios (100 cases x 10) x 100 trials a side
(``bench_score.make_artifact``'s trials, with B's pass bits flipped at random so most
scenarios move), and ``gitevals diff A B --a-run A.json --b-run B.json --only verdicts``
timed in fresh processes: this tree's code against the code of ``--old`` (default: the
commit before issue 21's work, the parent of the first commit that touched
``gitevals/stats``; unpacked with ``git archive``), interleaved in one loop, best of
--repeat, in CPU time (user + system: steadier than wall time on a shared machine;
both are printed). The bar: new <= 1.5 x old.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True,
                          capture_output=True, text=True).stdout.strip()


def _make() -> Any:
    spec = importlib.util.spec_from_file_location("bench_score", HERE / "bench_score.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_artifact


def build(dest: Path) -> tuple[Path, Path]:
    from gitevals.run.scoring import verdict

    make = _make()
    dest.mkdir(parents=True, exist_ok=True)
    git(dest, "init", "-q", "-b", "main")
    (dest / "evals/cases").mkdir(parents=True)
    (dest / "evals/cases/case-000.yaml").write_text(
        "scenarios:\n  - id: a\n    user: hi\n    expect:\n      - no_error: true\n")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "a")
    (dest / "v.txt").write_text("b\n")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "b")
    rng = random.Random(21)
    paths = []
    for side in ("a", "b"):
        doc = make(100_000, cases=100, scenarios=10)
        for case in doc["cases"]:
            for scenario in case["scenarios"]:
                rate = rng.choice([0.5, 0.7, 0.9])
                for r in scenario["results"]:
                    r["passed"] = rng.random() < rate
                scenario["verdict"] = verdict(scenario["results"])
        path = dest / f"{side}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths[0], paths[1]


def old_tree(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "gitevals", "schemas"], cwd=ROOT,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def timed(argv: list[str], cwd: Path, pythonpath: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one fresh process: on a machine
    shared with other work the CPU time is the steadier of the two."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu


def before_issue_21() -> str:
    """The parent of the first commit that touched ``gitevals/stats`` (issue 21's kernel)."""
    first = git(ROOT, "log", "--format=%H", "--reverse", "--", "gitevals/stats").splitlines()
    return git(ROOT, "rev-parse", f"{first[0]}^")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old", default=None, help="the code to compare with (default: the "
                    "commit before issue 21's work)")
    args = ap.parse_args()
    args.old = args.old or before_issue_21()
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-diff-suite-"))
    sys.path.insert(0, str(ROOT))
    a, b = build(base / "repo")
    old = old_tree(args.old, base / "old")
    argv = [sys.executable, "-m", "gitevals", "diff", "HEAD~1", "HEAD", "--a-run", str(a),
            "--b-run", str(b), "--only", "verdicts", "--format", "json"]
    wall: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(args.repeat):
        for side, code in (("old", old), ("new", ROOT)):
            w, c = timed(argv, base / "repo", code)
            wall[side].append(w)
            cpu[side].append(c)
    print(f"diff of 1,000 scenarios x 100 trials a side (best of {args.repeat}, fresh "
          f"processes, interleaved; old = {args.old[:12]})")
    for k in ("old", "new"):
        print(f"  {k:>3}: cpu {min(cpu[k]):.2f} s (all: {', '.join(f'{t:.2f}' for t in cpu[k])})"
              f"; wall {min(wall[k]):.2f} s (all: {', '.join(f'{t:.2f}' for t in wall[k])})")
    ratio = min(cpu["new"]) / min(cpu["old"])
    print(f"  new / old = {ratio:.2f} in CPU time, {min(wall['new']) / min(wall['old']):.2f} "
          "in wall time (bar: CPU <= 1.5)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
