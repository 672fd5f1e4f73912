"""Trial planning: exact power of diff's test and the trials a side it needs, against scipy."""

from __future__ import annotations

import functools
import json

import pytest
from scipy import stats as sps

from gitevals.diff.power import (
    _boschloo_cutoffs,
    _by_statistic,
    _called,
    cutoffs,
    power,
    trials_needed,
    underpowered,
)
from tests.conftest import Repo, run_cli
from tests.support.scipy_fisher import fisher_pvalues


@functools.cache
def _scipy_p(test: str, n: int, xa: int, xb: int) -> float:
    """scipy's own p-value of one table: kept, as the sizes the tests below try overlap.
    Fisher's comes from every table of the size at once (``tests/support/scipy_fisher``,
    scipy's own steps and values, checked against ``fisher_exact`` below); Boschloo's
    (a maximisation a table) from ``boschloo_exact`` itself."""
    if test == "fisher":
        return float(fisher_pvalues(n)[xa, xb])
    table = [[xa, n - xa], [xb, n - xb]]
    return float(sps.boschloo_exact(table, alternative="two-sided").pvalue)


def _scipy_power(n: int, rate: float, drop: float, test: str, alpha: float = 0.05) -> float:
    """Power summed over every table, each decided by scipy's own test. A table of
    probability exactly 0 (A at a rate of 1 passes every trial) adds 0.0 whatever its
    decision: scipy is not asked about it, and the sum is the same to the last bit."""
    pa, pb = sps.binom.pmf(range(n + 1), n, rate), sps.binom.pmf(range(n + 1), n, rate - drop)
    total = 0.0
    for xa in range(n + 1):
        for xb in range(xa):
            weight = pa[xa] * pb[xb]
            if weight != 0.0 and _scipy_p(test, n, xa, xb) < alpha:
                total += weight
    return float(total)


@pytest.mark.parametrize(("rate", "drop"), [(0.9, 0.3), (0.8, 0.4), (1.0, 0.5), (0.6, 0.5),
                                            (0.95, 0.35)])
def test_planned_trials_match_scipy_fisher(rate: float, drop: float) -> None:
    n = trials_needed(rate, drop, 0.8, "fisher")
    assert n is not None
    assert _scipy_power(n, rate, drop, "fisher") >= 0.8
    for smaller in range(max(2, n - 12), n):  # the smallest size that reaches the goal
        assert _scipy_power(smaller, rate, drop, "fisher") < 0.8
    assert power(n, rate, drop, "fisher") == pytest.approx(_scipy_power(n, rate, drop, "fisher"),
                                                           abs=1e-9)


def test_the_vectorised_reference_is_scipys_fisher_exact() -> None:
    """The reference above is ``fisher_exact``'s p to the last bit, on the tables the power
    sums ask about (B passed less often): every one of the sizes 1 to 12 (each branch of
    scipy's two-sided test: p of 1 at the mode, a lone tail, both tails), and those of 36
    (the largest size summed) whose p is within a factor 4 of alpha = 0.05, where an
    error would change a call."""
    for n in (*range(1, 13), 36):
        got = fisher_pvalues(n)
        for xa, xb in ((a, b) for a in range(n + 1) for b in range(a)):
            if n == 36 and not 0.0125 < got[xa, xb] < 0.2:
                continue
            want = sps.fisher_exact([[xa, n - xa], [xb, n - xb]]).pvalue
            assert got[xa, xb] == want, (n, xa, xb)


@pytest.mark.parametrize(("rate", "drop"), [(0.9, 0.6), (1.0, 0.7)])
def test_planned_trials_match_scipy_boschloo(rate: float, drop: float) -> None:
    n = trials_needed(rate, drop, 0.8)
    assert n is not None and n <= 12  # scipy's Boschloo is slow: small sizes only
    assert power(n, rate, drop) == pytest.approx(_scipy_power(n, rate, drop, "boschloo"),
                                                 abs=1e-6)
    assert _scipy_power(n, rate, drop, "boschloo") >= 0.8
    assert _scipy_power(n - 1, rate, drop, "boschloo") < 0.8


@pytest.mark.parametrize(("n", "n_b"), [(6, 6), (10, 4), (12, 30), (25, 25)])
@pytest.mark.parametrize("test", ["boschloo", "fisher"])
def test_cutoffs_are_the_tests_own_calls(n: int, n_b: int, test: str) -> None:
    cut = cutoffs(n, test, 0.05, n_b=n_b)
    for xa in range(n + 1):
        for xb in range(n_b + 1):
            assert (xb <= cut[xa]) == _called(test, 0.05, xa, n, xb, n_b), (xa, xb)


@pytest.mark.parametrize(("n", "n_b", "alpha", "window"), [
    (30, 30, 0.05, (0, 30)), (48, 48, 0.001, (10, 40)), (50, 25, 0.01, (5, 25))])
