"""The suite's line in every format of diff: first, one line, with its test and rates."""

from __future__ import annotations

import json

from gitevals.diff import Diff, Side
from gitevals.diff.suite import assess
from gitevals.diff.verdicts import Tally, compare_tallies
from gitevals.report import diff as report
from gitevals.report.html import _diff


def _diff_of(drop: int) -> Diff:
    """40 scenarios in 8 cases, each losing ``drop`` of 20 passes on B."""
    ta = {(f"c{i // 5}", f"s{i}"): Tally("flaky", 15, 20) for i in range(40)}
    tb = {k: Tally("flaky", 15 - drop, 20) for k in ta}
    rows, suite = assess(compare_tallies(ta, tb), {}, "fdr", 0.05, 5.0)
    side = Side("v1", "a" * 40, "evals", run_id="r1")
    return Diff(side, Side("HEAD", "b" * 40, "evals", run_id="r2"), verdicts=rows, suite=suite)


def test_the_suite_comes_first_in_text_markdown_and_html() -> None:
    d = _diff_of(3)  # 15/20 -> 12/20 everywhere: a 15-point drop, no scenario alone
    assert d.suite is not None and d.suite.regressed
    text = report.render_text(d).splitlines()
    assert text[0].startswith("the suite regressed beyond noise, 0 regressed beyond noise")
    assert text[1].startswith("suite: -15.0 pts over 40 scenarios in 8 clusters, 95% interval")
    assert text[1].endswith("regressed beyond noise; this suite can detect a "
                            f"{d.suite.mde_pts:.1f}-point suite-wide drop, or a 61-point "
                            "drop in one scenario (80% power)")
    assert text[2].startswith("equivalence: a drop larger than 5 pts is not ruled out")
    assert text[3].startswith("noise: scenarios by the boschloo exact test under "
                              "Benjamini-Hochberg false discovery rate at 0.025 over 40 "
                              "scenarios, 1/2 of alpha 0.05; the suite by a paired mean")
    assert text[3].endswith("an unchanged harness fails this diff at most 5% of the time "
                            "whatever the suite's size")
    md = report.render_markdown(d).splitlines()
    assert md[0].startswith("**gitevals diff: the suite regressed beyond noise")
    assert md[2].startswith("- suite: -15.0 pts over 40 scenarios")
    html = _diff(d, "")
    assert html.index('<p class="suite">suite: -15.0 pts') < html.index("<table>")


def test_json_keeps_raw_p_and_the_suite_object() -> None:
    d = _diff_of(0)
    doc = json.loads(report.render_json(d))
    suite = doc["suite"]
    assert suite["estimate_pts"] == 0 and suite["change"] == "unchanged"
    assert suite["beyond_noise"] is False and suite["scenarios"] == 40
    assert suite["method"].startswith("paired mean of per-scenario differences")
    assert doc["control"] == "fdr"
    assert all(v["p"] is None and v["q"] is None for v in doc["verdicts"])
    # within noise is never printed as "no change"
    assert "within noise (not shown to have changed" in report.render_text(d)


def test_a_suite_of_two_clusters_claims_no_impossible_drop() -> None:
    """A new user's first diff (3 scenarios in 2 cases): the interval stays within ±100
    points and the line says no suite-wide drop is detectable, not a 600-point one."""
    ta = {("a", "s0"): Tally("pass", 5, 5), ("a", "s1"): Tally("pass", 5, 5),
          ("b", "s0"): Tally("pass", 5, 5)}
    tb = {("a", "s0"): Tally("fail", 0, 5), ("a", "s1"): Tally("pass", 5, 5),
          ("b", "s0"): Tally("pass", 5, 5)}
    rows, suite = assess(compare_tallies(ta, tb), {}, "fdr", 0.05)
    assert suite.ci_pts is not None
    assert suite.ci_pts == (-100.0, 100.0)  # clipped: the t quantile at 1 df is ~12.7
    side = Side("v1", "a" * 40, "evals", run_id="r1")
    line = report.suite_line(Diff(side, Side("HEAD", "b" * 40, "evals", run_id="r2"),
                                  verdicts=rows, suite=suite))
    assert line is not None
    assert suite.mde_pts is not None and suite.mde_pts > 100
    assert "no suite-wide drop is detectable with 2 clusters" in line
    assert not any(f"{n}-point" in line for n in range(101, 1000))
