"""Token counts and costs replies report, summed per scenario and run: missing is never zero."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitevals.report.runs import render, usage_from_json, usage_json, usage_line
from gitevals.run.artifact import Measure, Usage, run_usage, trial_usage, usage
from tests.support.artifacts import PARIS, artifact, result, scenario, transcript


def trial_with(*replies: dict[str, Any]) -> dict[str, Any]:
    t = transcript()
    t["turns"] = [{"final_answer": "Paris", **r} for r in replies]
    return result(0, PARIS, t)


def tokens(p: Any, c: Any) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": p, "completion_tokens": c}}


#: id, replies of one trial, (prompt, completion, cost) totals (None: not reported).
TRIALS: list[tuple[str, list[dict[str, Any]], tuple[Any, Any, Any]]] = [
    ("none", [{}], (None, None, None)),
    ("one-reply", [{**tokens(10, 2), "cost": 0.5}], (10, 2, 0.5)),
    ("summed-over-replies", [tokens(10, 2), tokens(5, 1)], (15, 3, None)),
    ("one-reply-missing-makes-it-unknown", [tokens(10, 2), {}], (None, None, None)),
    ("usage-cost", [{"usage": {"cost": 0.25}}], (None, None, 0.25)),
    ("top-level-cost-wins", [{"cost": 1, "usage": {"cost": 9}}], (None, None, 1)),
    ("zero-is-a-count", [tokens(0, 0)], (0, 0, None)),
    ("strings-are-not-counts", [tokens("10", "2")], (None, None, None)),
    ("bools-are-not-counts", [tokens(True, False)], (None, None, None)),
    ("negative", [{**tokens(-1, 2), "cost": -0.1}], (None, 2, None)),
    ("fractional-tokens", [tokens(1.5, 2)], (None, 2, None)),
    ("huge", [tokens(10**400, 1)], (10**400, 1, None)),
    ("no-replies", [], (None, None, None)),
]


@pytest.mark.parametrize(("replies", "totals"), [t[1:] for t in TRIALS],
                         ids=[t[0] for t in TRIALS])
def test_trial_usage(replies: list[dict[str, Any]], totals: tuple[Any, Any, Any]) -> None:
    u = trial_usage(trial_with(*replies))
    assert tuple(m.total for m in u.measures) == totals
    assert tuple(m.reported for m in u.measures) == tuple(int(t is not None) for t in totals)


def test_missing_trials_are_counted_not_summed_as_zero() -> None:
    trials = [trial_with(tokens(10, 2)), trial_with({}), trial_with(tokens(5, 1))]
    u = usage(trials)
    assert u == Usage(3, (Measure(15, 2), Measure(3, 2), Measure(None, 0)))
    assert usage_line(u) == "tokens 15 in / 3 out (1 of 3 trials reported none)"
    assert usage_json(u) == {"prompt_tokens": 15, "completion_tokens": 3, "cost": None,
                             "trials": 3, "reported": {"prompt_tokens": 2,
                                                       "completion_tokens": 2, "cost": 0}}
    assert usage_from_json(usage_json(u)) == u


def test_nothing_reported_prints_nothing() -> None:
    u = usage([trial_with({})])
    assert usage_line(u) is None
    assert usage_json(u)["prompt_tokens"] is None


def test_run_tables_show_usage_only_when_reported() -> None:
    art = artifact({"geo": [
        scenario("a", PARIS, [trial_with({**tokens(1200, 34), "cost": 0.0123})]),
        scenario("b", PARIS, [trial_with(tokens(34, 1)), trial_with({})]),
    ]})
    assert run_usage(art).trials == 3
    lines = render(art, "text").splitlines()
    assert lines[1:4] == [
        "case  scenario  verdict  passes  duration  tokens in/out         cost    first failure",
        "geo   a         pass     1/1     3 ms      1,200/34              0.0123",
        "geo   b         pass     2/2     6 ms      34/1 (1 of 2 trials)",
    ]
    assert lines[4].startswith("underpowered: 2 of 2 scenarios")
    assert lines[5] == ("tokens 1,234 in / 35 out (1 of 3 trials reported none); "
                        "cost 0.0123 (2 of 3 trials reported none)")
    md = render(art, "markdown")
    assert "| geo | b | ✅ pass | 2/2 | 6 ms | 34/1 (1 of 2 trials) |  |  |" in md


def test_input_and_output_tokens_count_as_prompt_and_completion() -> None:
    """The demo harness (and Anthropic-style replies) name them input/output_tokens."""
    u = trial_usage(trial_with({"usage": {"input_tokens": 7, "output_tokens": 2}},
                               {"usage": {"prompt_tokens": 3, "completion_tokens": 1}}))
    assert (u.get("prompt_tokens").total, u.get("completion_tokens").total) == (10, 3)


def test_a_run_cost_adds_up_trial_by_trial_as_its_scenarios_are_read_once() -> None:
    """The table reads each trial once for its scenario's and the run's totals; the run's
    cost is still the sum trial after trial (0.1 + 0.2 + 0.3 in that order is
    0.6000000000000001; adding the scenarios' totals would give 0.6)."""
    art = artifact({"geo": [
        scenario("a", PARIS, [trial_with({"cost": 0.1})]),
        scenario("b", PARIS, [trial_with({"cost": 0.2}), trial_with({"cost": 0.3})]),
    ]})
    doc = json.loads(render(art, "json"))
    assert doc["usage"]["cost"] == run_usage(art).get("cost").total == 0.1 + 0.2 + 0.3
    assert [s["usage"]["cost"] for s in doc["scenarios"]] == [0.1, 0.2 + 0.3]
    assert doc["usage"]["reported"]["cost"] == 3