def test_batched_statistics_find_the_per_table_region(n: int, n_b: int, alpha: float,
                                                      window: tuple[int, int]) -> None:
    """The numpy statistics (past a few hundred tables) give the cutoffs the per-table
    ``stats.log_stat`` gives, and each statistic within 1e-12 of it."""
    fast = _by_statistic(n, n_b, 0, n, window, batch=True)
    slow = _by_statistic(n, n_b, 0, n, window, batch=False)
    assert len(fast) == len(slow) > 400  # past _BATCH: the numpy path by default
    exact = {(xa, xb): key for key, xa, xb in slow}  # stats.log_stat, table by table
    for key, xa, xb in fast:
        assert key == pytest.approx(exact[xa, xb], rel=1e-12, abs=1e-300), (xa, xb)
    assert (_boschloo_cutoffs(n, n_b, alpha, 0, n, window, batch=True)
            == _boschloo_cutoffs(n, n_b, alpha, 0, n, window, batch=False))


def test_underpowered_and_impossible_drops() -> None:
    assert underpowered(10, 0.9)
    assert not underpowered(200, 0.9)
    assert not underpowered(10, 0.1)  # a 20-point drop from 10 % cannot happen
    assert trials_needed(0.1, 0.2) is None


#: A python target (imported once a run, forked per conversation): plan reads the run's
#: pass counts, not how the target was started.
PASSING = """\
def respond(messages):
    msg = messages[-1]
    return {"final_answer": "Paris" if msg["scenario"] == "sure" else
            ("Paris" if msg["trial"] % 2 else "Lyon"), "tool_calls": [], "hooks": [],
            "error": None}
"""


def test_plan_cli_reads_the_run_of_rev(repo: Repo) -> None:
    case = "defaults: {trials: 4, timeout: 10s}\nscenarios:\n" + "".join(
        f"  - id: {i}\n    user: Capital of France?\n"
        "    expect: [{final_answer_contains: Paris}]\n" for i in ("sure", "coin"))
    repo.commit({"harness.py": PASSING, "evals/cases/geo.yaml": case,
                 "pyproject.toml": '[tool.gitevals.target]\npython = "harness:respond"\n'},
                "cases")
    before = run_cli("plan", "--format", "json", cwd=repo.path)
    assert before.code == 0, before.err
    doc = json.loads(before.out)
    assert {r["source"] for r in doc["scenarios"]} == {"prior"} and doc["run_id"] is None
    assert run_cli("run", cwd=repo.path).code in (0, 1)
    r = run_cli("plan", "--format", "json", cwd=repo.path)
    rows = {row["scenario"]: row for row in json.loads(r.out)["scenarios"]}
    assert rows["sure"]["observed"] == "4/4" and rows["sure"]["rate"] == 1.0
    # two scenarios under the default control: a lone drop is tested at alpha / 2
    assert json.loads(r.out)["scenario_level"] == 0.025
    assert rows["sure"]["needed"] == trials_needed(1.0, 0.2, alpha=0.025)
    assert rows["coin"]["observed"] == "2/4"
    assert rows["coin"]["needed"] == trials_needed(0.5, 0.2, alpha=0.025)
    assert trials_needed(0.5, 0.2, alpha=0.025) > trials_needed(0.5, 0.2)
    suite = json.loads(r.out)["suite"]
    assert (suite["scenarios"], suite["clusters"]) == (2, 1) and suite["needed"] is None
    assert {row["status"] for row in rows.values()} == {"underpowered"}
    text = run_cli("plan", "--drop", "60", cwd=repo.path)
    assert "60-point drop" in text.out and "1 of 2 scenarios underpowered" in text.out
    assert "no drop possible" in text.out  # 50 % cannot drop 60 points
    show = run_cli("show", cwd=repo.path)
    assert "underpowered: 2 of 2 scenarios" in show.out
    bad = run_cli("plan", "--power", "1.5", cwd=repo.path)
    assert bad.code == 2 and "Traceback" not in bad.err
    tiny = run_cli("plan", "--alpha", "1e-17", cwd=repo.path)  # issue 25: StatisticsError
    assert tiny.code == 2 and "'1e-17' must be from 1e-06 to 0.5" in tiny.err
    assert "Traceback" not in tiny.err


def test_plan_defaults_are_the_libraries() -> None:
    """plan's argument defaults are written out (no gitevals.diff import at start-up)."""
    import argparse

    from gitevals.commands import plan
    from gitevals.diff import power as pw
    from gitevals.diff import stats

    parser = argparse.ArgumentParser()
    plan.add_arguments(parser)
    args = parser.parse_args([])
    assert (args.drop, args.power, args.prior) == (pw.DEFAULT_DROP * 100, pw.DEFAULT_POWER,
                                                   pw.DEFAULT_PRIOR)
    assert args.test == stats.DEFAULT_TEST
    # --alpha and --control default to [tool.gitevals.statistics], whose defaults these are
    from gitevals.settings import Settings
    assert (args.alpha, args.control) == (None, None)
    assert (Settings().alpha, Settings().control) == (stats.DEFAULT_ALPHA, "fdr")
