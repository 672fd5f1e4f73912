"""Simulated suites for issue 21: false alarms, power and coverage of diff's decision, seeded.

    .venv/bin/python benchmarks/bench_suite_sim.py [--diffs 2000] [--seed 21] [--quick]

Every diff is decided as ``gitevals diff`` decides it, on simulated pass counts. The
per-scenario p values come from diff's own exact test (``gitevals.diff.stats``: one
table of every outcome per trial count, computed once), the family adjustments and the
paired suite test are then applied to all the diffs of a row at once with numpy. That
vectorized decision is checked, on the first diffs of every row, against
``compare_tallies`` + ``gitevals.diff.suite.assess`` themselves (the functions the CLI
calls): a single disagreement fails the run. Scenario rates cycle 0.5, 0.7, 0.9; a case
(diff's default cluster) holds 5 scenarios unless a row says otherwise. Four procedures,
on the same counts:

- old:   every scenario at two-sided p < alpha, no suite test (diff before issue 21)
- none:  ``--control none``: the same, plus the suite test at alpha
- fdr:   the default: Benjamini-Hochberg over the scenarios, the suite test, alpha split
- fwer:  Holm over the scenarios, the suite test, alpha split

Printed, each share with its 95 % Clopper-Pearson interval:
(1) unchanged harness, 10 / 100 / 1,000 scenarios at 5, 10, 20, 40 trials a side (and
100 one-scenario cases): the share of diffs that exit 1;
(2a) 5 of 100 scenarios 0.9 -> 0.4 at 30 trials: diffs finding >= 4 of the 5, diffs
with a false call among the other 95, the mean false discovery proportion;
(2b) a uniform 5-point drop over 100 scenarios at 20 trials: diffs whose suite test
calls it, for 100 independent scenarios as one-scenario cases (the issue's setting)
and as 20 cases of 5 (clustered by case, the default), and the paired test of before
(noise floor read with the t reference) beside it;
(2c) the same drop over 10 clusters of 10 scenarios: coverage of the suite's 95 %
interval, with correlated rates (a cluster's scenarios share a rate) and with
correlated drops too (a cluster's scenarios share a drop ~ N(-5, 5) points), cluster-
robust and with clusters ignored.
Exit 1 when a target of the issue is missed (or the vectorized decision ever differs
from diff's).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from scipy import special
from scipy import stats as sps

from gitevals.diff.stats import DEFAULT_TEST, one_sided_less, two_sided
from gitevals.diff.suite import assess
from gitevals.diff.verdicts import Tally, VerdictRow, compare_tallies

ALPHA = 0.05
RATES = (0.5, 0.7, 0.9)
PROCEDURES = ("old", "none", "fdr", "fwer")
SHARE = 2  # diff's scenarios family is held at alpha / 2 beside the suite test
CHECKED = 4  # diffs of every row also decided by diff's own functions


# ------------------------------------------------------------------ the exact tests


class Tables:
    """diff's exact p of every table at one trial count a side, computed once."""

    def __init__(self) -> None:
        self._two: dict[int, np.ndarray] = {}
        self._down: dict[int, np.ndarray] = {}

    def _build(self, n: int) -> None:
        two = np.ones((n + 1, n + 1))
        down = np.ones((n + 1, n + 1))
        for xa in range(n + 1):
            for xb in range(n + 1):
                if xa != xb:
                    two[xa, xb] = two_sided(DEFAULT_TEST, xa, n, xb, n)
                if xb < xa:  # "regressed": B passes less often, one-sided
                    down[xa, xb] = one_sided_less(DEFAULT_TEST, xb, n, xa, n)
        self._two[n], self._down[n] = two, down

    def p(self, xa: np.ndarray, xb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Two-sided p (1 where nothing moved) and the one-sided "regressed" p (1 where B
        did not pass less often), per diff and scenario."""
        if n not in self._two:
            self._build(n)
        return self._two[n][xa, xb], self._down[n][xa, xb]


# ------------------------------------------------------------------ the decision, vectorized


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p along the last axis."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, -1) * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[..., ::-1], axis=-1)[..., ::-1]
    out = np.empty_like(p)
    np.put_along_axis(out, order, np.minimum(ranked, 1.0), -1)
    return out


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p along the last axis."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, -1) * (m - np.arange(m))
    ranked = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(p)
    np.put_along_axis(out, order, ranked, -1)
    return out


@dataclass(frozen=True)
class SuiteTest:
    """The paired suite test of every diff of a row (fractions)."""

    estimate: np.ndarray
    p: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_before: np.ndarray  # the floor read with t(G - 1), as diff did before


def suite_test(xa: np.ndarray, xb: np.ndarray, n: int, cluster: np.ndarray) -> SuiteTest:
    """``gitevals.stats.paired.compare`` on arrays: CR1 with t(G - 1) and the trial-noise
    z test, the larger p and the wider interval."""
    m = xa.shape[-1]
    d = (xb - xa) / n
    est = d.mean(-1)
    g = int(cluster.max()) + 1
    sums = np.zeros((d.shape[0], g))
    np.add.at(sums.T, cluster, d.T)
    size = np.bincount(cluster, minlength=g)
    cr1 = g / (g - 1) * ((sums - size * est[:, None]) ** 2).sum(-1) / m ** 2
    rate = (xa + xb) / (2 * n)
    noise = (rate * (1 - rate) * (2 / n)).sum(-1) / m ** 2
    se_c, se_n = np.sqrt(cr1), np.sqrt(noise)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_c = np.where(se_c > 0, 2 * sps.t.sf(np.abs(est) / se_c, g - 1), 0.0)
        p_n = np.where(se_n > 0, special.erfc(np.abs(est) / se_n / np.sqrt(2)), 1.0)
        big = np.maximum(se_c, se_n)
        p_before = np.where(big > 0, 2 * sps.t.sf(np.abs(est) / big, g - 1), 1.0)
    p = np.where(se_n > 0, np.maximum(p_c, p_n), 1.0)
    half = np.maximum(sps.t.ppf(1 - ALPHA / 2, g - 1) * se_c, sps.norm.ppf(1 - ALPHA / 2) * se_n)
    return SuiteTest(est, np.minimum(p, 1.0), est - half, est + half, np.minimum(p_before, 1.0))


@dataclass(frozen=True)
class Decisions:
    """Per procedure: which scenarios each diff calls regressed, and its suite call."""

    called: dict[str, np.ndarray]  # (diffs, scenarios) bool
    suite: dict[str, np.ndarray]   # (diffs,) bool

    def exits(self, proc: str) -> np.ndarray:
        return self.called[proc].any(-1) | self.suite[proc]


def decide(tables: Tables, xa: np.ndarray, xb: np.ndarray, n: int, cluster: np.ndarray
           ) -> tuple[Decisions, SuiteTest]:
    two, down = tables.p(xa, xb, n)
    regressed = xb < xa
    s = suite_test(xa, xb, n, cluster)
    suite_call = (s.p < ALPHA) & (s.estimate < 0)
    raw = regressed & (two < ALPHA)
    called = {"old": raw, "none": raw,
              "fdr": regressed & (np.minimum(SHARE * bh(down), 1.0) < ALPHA),
              "fwer": regressed & (np.minimum(SHARE * holm(down), 1.0) < ALPHA)}
    suite = {"old": np.zeros(len(xa), bool), "none": suite_call, "fdr": suite_call,
             "fwer": suite_call}
    return Decisions(called, suite), s


def check_against_diff(xa: np.ndarray, xb: np.ndarray, n: int, cluster: np.ndarray,
                       got: Decisions) -> None:
    """The first diffs of a row, decided by diff's own functions: the same calls."""
    m = xa.shape[-1]
    keys = [(f"case{int(c):04d}", f"s{i:04d}") for i, c in enumerate(cluster)]
    for k in range(min(CHECKED, len(xa))):
        ta = {key: Tally("flaky", int(x), n) for key, x in zip(keys, xa[k], strict=True)}
        tb = {key: Tally("flaky", int(x), n) for key, x in zip(keys, xb[k], strict=True)}
        rows = compare_tallies(ta, tb, alpha=ALPHA)
        index = {key: i for i, key in enumerate(keys)}
        want = {"old": (_called(rows, index, m), False)}
        for control in ("none", "fdr", "fwer"):
            controlled, result = assess(rows, {}, control, ALPHA, mde=False)
            want[control] = (_called(controlled, index, m), result.regressed)
        for proc, (called, suite) in want.items():
            if (called != got.called[proc][k]).any() or suite != bool(got.suite[proc][k]):
                sys.exit(f"the vectorized decision differs from diff's ({proc}, n={n}, "
                         f"m={m}, diff {k}): fix the benchmark before reading it")


def _called(rows: tuple[VerdictRow, ...], index: dict[tuple[str, str], int], m: int
            ) -> np.ndarray:
    out = np.zeros(m, bool)
    for r in rows:
        if r.change == "regressed" and r.beyond_noise:
            out[index[(r.case, r.scenario)]] = True
    return out


# ------------------------------------------------------------------ the simulations


def clopper(x: int, n: int) -> tuple[float, float]:
    """The 95 % Clopper-Pearson interval of x of n."""
    lo = 0.0 if x == 0 else float(sps.beta.ppf(0.025, x, n - x + 1))
    hi = 1.0 if x == n else float(sps.beta.ppf(0.975, x + 1, n - x))
    return lo, hi


def share(x: int, n: int) -> str:
    lo, hi = clopper(x, n)
    return f"{100 * x / n:5.1f} % [{100 * lo:4.1f}, {100 * hi:4.1f}]"


def layout(m: int, per_case: int) -> tuple[np.ndarray, np.ndarray]:
    """Rates cycling 0.5/0.7/0.9 and each scenario's cluster (its case)."""
    rates = np.array([RATES[i % 3] for i in range(m)])
    return rates, np.arange(m) // per_case


def run_decided(rng: np.random.Generator, tables: Tables, ra: np.ndarray, rb: np.ndarray,
                n: int, cluster: np.ndarray, diffs: int) -> tuple[Decisions, SuiteTest]:
    xa = rng.binomial(n, ra, (diffs, len(ra)))
    xb = rng.binomial(n, rb, (diffs, len(rb)))
    got, s = decide(tables, xa, xb, n, cluster)
    check_against_diff(xa, xb, n, cluster, got)
    return got, s


def null_suites(rng: np.random.Generator, tables: Tables, diffs: int,
                settings: list[tuple[int, int, int]], strict: bool) -> bool:
    """``strict``: every fdr/fwer share at most alpha; otherwise (``--quick``, few diffs)
    no share whose interval lies wholly above alpha."""
    print("1. unchanged harness (A and B pass at the same rates): share of diffs that exit 1")
    head = "".join(f"{p:>27}" for p in PROCEDURES)
    print(f"   {'scenarios':>9} {'a case':>6} {'trials':>6}{head}")
    ok = True
    for m, per_case, n in settings:
        rates, cluster = layout(m, per_case)
        got, _ = run_decided(rng, tables, rates, rates, n, cluster, diffs)
        hits = {p: int(got.exits(p).sum()) for p in PROCEDURES}
        ok &= all((hits[p] / diffs if strict else clopper(hits[p], diffs)[0]) <= ALPHA
                  for p in ("fdr", "fwer"))
        cells = "".join(f"{share(hits[p], diffs):>27}" for p in PROCEDURES)
        print(f"   {m:>9,} {per_case:>6} {n:>6}{cells}")
    return ok


def power_a(rng: np.random.Generator, tables: Tables, diffs: int) -> bool:
    m, n, dropped = 100, 30, 5
    ra, cluster = layout(m, 5)
    ra[:dropped] = 0.9
    rb = ra.copy()
    rb[:dropped] = 0.4
    got, _ = run_decided(rng, tables, ra, rb, n, cluster, diffs)
    print(f"\n2a. 5 of 100 scenarios 0.9 -> 0.4 at 30 trials ({diffs} diffs)")
    print(f"   {'procedure':>9}{'>= 4 of 5 found':>27}{'a false call (any)':>27}"
          f"{'mean false disc. prop.':>24}")
    ok = True
    for proc in PROCEDURES:
        called = got.called[proc]
        found = int((called[:, :dropped].sum(-1) >= 4).sum())
        false = called[:, dropped:].sum(-1)
        anyfalse = int((false > 0).sum())
        fdp = float(np.where(called.any(-1), false / np.maximum(called.sum(-1), 1), 0).mean())
        print(f"   {proc:>9}{share(found, diffs):>27}{share(anyfalse, diffs):>27}"
              f"{100 * fdp:22.2f} %")
        if proc == "fdr":  # the stated rate: false discovery rate at alpha / 2
            ok &= found / diffs >= 0.8 and fdp <= ALPHA / SHARE
        if proc == "fwer":  # the stated rate: family-wise error at alpha / 2
            ok &= anyfalse / diffs <= ALPHA / SHARE
    print(f"   (stated rates: fdr holds the false discovery rate, fwer the chance of any false"
          f" call, at alpha / {SHARE} = {ALPHA / SHARE:g}: the suite test has the other half)")
    return ok


def power_b(rng: np.random.Generator, tables: Tables, diffs: int) -> bool:
    m, n = 100, 20
    print(f"\n2b. uniform 5-point drop over 100 scenarios at 20 trials ({diffs} diffs a row)")
    print(f"   {'layout':>26}{'suite called (fdr)':>27}{'before: floor on t(G-1)':>27}"
          f"{'diff exits 1 (fdr)':>27}{'old: exits 1':>27}")
    ok = True
    for per_case, label in ((1, "100 one-scenario cases"), (5, "20 cases of 5")):
        ra, cluster = layout(m, per_case)
        got, s = run_decided(rng, tables, ra, ra - 0.05, n, cluster, diffs)
        suite = int(got.suite["fdr"].sum())
        before = int(((s.p_before < ALPHA) & (s.estimate < 0)).sum())
        print(f"   {label:>26}{share(suite, diffs):>27}{share(before, diffs):>27}"
              f"{share(int(got.exits('fdr').sum()), diffs):>27}"
              f"{share(int(got.exits('old').sum()), diffs):>27}")
        ok &= suite / diffs >= 0.9
    return ok


def coverage_c(rng: np.random.Generator, tables: Tables, diffs: int) -> bool:
    clusters, per, n = 10, 10, 20
    cluster = np.repeat(np.arange(clusters), per)
    singles = np.arange(clusters * per)
    print(f"\n2c. 10 clusters x 10 scenarios, 20 trials, true mean change -5 points: coverage "
          f"of the suite's 95 % interval ({diffs} diffs a row)")
    print(f"   {'clusters':>28}{'cluster-robust (diff)':>27}{'clusters ignored':>27}")
    ok = True
    for label, spread in (("correlated rates", 0.0), ("correlated rates and drops", 0.05)):
        base = rng.uniform(0.35, 0.8, (diffs, clusters))
        ra = np.repeat(base, per, -1) + rng.uniform(-0.05, 0.05, (diffs, clusters * per))
        drop = np.clip(rng.normal(-0.05, spread, (diffs, clusters)), -0.2, 0.1)
        rb = ra + np.repeat(drop, per, -1)  # stays in (0, 1): no clipping shifts the mean
        xa, xb = rng.binomial(n, ra), rng.binomial(n, rb)
        hits = []
        for groups in (cluster, singles):
            s = suite_test(xa, xb, n, groups)
            hits.append(int(((s.low <= -0.05) & (s.high >= -0.05)).sum()))
        _check_intervals(xa, xb, n, cluster, suite_test(xa, xb, n, cluster))
        print(f"   {label:>28}{share(hits[0], diffs):>27}{share(hits[1], diffs):>27}")
        ok &= abs(hits[0] / diffs - 0.95) <= 0.02
    return ok


def _check_intervals(xa: np.ndarray, xb: np.ndarray, n: int, cluster: np.ndarray,
                     got: SuiteTest) -> None:
    from gitevals.stats import paired

    for k in range(CHECKED):
        pairs = [paired.Pair(int(a), n, int(b), n, str(c))
                 for a, b, c in zip(xa[k], xb[k], cluster, strict=True)]
        r = paired.compare(pairs, ALPHA)
        assert r is not None
        if abs(r.low - got.low[k]) > 1e-9 or abs(r.high - got.high[k]) > 1e-9:
            sys.exit("the vectorized interval differs from diff's: fix the benchmark")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--diffs", type=int, default=2000, help="diffs a row (default 2000)")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--quick", action="store_true",
                    help="200 diffs a row, 1,000-scenario suites at 5 and 10 trials only")
    args = ap.parse_args()
    diffs = 200 if args.quick else args.diffs
    rng = np.random.default_rng(args.seed)
    tables = Tables()
    start = time.perf_counter()
    settings = [(m, per_case, n) for m, per_case in ((10, 5), (100, 5), (100, 1), (1000, 5))
                for n in ((5, 10) if args.quick and m == 1000 else (5, 10, 20, 40))]
    null = null_suites(rng, tables, diffs, settings, strict=not args.quick)
    checks = {
        "1: fdr and fwer exit 1 on an unchanged harness in at most alpha of diffs": null,
        "2a: >= 4 of 5 found in >= 80 % (fdr); false calls within the stated rates":
            power_a(rng, tables, diffs),
        "2b: the suite test calls a uniform 5-point drop in >= 90 % (both layouts)":
            power_b(rng, tables, diffs),
        "2c: the suite interval covers within 2 points of 95 %": coverage_c(rng, tables, diffs),
    }
    print(f"\n{time.perf_counter() - start:.0f} s; seed {args.seed}, {diffs} diffs a row, "
          f"alpha {ALPHA}; every row's first {CHECKED} diffs also decided by diff's own code")
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
