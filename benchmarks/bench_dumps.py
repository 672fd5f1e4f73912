"""Benchmark: `artifact.dumps` vs `json.dumps(run, sort_keys=True, indent=1, ...)`.

Both write the same text (checked first, byte for byte) of a small one-case artifact and
of a large one (`bench_score.make_artifact`'s trials: 20 cases x 10 scenarios), in this
process, alternating call by call (best of --repeat each). The figures are CPU seconds of
this process (`time.process_time`), as the machine is shared: wall time would count the
waits for a core. The bar: new <= 0.5x old on both; exit 1 over it.

    .venv/bin/python benchmarks/bench_dumps.py [--trials 2000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BAR = 0.5


def old(run: Any) -> str:
    return json.dumps(run, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def _cpu(fn: Callable[[Any], str], run: Any, calls: int) -> float:
    t0 = time.process_time()
    for _ in range(calls):
        fn(run)
    return (time.process_time() - t0) / calls


def side_by_side(run: Any, repeat: int, calls: int) -> tuple[float, float]:
    """Best CPU seconds a call of (old, new), the two measured in turn each round."""
    from gitevals.run.artifact import dumps

    if dumps(run) != old(run):
        sys.exit("artifact.dumps and json.dumps differ")
    best_old = best_new = float("inf")
    for _ in range(repeat):
        best_old = min(best_old, _cpu(old, run, calls))
        best_new = min(best_new, _cpu(dumps, run, calls))
    return best_old, best_new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    from bench_score import make_artifact as make  # a sibling script: its dir is on sys.path
    rows = [("small: 1 case, 1 scenario, 3 trials", make(3, cases=1, scenarios=1), 200),
            (f"large: {args.trials} trials", make(args.trials), 1)]
    worst = 0.0
    print(f"{'artifact':<36} {'KB':>8} {'json.dumps':>12} {'dumps':>12} {'new/old':>8}")
    for name, run, calls in rows:
        size = len(old(run).encode()) / 1e3
        t_old, t_new = side_by_side(run, args.repeat, calls)
        worst = max(worst, t_new / t_old)
        print(f"{name:<36} {size:>8.0f} {t_old * 1e3:>9.2f} ms {t_new * 1e3:>9.2f} ms "
              f"{t_new / t_old:>7.2f}x")
    print(f"worst ratio {worst:.2f}x (bar {BAR:.1f}x) -> {'ok' if worst <= BAR else 'TOO SLOW'}")
    return 0 if worst <= BAR else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
