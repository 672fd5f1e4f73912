"""Simulated suites for issue 21: false alarms and power of diff's suite decision, seeded.

    .venv/bin/python benchmarks/bench_suite_sim.py [--diffs 400] [--seed 21] [--quick]

Drives the pure functions ``diff`` itself calls (``compare_tallies`` then
``gitevals.diff.suite.assess``) on simulated pass counts, so a thousand diffs of a
thousand scenarios take minutes. Scenario rates cycle 0.5, 0.7, 0.9; each case holds 5
scenarios (its cluster). Four procedures, on the same simulated counts:

- old:   every scenario at p < alpha, no suite test (diff before issue 21)
- none:  ``--control none``: every scenario at p < alpha, plus the suite test at alpha
- fdr:   the default: Benjamini-Hochberg over the scenarios, the suite test, alpha split
- fwer:  Holm over the scenarios, the suite test, alpha split

Printed: (1) null suites of 10, 100 and 1,000 scenarios at 5, 10, 20 and 40 trials --
the share of diffs that exit 1 ("regressed" anywhere), with a 95 % Wilson interval;
(2a) 5 of 100 scenarios 0.9 -> 0.4 at 30 trials: the share of diffs that find at least
4 of the 5, and the false calls among the other 95 (share of diffs with any, and the
mean false discovery proportion); (2b) a uniform 5-point drop over 100 scenarios at 20
trials: the share of diffs whose suite test calls it; (2c) 10 clusters of 10 scenarios
whose drops are correlated within a cluster (cluster drop ~ N(-5, 5) points, rates
around a cluster rate): coverage of the suite's 95 % interval for the mean drop, with
the cluster-robust interval and with clusters ignored. Exit 1 if a check of the issue
fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import sqrt
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from gitevals.diff.suite import assess
from gitevals.diff.verdicts import Tally, VerdictRow, compare_tallies
from gitevals.stats import paired

ALPHA = 0.05
RATES = (0.5, 0.7, 0.9)
PROCEDURES = ("old", "none", "fdr", "fwer")
Key = tuple[str, str]


def wilson(x: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    z, p = 1.959963984540054, x / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def keys(m: int, per_case: int = 5) -> list[Key]:
    return [(f"case{i // per_case:04d}", f"s{i % per_case}") for i in range(m)]


def tallies(ks: list[Key], passes: np.ndarray, trials: int) -> dict[Key, Tally]:
    return {k: Tally("flaky", int(x), trials) for k, x in zip(ks, passes, strict=True)}


def decide(ks: list[Key], xa: np.ndarray, xb: np.ndarray, trials: int
           ) -> dict[str, tuple[set[Key], bool]]:
    """Per procedure: the scenarios called regressed, and whether the suite was."""
    rows = compare_tallies(tallies(ks, xa, trials), tallies(ks, xb, trials), alpha=ALPHA)
    out = {"old": (_called(rows), False)}
    for control in ("none", "fdr", "fwer"):
        controlled, suite = assess(rows, {}, control, ALPHA, mde=False)
        out[control] = (_called(controlled), suite.regressed)
    return out


def _called(rows: tuple[VerdictRow, ...]) -> set[Key]:
    return {(r.case, r.scenario) for r in rows if r.change == "regressed" and r.beyond_noise}


def null_suites(rng: np.random.Generator, diffs: int, sizes: tuple[int, ...],
                trials_list: tuple[int, ...]) -> bool:
    print("1. unchanged harness: share of diffs that exit 1 (95 % Wilson interval)")
    print(f"   {'scenarios':>9} {'trials':>6}  " + "  ".join(f"{p:>20}" for p in PROCEDURES)
          + "  (1,000 scenarios: a quarter of the diffs)")
    ok = True
    for m in sizes:
        ks = keys(m)
        rates = np.array([RATES[i % 3] for i in range(m)])
        runs = diffs if m < 1000 else max(50, diffs // 4)  # the big suites cost 10x a diff
        for trials in trials_list:
            hits = dict.fromkeys(PROCEDURES, 0)
            for _ in range(runs):
                xa, xb = rng.binomial(trials, rates), rng.binomial(trials, rates)
                for proc, (called, suite) in decide(ks, xa, xb, trials).items():
                    hits[proc] += bool(called) or suite
            cells = []
            for proc in PROCEDURES:
                lo, hi = wilson(hits[proc], runs)
                cells.append(f"{hits[proc] / runs:6.3f} [{lo:.3f},{hi:.3f}]")
                if proc in ("fdr", "fwer") and lo > ALPHA:
                    ok = False
            print(f"   {m:>9} {trials:>6}  " + "  ".join(f"{c:>20}" for c in cells))
    return ok


def power_a(rng: np.random.Generator, diffs: int) -> bool:
    m, trials, dropped = 100, 30, 5
    ks = keys(m)
    rates_a = np.array([0.9 if i < dropped else RATES[i % 3] for i in range(m)])
    rates_b = rates_a.copy()
    rates_b[:dropped] = 0.4
    truth = set(ks[:dropped])
    found = dict.fromkeys(PROCEDURES, 0)
    any_false = dict.fromkeys(PROCEDURES, 0)
    fdp = dict.fromkeys(PROCEDURES, 0.0)
    for _ in range(diffs):
        xa, xb = rng.binomial(trials, rates_a), rng.binomial(trials, rates_b)
        for proc, (called, _) in decide(ks, xa, xb, trials).items():
            found[proc] += len(called & truth) >= 4
            false = len(called - truth)
            any_false[proc] += false > 0
            fdp[proc] += false / len(called) if called else 0.0
    print("\n2a. 5 of 100 scenarios 0.9 -> 0.4 at 30 trials")
    print(f"   {'procedure':>9}  {'>= 4 of 5 found':>16}  {'any false call':>15}  "
          f"{'mean false disc. prop.':>22}")
    for proc in PROCEDURES:
        print(f"   {proc:>9}  {found[proc] / diffs:16.3f}  {any_false[proc] / diffs:15.3f}  "
              f"{fdp[proc] / diffs:22.3f}")
    return (found["fdr"] / diffs >= 0.8 and fdp["fdr"] / diffs <= ALPHA
            and any_false["fwer"] / diffs <= ALPHA)


def power_b(rng: np.random.Generator, diffs: int) -> bool:
    m, trials = 100, 20
    ks = keys(m)
    rates_a = np.array([RATES[i % 3] for i in range(m)])
    rates_b = rates_a - 0.05
    suite_calls = dict.fromkeys(PROCEDURES, 0)
    any_call = dict.fromkeys(PROCEDURES, 0)
    for _ in range(diffs):
        xa, xb = rng.binomial(trials, rates_a), rng.binomial(trials, rates_b)
        for proc, (called, suite) in decide(ks, xa, xb, trials).items():
            suite_calls[proc] += suite
            any_call[proc] += suite or bool(called)
    print("\n2b. uniform 5-point drop over 100 scenarios at 20 trials")
    print(f"   {'procedure':>9}  {'suite called':>12}  {'diff exits 1':>12}")
    for proc in PROCEDURES:
        print(f"   {proc:>9}  {suite_calls[proc] / diffs:12.3f}  {any_call[proc] / diffs:12.3f}")
    return suite_calls["fdr"] / diffs >= 0.9


def coverage_c(rng: np.random.Generator, diffs: int) -> bool:
    clusters, per, trials = 10, 10, 20
    covered = {"cluster-robust": 0, "clusters ignored": 0}
    for _ in range(diffs):
        base = rng.uniform(0.55, 0.9, clusters)
        drops = rng.normal(-0.05, 0.05, clusters)
        pairs_c, pairs_i = [], []
        for c in range(clusters):
            ra = np.clip(base[c] + rng.normal(0, 0.03, per), 0.02, 0.98)
            rb = np.clip(ra + drops[c], 0.02, 0.98)
            xa, xb = rng.binomial(trials, ra), rng.binomial(trials, rb)
            for j in range(per):
                pairs_c.append(paired.Pair(int(xa[j]), trials, int(xb[j]), trials, f"c{c}"))
                pairs_i.append(paired.Pair(int(xa[j]), trials, int(xb[j]), trials, f"{c}.{j}"))
        # the estimand: the mean drop of the population of clusters these were drawn from
        truth = -0.05
        for name, pairs in (("cluster-robust", pairs_c), ("clusters ignored", pairs_i)):
            r = paired.compare(pairs, ALPHA)
            assert r is not None
            covered[name] += r.low <= truth <= r.high
    print("\n2c. 10 clusters x 10 scenarios, drops correlated within a cluster, 20 trials:"
          " coverage of the 95 % interval")
    for name, hits in covered.items():
        lo, hi = wilson(hits, diffs)
        print(f"   {name:>16}  {hits / diffs:.3f} [{lo:.3f}, {hi:.3f}]")
    return abs(covered["cluster-robust"] / diffs - 0.95) <= 0.02


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--diffs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--quick", action="store_true", help="sizes 10 and 100 only")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    sizes = (10, 100) if args.quick else (10, 100, 1000)
    checks = {
        "null: fdr/fwer false exit rate not above alpha": null_suites(
            rng, args.diffs, sizes, (5, 10, 20, 40)),
        "2a: >= 4 of 5 found in >= 80 % (fdr), false rates within alpha": power_a(
            rng, args.diffs),
        "2b: suite call >= 90 % (fdr)": power_b(rng, args.diffs),
        "2c: cluster-robust coverage within 2 points of 95 %": coverage_c(
            rng, max(args.diffs, 1000)),
    }
    print(f"\n{time.perf_counter() - start:.0f} s; seed {args.seed}, {args.diffs} diffs a row")
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
