"""The suite's verdict: multiplicity control over the scenario rows and the paired suite test.

``assess`` is the one decision ``diff`` makes (and ``benchmarks/bench_suite_sim.py``
drives): given the per-scenario rows with their raw exact-test p, it

1. runs the paired suite-level test over the scenarios both sides ran
   (``gitevals.stats.paired``, clustered by case or a declared ``cluster:``);
2. spends alpha between that suite test and the scenarios' "regressed" family: the
   suite test is two-sided at alpha, so it calls "regressed" falsely at most alpha / 2
   of the time; the family of one-sided "regressed" tests is held at alpha / 2
   (``share`` 2, also when no suite test can be made, so a row's q is never below its
   two-sided p; halved again when goldens slices form a second family). By the union
   bound, "the suite regressed beyond noise OR some scenario did" -- what makes
   ``diff`` exit 1 -- happens at most alpha of the time when nothing changed, whatever
   the number of scenarios;
3. adjusts that family under ``--control`` (fdr: Benjamini-Hochberg, fwer: Holm; the
   "improved" calls form a family of their own, held alike): each row's ``q`` is its
   adjusted p times the share, and a row is beyond noise when ``q < alpha``; ``none``
   is the procedure before controls existed (two-sided p < alpha, the suite test too);
4. states what the suite could see: the minimum detectable suite-wide drop and the
   drop one scenario needs on its own, at 80 % power, both at the level actually used
   (``lone_level``), and marks each row ``underpowered`` at that same level;
5. with an equivalence margin, the two one-sided tests (``gitevals.stats.equivalence``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median

from gitevals.diff.power import underpowered
from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST, one_sided_less
from gitevals.diff.verdicts import VerdictRow
from gitevals.stats import equivalence, multiplicity, paired
from gitevals.stats import power as suite_power
from gitevals.stats.judge_correction import Calibration
from gitevals.stats.multiplicity import DEFAULT_CONTROL

DEFAULT_GOAL = 0.8


@dataclass(frozen=True)
class SuiteCorrected:
    """The suite's change corrected for the calibrated judge that alone decided the
    scenarios it covers (``diff.corrected.corrected_suite``; points, not fractions)."""

    estimate_pts: float
    ci_pts: tuple[float, float]
    raw_pts: float              # the raw paired mean over the same scenarios
    scenarios: int
    calibration: Calibration    # the one judge's counts (TPR tp of n_pos, TNR tn of n_neg)
    method: str = "rogan-gladen"


@dataclass(frozen=True)
class SuiteResult:
    """The ``suite`` object of ``diff --format json`` (points, not fractions)."""

    estimate_pts: float | None
    ci_pts: tuple[float, float] | None
    p: float | None             # the paired test's raw two-sided p
    q: float | None             # equal to p (two-sided at alpha): beyond noise when q < alpha
    change: str                 # regressed | improved | unchanged | not_tested
    beyond_noise: bool
    method: str
    scenarios: int
    mde_pts: float | None       # the suite-wide drop found with 80 % power
    clusters: int = 0
    confidence: float = 0.95    # of ci_pts
    scenario_mde_pts: float | None = None  # the drop one scenario needs on its own
    control: str = DEFAULT_CONTROL
    control_text: str = ""      # the control, its error rate and its level, in words
    alpha: float = DEFAULT_ALPHA
    why_not: str | None = None  # why no suite test was made
    equivalence_pts: float | None = None
    p_no_drop: float | None = None   # TOST: H0 "a drop of equivalence_pts or more"
    p_no_rise: float | None = None
    no_drop: bool | None = None      # a drop larger than equivalence_pts is ruled out
    share: int = 1              # a family's q is its adjusted p times this (alpha / share each)
    #: the change corrected for a calibrated judge, over the scenarios it alone decided
    corrected: SuiteCorrected | None = None
    corrected_why: str | None = None  # why there is none though some rows are corrected

    @property
    def regressed(self) -> bool:
        return self.change == "regressed" and self.beyond_noise


def _compared(r: VerdictRow) -> bool:
    return (r.sequential is None and r.a is not None and r.b is not None
            and r.a.trials > 0 and r.b.trials > 0)


def pairs_of(rows: Sequence[VerdictRow], clusters: Mapping[str, str]) -> list[paired.Pair]:
    """The scenarios both sides ran, clustered by ``clusters[case]`` (default: the case)."""
    return [paired.Pair(r.a.passes, r.a.trials, r.b.passes, r.b.trials,
                        clusters.get(r.case, r.case))
            for r in rows if _compared(r) and r.a is not None and r.b is not None]


def control_rows(rows: Sequence[VerdictRow], control: str, alpha: float, share: int,
                 test: str = DEFAULT_TEST) -> tuple[VerdictRow, ...]:
    """``rows`` with ``q`` and ``beyond_noise`` under ``control``.

    "Regressed" and "improved" are two families, each of one-sided p values: only a
    false "regressed" can fail a diff, so that family alone is held at alpha / ``share``
    (an "improved" call is held alike, and fails nothing). Every scenario both sides ran
    is in both families -- a row that moved the other way, or not at all, with p 1 -- so
    a family's size does not depend on the outcomes. A row's ``q`` is its family's
    adjusted p times ``share``: beyond noise when ``q < alpha``. Sequential rows keep
    their design's call. ``none`` is the procedure before controls: two-sided p < alpha.
    """
    if control == "none":
        return tuple(r if not _compared(r) else
                     replace(r, q=r.p, beyond_noise=r.p is not None and r.p < alpha)
                     for r in rows)
    family = [r for r in rows if _compared(r)]
    down = multiplicity.family([_one_sided(r, test, "regressed") for r in family],
                               control, share)
    up = multiplicity.family([_one_sided(r, test, "improved") for r in family],
                             control, share)
    by_key = {(r.case, r.scenario): (d if r.change == "regressed" else u)
              for r, d, u in zip(family, down, up, strict=True)}
    out = []
    for r in rows:
        if not _compared(r):
            out.append(r)
            continue
        q = by_key[(r.case, r.scenario)] if r.p is not None else None
        out.append(replace(r, q=q, beyond_noise=q is not None and q < alpha))
    return tuple(out)


def _one_sided(r: VerdictRow, test: str, direction: str) -> float:
    """The one-sided p of ``r`` for ``direction``; 1 when it did not move that way."""
    if r.change != direction or r.p is None or r.a is None or r.b is None:
        return 1.0
    first, second = (r.b, r.a) if direction == "regressed" else (r.a, r.b)
    return one_sided_less(test, first.passes, first.trials, second.passes, second.trials)


def _change(estimate: float) -> str:
    return "regressed" if estimate < 0 else "improved" if estimate > 0 else "unchanged"


def assess(rows: Sequence[VerdictRow], clusters: Mapping[str, str] | None = None,
           control: str = DEFAULT_CONTROL, alpha: float = DEFAULT_ALPHA,
           equivalence_pts: float | None = None, test: str = DEFAULT_TEST,
           mde: bool = True, others: int = 0) -> tuple[tuple[VerdictRow, ...], SuiteResult]:
    """The controlled rows and the suite's verdict (see the module's docstring).
    ``others``: further families that share alpha (1 when goldens slices are compared
    too: ``buckets.control_slices`` with the result's ``share``)."""
    pairs = pairs_of(rows, clusters or {})
    made = paired.compare(pairs, alpha) is not None
    # The suite's test is two-sided at alpha: its false "regressed" calls take alpha / 2.
    # The families (scenarios, goldens slices) split the other half (the whole of alpha
    # without a suite test); any false call of theirs counts, whatever its direction.
    # Without a suite test its half stays unspent: a lone row is then called exactly as
    # the two-sided test at alpha calls it (q = 2 x its one-sided p >= its two-sided p).
    families = max(1, bool(pairs) + others)
    share = 2 * families if control != "none" else 1
    rows = control_rows(rows, control, alpha, share, test)
    tests = len(pairs)
    level = lone_level(control, alpha, share, tests)
    rows = tuple(_powered(r, level, test) for r in rows)
    words = multiplicity.describe(control, alpha, tests, share, what="scenarios")
    scen_mde = _scenario_mde(pairs, level, test) if mde else None
    sequential = any(r.sequential is not None for r in rows)
    if not made:
        why = ("B is a sequential run: its stopped-early samples are read by their designs"
               if sequential else "fewer than 2 clusters of scenarios both sides ran"
               if pairs else "no scenario that both sides ran")
        return rows, SuiteResult(None, None, None, None, "not_tested", False, paired.METHOD,
                                 tests, None, len({p.cluster for p in pairs}), 0.0, scen_mde,
                                 control, words, alpha, why, equivalence_pts, share=share)
    suite = paired.compare(pairs, alpha)
    assert suite is not None
    q = suite.p
    mde_suite = suite_power.suite_mde(suite.se_cluster, suite.df, alpha, DEFAULT_GOAL,
                                      suite.se_noise)
    result = SuiteResult(
        # a difference of pass rates lies within ±100 points, whatever the t quantile of
        # a suite of few clusters says
        round(100 * suite.estimate, 6),
        (max(-100.0, round(100 * suite.low, 6)), min(100.0, round(100 * suite.high, 6))),
        suite.p, q, _change(suite.estimate), q < alpha and suite.estimate != 0, paired.METHOD,
        tests, None if mde_suite is None else round(100 * mde_suite, 6), suite.clusters,
        1 - alpha, scen_mde, control, words, alpha, None, share=share)
    if equivalence_pts is not None:
        e = equivalence.tost(suite.estimate, suite.se, suite.df, equivalence_pts / 100, alpha)
        result = replace(result, equivalence_pts=equivalence_pts, p_no_drop=e.p_lower,
                         p_no_rise=e.p_upper, no_drop=e.no_drop)
    return rows, result


def lone_level(control: str, alpha: float, share: int, tests: int) -> float:
    """The two-sided level at which the exact test must call a drop in one scenario
    alone for the control to call it: its one-sided p times ``share`` times the family's
    size must stay below alpha, and the two-sided p is twice the one-sided one, so
    ``2 alpha / (share m)`` (alpha / m for diff's usual share of 2: what ``plan`` uses);
    ``none`` calls at alpha."""
    if control == "none":
        return alpha
    return 2.0 * alpha / (share * max(1, tests))


def _powered(r: VerdictRow, level: float, test: str) -> VerdictRow:
    """``r`` marked underpowered at ``level``: a row whose trials cannot see a 20-point
    drop at the level the control holds it to reads "not measured", not "unchanged"."""
    if not _compared(r) or r.a is None or r.b is None:
        return r
    weak = underpowered(min(r.a.trials, r.b.trials), r.a.passes / r.a.trials, test=test,
                        alpha=level)
    return r if weak == r.underpowered else replace(r, underpowered=weak)


def _scenario_mde(pairs: Sequence[paired.Pair], level: float, test: str) -> float | None:
    """The drop (points) one scenario at the suite's median trials and median rate of A
    needs to be called with 80 % power at ``level`` (the level a lone drop faces)."""
    if not pairs:
        return None
    from gitevals.diff.power import scenario_mde

    trials = int(median(min(p.a_trials, p.b_trials) for p in pairs))
    rate = round(20 * median(p.a_passes / p.a_trials for p in pairs)) / 20
    found = scenario_mde(trials, rate, level, DEFAULT_GOAL, test)
    return None if found is None else 100 * found


def _or_one(p: float | None) -> float:
    """A row that did not move has no test: in the family it counts as p = 1."""
    return 1.0 if p is None else p
