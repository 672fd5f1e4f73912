"""``run --executor ray`` beside the local executor, measured side by side in one run.

Starts its own two-node Ray cluster on 127.0.0.1 (tests/support/raycluster.py: a head and a
worker, one CPU each), then times the real CLI both ways, alternating, best of
``--rounds``:

1. 400 conversations whose target waits 1 s a turn, ``--jobs 64``. Target: ray <= 1.3x
   local (a conversation must not hold a CPU of a node while it waits).
2. 1,000 trivial conversations (``--jobs 16``, the default). Target: ray <= 2x local.

Also prints the engine's fixed cost: a run of one trivial conversation both ways (the
difference is joining the cluster, shipping the tree, starting a host per node, leaving).

Usage: .venv/bin/python benchmarks/bench_ray.py [--rounds 2] [--slow 400] [--trivial 1000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.raycluster import DRIVER_ENV, LocalCluster  # noqa: E402

HARNESS = """\
import json, sys, time
DELAY = {delay}
for line in sys.stdin:
    if DELAY:
        time.sleep(DELAY)
    print(json.dumps({{"final_answer": "ok"}}), flush=True)
"""
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid",
       "PYTHONPATH": str(ROOT), **DRIVER_ENV}


def _repo(root: Path, name: str, trials: int, delay: float) -> Path:
    repo = root / name
    (repo / "evals" / "cases").mkdir(parents=True)
    (repo / "harness.py").write_text(HARNESS.format(delay=delay))
    (repo / "pyproject.toml").write_text(
        f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n')
    (repo / "evals" / "cases" / "bench.yaml").write_text(
        f"defaults: {{trials: {trials}, timeout: 60s}}\nscenarios:\n"
        "  - id: one-turn\n    user: hi\n    expect: [{final_answer_contains: ok}]\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=ENV)
    return repo


def _timed(repo: Path, extra: list[str]) -> float:
    cmd = [sys.executable, "-m", "gitevals", "run", "--no-note", "--format", "json", *extra]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(extra) or 'local'} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-2000:]}")
    return elapsed


def _side_by_side(repo: Path, jobs: int, address: str, rounds: int) -> tuple[float, float]:
    local = ray = float("inf")
    for _ in range(rounds):  # alternate: a shared machine's noise hits both alike
        local = min(local, _timed(repo, ["--jobs", str(jobs)]))
        ray = min(ray, _timed(repo, ["--jobs", str(jobs), "--ray-address", address]))
    return local, ray


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--slow", type=int, default=400)
    parser.add_argument("--trivial", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitevals-bench-ray-") as tmp:
        root = Path(tmp)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gitevals")],
                       check=True)
        cluster = LocalCluster(root / "cluster")
        started = time.perf_counter()
        try:
            cluster.start(workers=1)
            print(f"cluster: head + 1 worker on {cluster.address}, 1 CPU each "
                  f"(started in {time.perf_counter() - started:.1f} s)")
            ok = True
            one = _repo(root, "one", 1, 0)
            local, ray = _side_by_side(one, 16, cluster.address, args.rounds)
            print(f"fixed cost, 1 trivial conversation: local {local:.2f} s; ray {ray:.2f} s; "
                  f"the engine adds {ray - local:.2f} s a run")
            slow = _repo(root, "slow", args.slow, 1.0)
            local, ray = _side_by_side(slow, 64, cluster.address, args.rounds)
            ratio = ray / local
            ok &= ratio <= 1.3
            print(f"{args.slow} conversations x 1 s turn, --jobs 64: local {local:.2f} s; "
                  f"ray {ray:.2f} s; ratio {ratio:.3f} (target <= 1.3) "
                  f"{'OK' if ratio <= 1.3 else 'FAIL'}")
            trivial = _repo(root, "trivial", args.trivial, 0)
            local, ray = _side_by_side(trivial, 16, cluster.address, args.rounds)
            ratio = ray / local
            ok &= ratio <= 2.0
            print(f"{args.trivial} trivial conversations, --jobs 16: local {local:.2f} s; "
                  f"ray {ray:.2f} s; ratio {ratio:.3f} (target <= 2) "
                  f"{'OK' if ratio <= 2.0 else 'FAIL'}")
        finally:
            cluster.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
