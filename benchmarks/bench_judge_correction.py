"""Coverage of the judge-corrected rate's interval (issue 21 item 5), seeded.

    .venv/bin/python benchmarks/bench_judge_correction.py [--reps 1000] [--seed 21]

For each setting -- a judge (TPR, TNR), its calibration sizes (items labelled pass and
fail in the sealed test split), a true pass rate theta and the trials of a scenario --
the calibration counts and the judge's PASS count are drawn from their binomials
(``--reps`` times), and three 95 % intervals are checked for holding theta:

- corrected: gitevals' interval (``gitevals.stats.judge_correction``: the seeded
  bootstrap over the Jeffreys posteriors of the trials, TPR and TNR);
- exact-cal: the same Jeffreys interval of the trials mapped through Rogan-Gladen with
  the calibration's point TPR/TNR taken as exact (what ignoring the calibration's own
  uncertainty gives);
- raw: the Jeffreys interval of the raw PASS rate, uncorrected (what reporting the
  judge's PASS rate as the pass rate gives).

Printed per setting: each interval's coverage (with its 95 % Wilson interval) and the
mean width of gitevals' one; then the check (exit 1 when it fails): no setting's
coverage of gitevals' interval is below 93 % beyond simulation noise (the upper end of
its Wilson interval >= 93 %; nominal 95 %, less 2 points), and the mean over the
settings with a true rate inside (0, 1) is within 2 points of 95 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from scipy import stats

from gitevals.stats.judge_correction import Calibration, corrected, rogan_gladen

#: (TPR, TNR, labelled pass, labelled fail): a judge at the default bar measured on a
#: typical sealed split, a better one, one on a small split, one on a skewed split.
JUDGES = ((0.92, 0.90, 70, 30), (0.97, 0.95, 70, 30), (0.92, 0.90, 25, 25),
          (0.95, 0.90, 150, 15))
THETAS = (0.0, 0.3, 0.7, 0.95, 1.0)
TRIALS = (10, 50, 300)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _inside(lo: float | None, hi: float | None, theta: float) -> bool:
    return lo is not None and hi is not None and lo - 1e-12 <= theta <= hi + 1e-12


def setting(rng: np.random.Generator, reps: int, judge: tuple[float, float, int, int],
            theta: float, n: int) -> tuple[int, int, int, float]:
    """(hits of gitevals' interval, of the exact-calibration one, of the raw one, mean
    width of gitevals') over ``reps`` draws."""
    tpr, tnr, n_pos, n_neg = judge
    p = theta * tpr + (1 - theta) * (1 - tnr)
    ours = exact = raw = 0
    width = 0.0
    for _ in range(reps):
        tp, tn = int(rng.binomial(n_pos, tpr)), int(rng.binomial(n_neg, tnr))
        k = int(rng.binomial(n, p))
        got = corrected(k, n, Calibration(tp, n_pos, tn, n_neg))
        ours += _inside(got.low, got.high, theta)
        width += (got.high - got.low) if got.low is not None and got.high is not None else 1
        lo, hi = (float(x) for x in stats.beta.ppf([0.025, 0.975], k + 0.5, n - k + 0.5))
        exact += _inside(rogan_gladen(lo, tp / n_pos, tn / n_neg),
                         rogan_gladen(hi, tp / n_pos, tn / n_neg), theta)
        raw += _inside(lo, hi, theta)
    return ours, exact, raw, width / reps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'TPR':>4} {'TNR':>4} {'pos':>4} {'neg':>4} {'theta':>5} {'n':>4}  "
          f"{'corrected':>22}  {'exact-cal':>9}  {'raw':>5}  {'width':>5}")
    worst, failed, inside, started = 1.0, [], [], time.perf_counter()
    for judge in JUDGES:
        for theta in THETAS:
            for n in TRIALS:
                ours, exact, raw, width = setting(rng, args.reps, judge, theta, n)
                lo, hi = wilson(ours, args.reps)
                cov = ours / args.reps
                worst = min(worst, cov)
                if hi < 0.93:
                    failed.append((judge, theta, n, cov))
                if 0 < theta < 1:
                    inside.append(cov)
                print(f"{judge[0]:4.2f} {judge[1]:4.2f} {judge[2]:4d} {judge[3]:4d} "
                      f"{theta:5.2f} {n:4d}  {cov:6.1%} [{lo:6.1%}, {hi:6.1%}]  "
                      f"{exact / args.reps:9.1%}  {raw / args.reps:5.1%}  {width:5.3f}")
    print(f"\nworst coverage of the corrected interval: {worst:.1%} "
          f"({len(JUDGES) * len(THETAS) * len(TRIALS)} settings x {args.reps} draws, "
          f"{time.perf_counter() - started:.0f} s)")
    mean = sum(inside) / len(inside)
    print(f"mean coverage at true rates inside (0, 1): {mean:.1%}")
    for judge, theta, n, cov in failed:
        print(f"FAILED: coverage {cov:.1%} below 93% beyond noise at judge {judge}, "
              f"theta {theta}, n {n}")
    if abs(mean - 0.95) > 0.02:
        print(f"FAILED: mean coverage {mean:.1%} is not within 2 points of 95%")
    return 1 if failed or abs(mean - 0.95) > 0.02 else 0


if __name__ == "__main__":
    sys.exit(main())
