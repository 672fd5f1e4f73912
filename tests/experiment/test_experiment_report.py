"""The experiment report built from run artifacts (pure) and its renderings: exact text,
hostile names escaped in every format, controls failing per lane."""

from __future__ import annotations

from typing import Any

from gitevals.experiment.controls import Pins
from gitevals.experiment.results import LaneResult, build, exit_code
from gitevals.report.experiment import render
from tests.support.artifacts import COMMIT, PARIS, artifact, result, scenario, transcript

HOSTILE = "geo\x1b]8;;http://x\x07[red]ok[/red]|*"


def _lane(name: str, answers: list[str], case: str = "geo") -> LaneResult:
    run: Any = artifact({case: [scenario("capital", PARIS, [
        result(i, PARIS, transcript(a)) for i, a in enumerate(answers)])]})
    pins = Pins(COMMIT, "2" * 40, {}, dict(run["files"]), {},
                {f"{case}/capital": (len(answers), 300.0)}, "0.1.0", "evals")
    return LaneResult(name, "HEAD", pins, f"evals/results/experiments/x/{name}.json", run)


META = {"id": "20261130T000000Z-abcdef", "tool_version": "0.1.0", "root": "evals",
        "cases": ["geo"], "repeat": 2, "jobs": 2, "conversations": 4, "max_samples": None,
        "settings": {}, "started_at": "s", "finished_at": "f"}


def test_text_report_exactly() -> None:
    doc = build(META, [_lane("a", ["Paris", "Paris"]), _lane("b", ["Paris", "Lyon"])])
    assert exit_code(doc) == 1 and doc["controls_held"] and not doc["passed"]
    lines = render(doc, "text").splitlines()
    assert lines[:9] == [
        "experiment 20261130T000000Z-abcdef: 2 lanes, 1 case, 2 repeats, 4 conversations",
        "",
        "lane  commit        env  pass rate [95% interval]    controls",
        f"a     {COMMIT[:12]}  -    2/2 100.0% [34.2%, 100.0%]  held",
        f"b     {COMMIT[:12]}  -    1/2 50.0% [9.5%, 90.5%]     held",
        "",
        "case  scenario  a         b",
        "geo   capital   pass 2/2  flaky 1/2",
        "",
    ]
    assert lines[-3:] == ["geo/capital  a vs b  2/2 vs 1/2  regressed  p=0.625  q=0.625", "",
                          "some samples failed; controls held"]


def test_a_lane_pinned_elsewhere_fails_only_its_controls() -> None:
    good, moved = _lane("a", ["Paris"]), _lane("b", ["Paris"])
    moved.run["files"]["evals/cases/geo.yaml"] = "4" * 40  # type: ignore[index]
    doc = build(META, [good, moved])
    assert exit_code(doc) == 1 and doc["passed"] and not doc["controls_held"]
    assert doc["lanes"][1]["controls"]["problems"] == [
        f"used evals/cases/geo.yaml blob {'4' * 12}, not {'3' * 12}"]
    assert doc["lanes"][0]["controls"]["held"]


def test_hostile_names_are_escaped_in_every_format() -> None:
    doc = build(META, [_lane("a", ["Paris"], HOSTILE), _lane("b", ["Lyon"], HOSTILE)])
    for fmt, terminal in (("text", False), ("text", True), ("markdown", False)):
        out = render(doc, fmt, terminal=terminal)
        assert "\x1b]8" not in out and "\x07" not in out, fmt
    rich = render(doc, "text", terminal=True)
    assert "[red]ok[/red]" in rich  # shown as text, never taken as markup
    assert "\\x1b]8;;http" in render(doc, "text")
    assert "\\[red\\]ok\\[/red\\]\\|\\*" in render(doc, "markdown")


def test_the_pairwise_test_is_diffs_and_can_be_fishers() -> None:
    from gitevals.diff.stats import two_sided

    lanes = [_lane("a", ["Paris"] * 6), _lane("b", ["Lyon"] * 5 + ["Paris"])]
    for test in ("boschloo", "fisher"):
        doc = build(META, lanes, test)
        (row,) = doc["comparisons"]
        assert (doc["test"], row["p"]) == (test, two_sided(test, 6, 6, 1, 6))
        assert row["beyond_noise"] is (row["p"] < 0.05)
