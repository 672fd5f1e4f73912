"""Benchmark of the exact tests (issue 8): gitevals' Boschloo and Fisher vs scipy's.

    .venv/bin/python benchmarks/bench_stats.py [--sizes 10,100,1000,10000] [--scipy-max 1000]
                                               [--diff 200] [--repeat 3]

For each n (trials a side) five scenarios at fixed pass rates (0.8 vs 0.7, 0.5 vs 0.5,
0.95 vs 0.9, 0.3 vs 0.25, 0.99 vs 0.97) run through ``boschloo_exact`` and
``fisher_exact`` with their caches cleared; the row is the mean per scenario, best of
--repeat. scipy's ``boschloo_exact`` (n=64 nuisance points, two-sided) runs beside
it up to --scipy-max trials a side (it builds an (n+1)^2 table: minutes and gigabytes
beyond that), with the ratio and the largest difference in p. Then a diff-sized
batch: --diff scenarios at 10,000 trials a side, each a random pass rate left unchanged
or moved by 1 to 3 points (so most p are far from 0).

Times are CPU seconds of this process (``time.process_time``): the machine is shared,
and both sides of each ratio are measured the same way in the same run.

Budgets (exit 1 over any): n <= 100 under 5 ms a scenario; one scenario at 10,000
trials a side under 0.1 s; the --diff batch (200 at 10,000) under 15 s. Measured on
the shared 2-core machine (2026-11-30): 0.6 ms at 10, 2.5 ms at 100, 7.6 ms at 1,000,
36 ms at 10,000; the batch of 200 at 10,000 in 8.1 s; scipy 20x-2,400x slower to 1,000.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitevals.diff import stats

RATES = [(0.8, 0.7), (0.5, 0.5), (0.95, 0.9), (0.3, 0.25), (0.99, 0.97)]
BUDGET_SMALL = 0.005   # s a scenario, n <= 100
BUDGET_10000 = 0.1     # s a scenario, n = 10,000
BUDGET_DIFF = 15.0     # s for the --diff batch at 10,000


def _clear() -> None:
    stats.boschloo_exact.cache_clear()
    stats.boschloo_less.cache_clear()


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _clear()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _scenarios(n: int) -> list[tuple[int, int, int, int]]:
    return [(round(a * n), n, round(b * n), n) for a, b in RATES]


def _scipy_p(x1: int, n1: int, x2: int, n2: int) -> float:
    from scipy.stats import boschloo_exact

    table = [[x1, x2], [n1 - x1, n2 - x2]]
    return float(boschloo_exact(table, alternative="two-sided", n=64).pvalue)


def _row(n: int, args: argparse.Namespace) -> tuple[str, float]:
    cases = _scenarios(n)
    ours = _cpu(lambda: [stats.boschloo_exact(*c) for c in cases], args.repeat) / len(cases)
    fisher = _cpu(lambda: [stats.fisher_exact(*c) for c in cases], args.repeat) / len(cases)
    cells = [f"{n:>7,}", f"{ours * 1000:>10.2f}", f"{fisher * 1000:>9.3f}"]
    if n <= args.scipy_max:
        start = time.process_time()
        theirs = [_scipy_p(*c) for c in cases]
        per = (time.process_time() - start) / len(cases)
        diff = max(abs(stats.boschloo_exact(*c) - p) for c, p in zip(cases, theirs, strict=True))
        cells += [f"{per * 1000:>10.1f}", f"{per / ours:>7.0f}x", f"{diff:>9.1e}"]
    else:
        cells += [f"{'-':>10}", f"{'-':>8}", f"{'-':>9}"]
    return "  ".join(cells), ours


def _draw(rng: random.Random, rate: float, n: int) -> int:
    return min(n, max(0, round(rng.gauss(n * rate, (n * rate * (1 - rate)) ** 0.5))))


def _diff_batch(count: int) -> float:
    """Scenarios as a diff sees them: a pass rate each, unchanged or moved by 1-3 points."""
    rng = random.Random(20261130)
    cases = []
    for _ in range(count):
        rate = rng.uniform(0.05, 0.95)
        moved = min(0.99, max(0.01, rate + rng.choice([0.0, 0.0, 0.01, -0.01, 0.03, -0.03])))
        cases.append((_draw(rng, rate, 10000), 10000, _draw(rng, moved, 10000), 10000))
    _clear()
    start = time.process_time()
    for case in cases:
        stats.boschloo_exact(*case)
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--scipy-max", type=int, default=1000)
    parser.add_argument("--diff", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _scipy_p(1, 2, 1, 2)  # import and warm scipy outside the timings
    print("      n  boschloo ms  fisher ms  scipy ms   scipy/us  max |dp|")
    over = []
    for n in (int(s) for s in args.sizes.split(",")):
        line, ours = _row(n, args)
        print(line, flush=True)
        if (n <= 100 and ours > BUDGET_SMALL) or (n == 10000 and ours > BUDGET_10000):
            over.append(f"n={n}: {ours:.3f} s a scenario")
    if args.diff:
        total = _diff_batch(args.diff)
        print(f"diff of {args.diff} scenarios at 10,000 a side: {total:.2f} s "
              f"({total / args.diff * 1000:.1f} ms each)")
        if total > BUDGET_DIFF:
            over.append(f"diff batch: {total:.1f} s")
    for message in over:
        print(f"over budget: {message}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
