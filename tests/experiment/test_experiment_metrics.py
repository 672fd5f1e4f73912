"""The pure parts of an experiment: measures per trial, summaries, the interval, lanes."""

from __future__ import annotations

from typing import Any

import pytest
from scipy import stats as scipy_stats

from gitevals.errors import UsageError
from gitevals.experiment.lanes import RepeatedPlan, check_matrix, parse_lane, repeated
from gitevals.experiment.metrics import counter, pass_rate, summarize, trial_metrics
from gitevals.model import Case, Scenario
from gitevals.run.runner import Plan
from gitevals.settings import Settings


@pytest.mark.parametrize(("passes", "trials"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10),
                                                (37, 100), (999, 1000)])
def test_the_interval_is_wilsons_as_scipy_computes_it(passes: int, trials: int) -> None:
    ci = scipy_stats.binomtest(passes, trials).proportion_ci(0.95, method="wilson")
    rate = pass_rate(passes, trials)
    assert rate.rate == passes / trials
    assert rate.low == pytest.approx(ci.low, abs=1e-12)
    assert rate.high == pytest.approx(ci.high, abs=1e-12)
    assert 0.0 <= rate.low <= rate.rate <= rate.high <= 1.0  # type: ignore[operator]


def test_no_trials_is_unknown_not_zero() -> None:
    assert pass_rate(0, 0).as_json() == {"passes": 0, "trials": 0, "rate": None,
                                         "low": None, "high": None}


def test_summaries_leave_missing_values_out() -> None:
    assert summarize([1, None, 3, None]) == (2, 2, 2.0, 1.0)
    assert summarize([None, None]) == (0, 2, None, None)
    assert summarize([]) == (0, 0, None, None)
    assert summarize([5]) == (1, 0, 5.0, 0.0)


@pytest.mark.parametrize(("reply", "value"), [
    ({"retries": 2}, 2), ({"usage": {"retries": 0}}, 0), ({"retries": True}, None),
    ({"retries": -1}, None), ({"retries": 1.5}, None), ({"retries": "2"}, None), ({}, None),
], ids=["top", "in-usage", "bool", "negative", "fraction", "string", "absent"])
def test_counters_are_whole_numbers(reply: dict[str, Any], value: int | None) -> None:
    assert counter(reply, "retries") == value


def _trial(*replies: dict[str, Any], error: Any = None) -> Any:
    return {"trial": 0, "error": error, "graders": [], "assertions": [], "passed": True,
            "transcript": {"final_answer": "x", "tool_calls": [{"name": "a"}, {"name": "b"}],
                           "hooks": [], "error": None, "turns": list(replies),
                           "duration_ms": 300}}


def test_trial_measures() -> None:
    m = trial_metrics(_trial({"final_answer": "x", "retries": 1, "error": "e"},
                             {"final_answer": "x", "retries": 2, "usage": {"prompt_tokens": 3}},
                             error={"kind": "target_crash", "message": "m"}))
    assert m["iterations"] == 2 and m["latency_ms_per_turn"] == 150
    assert m["tool_calls"] == 2 and m["errors"] == 2 and m["retries"] == 3
    assert m["prompt_tokens"] is None  # one reply did not report it: the sum is unknown
    assert m["compactions"] is None and m["cost"] is None
    assert trial_metrics(_trial())["latency_ms_per_turn"] is None


def test_repeats_multiply_trials_and_a_scenario_sits_out_the_same_conversations() -> None:
    case = Case("c", "evals/cases/c.yaml", (Scenario("two", ("hi",), (), 2, 10.0),
                                            Scenario("one", ("hi",), (), 1, 10.0)))
    base = Plan(Settings(), (case,), (), (), {})
    plan = repeated(base, 3)
    assert isinstance(plan, RepeatedPlan)
    assert [plan.trials_of(s) for s in case.scenarios] == [6, 3]
    assert plan.conversations(case) == 6 and plan.total() == 9
    assert check_matrix(base, 4, 3, 24) == 24
    with pytest.raises(UsageError, match=r"1 case \(2 conversations with their trials\) × "
                                         r"4 lanes × 3 repeats = 24 conversations"):
        check_matrix(base, 4, 3, 23)


def test_lane_values_may_hold_commas_and_equals() -> None:
    lane = parse_lane("ft=v1.2,env:MODEL=a,b=c,env:API_KEY=k")
    assert (lane.name, lane.rev, lane.env) == ("ft", "v1.2", {"API_KEY": "k", "MODEL": "a,b=c"})
