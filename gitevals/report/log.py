"""Reporters for ``gitevals log``: the history as a terminal table, or as JSON.

One row per commit (newest first, as ``git log``): the suite's paired change since the
row below (``▼`` when it regressed beyond noise), then one column per scenario: ``✓``
pass, ``~`` flaky, ``✗`` fail, ``!`` broken, ``-`` not run, then passes/trials; ``▼``
after a cell that regressed beyond noise since the row below, decided as ``diff``
decides it (the same control over the scenarios, named under the table). Every name,
tag and subject is terminal-escaped (``visible``).
"""

from __future__ import annotations

import json

from gitevals.diff.suite import SuiteResult
from gitevals.report.history import Commit, History, Point
from gitevals.text import visible

MARKS = {"pass": "✓", "flaky": "~", "fail": "✗", "broken": "!", "not_run": "-"}
REGRESSED = "▼"
#: Characters of a commit subject shown in the text table (json has all of it).
SUBJECT = 40


def cell(point: Point | None) -> str:
    """``✓ 10/10``, ``✗ 0/10 ▼``; empty when the commit's run did not hold the scenario."""
    if point is None:
        return ""
    text = f"{MARKS.get(point.verdict, '?')} {point.passes}/{point.trials}"
    return f"{text} {REGRESSED}" if point.regressed else text


def suite_cell(suite: SuiteResult | None) -> str:
    """``-4.2 pts ▼`` (regressed beyond noise), ``+0.8 pts``; empty with no comparison."""
    if suite is None or suite.estimate_pts is None:
        return "" if suite is None else "not tested"
    text = f"{suite.estimate_pts:+.1f} pts"
    return f"{text} {REGRESSED}" if suite.regressed else text


def _suite_at(history: History, j: int) -> SuiteResult | None:
    return history.suites[j] if j < len(history.suites) else None


def decided(history: History) -> str:
    """How a cell's "regressed beyond noise" was decided: the test and the control."""
    if history.control == "none":
        return (f"{history.test} test, each scenario at p < {history.alpha:g}: no "
                "multiple-comparison control (--control none)")
    how = history.control_text or f"{history.control} control at {history.alpha:g}"
    return (f"{history.test} test under {how}; the suite by the paired test at "
            f"{history.alpha:g}, as `gitevals diff` decides")


def _subject(commit: Commit) -> str:
    if commit.problem is not None:
        return "(run unreadable: see below)"
    text = visible(commit.subject)
    return text if len(text) <= SUBJECT else text[: SUBJECT - 1] + "…"


def render_text(history: History, tip: str) -> str:
    """The aligned table, a legend line under it."""
    if not history.commits:
        return (f"no runs along the first-parent history of {visible(tip)}: make one with "
                "`gitevals run`\n")
    head = ["commit", "subject", "suite",
            *(visible(f"{c}/{s}") for c, s in history.scenarios)]
    rows = [head]
    for j in reversed(range(len(history.commits))):
        commit = history.commits[j]
        rows.append([visible(commit.label), _subject(commit), suite_cell(_suite_at(history, j)),
                     *(cell(points[j]) for points in history.points)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines += [f"{visible(c.label)}: run unreadable: {visible(c.problem)}"
              for c in reversed(history.commits) if c.problem is not None]
    n, r = len(history.commits), history.regressions()
    lines += [f"{n} commit{'' if n == 1 else 's'} with runs along the first-parent history of "
              f"{visible(tip)}, newest first; {r} scenario move{'s' * (r != 1)} and "
              f"{history.suite_regressions()} suite move{'s' * (history.suite_regressions() != 1)}"
              f" regressed beyond noise",
              f"noise: {decided(history)}",
              f"✓ pass  ~ flaky  ✗ fail  ! broken  - not run  {REGRESSED} regressed beyond "
              "noise since the row below"]
    return "\n".join(lines) + "\n"


def _point(point: Point | None) -> dict[str, object] | None:
    if point is None:
        return None
    return {"verdict": point.verdict, "passes": point.passes, "trials": point.trials,
            "rate": point.rate, "interval": [point.low, point.high], "change": point.change,
            "p": point.p, "q": point.q, "beyond_noise": point.beyond_noise,
            "regressed": point.regressed}


def _suite(suite: SuiteResult | None) -> dict[str, object] | None:
    if suite is None:
        return None
    return {"estimate_pts": suite.estimate_pts,
            "ci_pts": list(suite.ci_pts) if suite.ci_pts is not None else None,
            "p": suite.p, "change": suite.change, "beyond_noise": suite.beyond_noise,
            "method": suite.method, "scenarios": suite.scenarios, "clusters": suite.clusters,
            "why_not": suite.why_not}


def render_json(history: History, tip: str) -> str:
    """Every commit (newest first) with a point per scenario (null: not in its run)."""
    commits = []
    for j in reversed(range(len(history.commits))):
        c = history.commits[j]
        commits.append({"commit": c.sha, "label": c.label, "tags": list(c.tags),
                        "subject": c.subject, "run_id": c.run_id, "problem": c.problem,
                        "suite": _suite(_suite_at(history, j)),
                        "points": [_point(points[j]) for points in history.points]})
    doc = {"format": "gitevals-log/1", "tip": tip, "test": history.test,
           "alpha": history.alpha, "control": history.control, "decided": decided(history),
           "regressions": history.regressions(),
           "suite_regressions": history.suite_regressions(),
           "scenarios": [{"case": c, "scenario": s} for c, s in history.scenarios],
           "commits": commits}
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
