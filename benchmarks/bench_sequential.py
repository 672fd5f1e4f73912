"""Simulation of sequential runs against a base (issue 16), seeded, side by side.

    .venv/bin/python benchmarks/bench_sequential.py [--scenarios 2000] [--trials 40]
                                                    [--looks 4] [--seed 16]

Harnesses with known per-scenario pass rates: bases 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
each unchanged and dropped by 0.2, 0.4 and 0.6 (where the drop leaves a rate >= 0);
--scenarios simulated scenarios for each. The base side has --trials trials (already
run, as the runs pinned to ``--against REV``); B runs up to --trials more. Four ways
to call "regressed", on the same simulated trials:

- fixed:       ``diff``'s test (two-sided Boschloo, alpha 0.05) after all --trials of B
- sequential:  gitevals' design (``gitevals.stats.sequential``) with --looks looks
- crude:       O'Brien-Fleming efficacy bounds from the normal approximation (no exact
               size) and a 95 % confidence-bound futility rule, the same looks
- peeking:     ``diff``'s fixed test applied at every look, stopping at the first call
               (optional stopping with a fixed-n test: what the design exists to avoid)

Printed per configuration: the rate of "regressed" calls (false ones where the rate is
unchanged, with a 95 % Wilson interval; power where it dropped) and the mean trials B
spent. Then the checks of the issue (exit 1 if one fails): the sequential design's
false "regressed" rate <= alpha (its interval shown), its exact size <= alpha / 2 on
the regressed side, power within 2 points of the fixed design at every drop, and mean
trials over the whole mix >= 25 % below the fixed design's.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import sqrt
from pathlib import Path
from statistics import NormalDist

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from gitevals.diff.power import cutoffs
from gitevals.stats import sequential as sq

BASES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
DROPS = (0.0, 0.2, 0.4, 0.6)
ALPHA = 0.05


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def crude_bounds(design: sq.Design) -> tuple[list[list[int]], list[list[int]]]:
    """Normal-approximation O'Brien-Fleming bounds on the pooled z, a 95 % CI futility rule."""
    # O'Brien-Fleming's last bound, two-sided 0.05, by number of looks (Jennison & Turnbull)
    z_final = {1: 1.960, 2: 1.977, 3: 2.004, 4: 2.024, 5: 2.040}.get(design.looks, 2.040)
    sched, na, n = design.schedule(), design.base_trials, design.max_trials
    eff, fut = [], []
    z95 = NormalDist().inv_cdf(0.975)
    for k, m in enumerate(sched):
        c = z_final * sqrt(n / m)
        eff.append([max([s for s in range(m + 1) if sq._z(xa, na, s, m) >= c], default=-1)
                    for xa in range(na + 1)])
        if k < len(sched) - 1:
            fut.append([min([s for s in range(m + 1)
                             if sq._drop_upper(xa, na, s, m, z95) < design.drop], default=m + 1)
                        for xa in range(na + 1)])
    return eff, fut


def simulate(eff: list[list[int]], fut: list[list[int]], sched: tuple[int, ...],
             xa: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per scenario: called regressed?, trials spent."""
    rows = len(xa)
    called = np.zeros(rows, bool)
    spent = np.full(rows, sched[-1])
    live = np.ones(rows, bool)
    for k, m in enumerate(sched):
        s = b[:, m - 1]
        hit = live & (s <= np.asarray(eff[k])[xa])
        called |= hit
        stop = hit
        if k < len(fut):
            stop = stop | (live & (s >= np.asarray(fut[k])[xa]))
        spent[live & stop] = m
        live &= ~stop
    return called, spent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--looks", type=int, default=sq.DEFAULT_LOOKS)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--shape", type=float, default=sq.DEFAULT_SHAPE)
    ap.add_argument("--futility", type=float, default=sq.DEFAULT_FUTILITY)
    args = ap.parse_args()
    n, reps = args.trials, args.scenarios
    design = sq.Design(base_trials=n, max_trials=n, looks=args.looks, alpha=ALPHA,
                       shape=args.shape, futility=args.futility)
    sched = design.schedule()
    started = time.perf_counter()
    seq = (sq.efficacy_bounds(design), sq.futility_bounds(design))
    designed = time.perf_counter() - started
    exact_size = sq.size(design)
    crude = crude_bounds(design)
    fixed = ([list(cutoffs(n, n_b=n))], [])
    peek = ([list(cutoffs(n, n_b=m)) for m in sched], [])
    methods = {"fixed": (fixed, (n,)), "sequential": (seq, sched), "crude": (crude, sched),
               "peeking": (peek, sched)}
    rng = np.random.default_rng(args.seed)
    print(f"design: {design.as_dict()}")
    print(f"looks at B's trials {list(sched)}; bounds computed in {designed:.2f} s; "
          f"exact size of 'regressed' (sup over the common rate): {exact_size:.4f} "
          f"(<= alpha/2 = {ALPHA / 2})")
    print(f"{'base':>5} {'drop':>5} | " + " | ".join(f"{m:>10} calls  trials"
                                                    for m in methods))
    spent_all = {m: [] for m in methods}
    worst_gap, false = 0.0, {m: [0, 0] for m in methods}
    for base in BASES:
        for drop in DROPS:
            rate_b = round(base - drop, 10)
            if rate_b < 0:
                continue
            xa = rng.binomial(n, base, reps)
            b = rng.binomial(1, rate_b, (reps, n)).cumsum(axis=1)
            cells, rates = [], {}
            for name, ((eff, fut), looks) in methods.items():
                called, spent = simulate(eff, fut, looks, xa, b)
                rates[name] = called.mean()
                spent_all[name].append(spent.mean())
                if drop == 0:
                    false[name][0] += int(called.sum())
                    false[name][1] += reps
                cells.append(f"{called.mean():>10.3f} {spent.mean():>7.1f}")
            if drop > 0:
                worst_gap = max(worst_gap, rates["fixed"] - rates["sequential"])
            print(f"{base:>5} {drop:>5} | " + " | ".join(cells))
    print()
    fixed_mean = float(np.mean(spent_all["fixed"]))
    for name in methods:
        k, total = false[name]
        lo, hi = wilson(k, total)
        saving = 1 - float(np.mean(spent_all[name])) / fixed_mean
        print(f"{name:>10}: false 'regressed' {k / total:.4f} [{lo:.4f}, {hi:.4f}] over "
              f"{total} unchanged scenarios; mean trials {np.mean(spent_all[name]):.1f} "
              f"({saving:+.1%} vs fixed)")
    seq_k, seq_n = false["sequential"]
    saving = 1 - float(np.mean(spent_all["sequential"])) / fixed_mean
    checks = [
        ("sequential false 'regressed' rate <= alpha", seq_k / seq_n <= ALPHA),
        ("exact size of the design <= alpha / 2", exact_size <= ALPHA / 2 + 1e-12),
        (f"power within 2 points of fixed at every drop (worst gap {worst_gap * 100:.1f})",
         worst_gap <= 0.02),
        (f"mean trials >= 25 % below fixed over the mix ({saving:.1%})", saving >= 0.25),
    ]
    for what, ok in checks:
        print(f"{'ok ' if ok else 'FAIL'} {what}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
