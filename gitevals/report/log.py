"""Reporters for ``gitevals log``: the history as a terminal table, or as JSON.

One row per commit (newest first, as ``git log``), one column per scenario: ``✓``
pass, ``~`` flaky, ``✗`` fail, ``!`` broken, ``-`` not run, then passes/trials; ``▼``
after a cell that regressed beyond noise since the row below. Every name, tag and
subject is terminal-escaped (``visible``).
"""

from __future__ import annotations

import json

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
    head = ["commit", "subject", *(visible(f"{c}/{s}") for c, s in history.scenarios)]
    rows = [head]
    for j in reversed(range(len(history.commits))):
        commit = history.commits[j]
        rows.append([visible(commit.label), _subject(commit),
                     *(cell(points[j]) for points in history.points)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines += [f"{visible(c.label)}: run unreadable: {visible(c.problem)}"
              for c in reversed(history.commits) if c.problem is not None]
    n, r = len(history.commits), history.regressions()
    lines += [f"{n} commit{'' if n == 1 else 's'} with runs along the first-parent history of "
              f"{visible(tip)}, newest first; {r} regressed beyond noise "
              f"({history.test} test, p < {history.alpha:g})",
              f"✓ pass  ~ flaky  ✗ fail  ! broken  - not run  {REGRESSED} regressed beyond "
              "noise since the row below"]
    return "\n".join(lines) + "\n"


def _point(point: Point | None) -> dict[str, object] | None:
    if point is None:
        return None
    return {"verdict": point.verdict, "passes": point.passes, "trials": point.trials,
            "rate": point.rate, "interval": [point.low, point.high], "change": point.change,
            "p": point.p, "beyond_noise": point.beyond_noise, "regressed": point.regressed}


def render_json(history: History, tip: str) -> str:
    """Every commit (newest first) with a point per scenario (null: not in its run)."""
    commits = []
    for j in reversed(range(len(history.commits))):
        c = history.commits[j]
        commits.append({"commit": c.sha, "label": c.label, "tags": list(c.tags),
                        "subject": c.subject, "run_id": c.run_id, "problem": c.problem,
                        "points": [_point(points[j]) for points in history.points]})
    doc = {"format": "gitevals-log/1", "tip": tip, "test": history.test,
           "alpha": history.alpha, "regressions": history.regressions(),
           "scenarios": [{"case": c, "scenario": s} for c, s in history.scenarios],
           "commits": commits}
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
