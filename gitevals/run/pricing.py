"""What a run spent, target and judge apart, at the prices of ``gitevals/prices.py``.

Cost is a first-class limit (``run --cost-limit``): a target that reports only token
counts is priced from the table of the commit's settings, which every artifact records,
so a report computes the same cost later from the artifact alone. The table in an
artifact may be forged: it is read defensively (finite numbers from 0 to ``MAX_PRICE``).
Pure: no IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from gitevals.prices import Prices, prices_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import Run, Trial

def _count(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _tokens(usage: JSON) -> tuple[int, int] | None:
    """Prompt and completion tokens of an OpenAI- or Anthropic-style ``usage``, or None."""
    if not isinstance(usage, dict):
        return None
    p = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
    c = _count(usage.get("completion_tokens", usage.get("output_tokens")))
    return None if p is None or c is None else (p, c)


def reply_cost(reply: JSONObject, prices: Prices) -> float | None:
    """The cost of one reply computed from its tokens: priced by the model it names
    (``model``), else by ``[pricing] target``; None when it cannot be priced."""
    tokens = _tokens(reply.get("usage"))
    model = reply.get("model")
    price = prices.of(model if isinstance(model, str) else prices.target)
    return None if tokens is None or price is None else price.cost(*tokens)


class JudgeUsage(NamedTuple):
    """What the judge's answers reported over a run: ``calls`` to it, of which ``reported``
    gave both token counts (summed in ``prompt_tokens``/``completion_tokens``), and their
    cost at the judge model's price (None when it has none, or no call reported)."""

    calls: int
    reported: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None


NO_JUDGE_USAGE = JudgeUsage(0, 0, 0, 0, None)


def trial_judge_usage(trial: Trial, prices: Prices) -> JudgeUsage:
    """The judge usage recorded on one trial's grader answers."""
    from gitevals.run.artifact import judge_calls

    calls = reported = prompt = completion = 0
    for answer in trial["graders"]:
        # the artifact may be forged: the counts are checked as a worker's are
        used = judge_calls(answer.get("usage"))
        if used is None:
            continue
        calls, reported = calls + used["calls"], reported + used["reported"]
        prompt, completion = prompt + used["prompt_tokens"], completion + used["completion_tokens"]
    price = prices.of(prices.judge)
    cost = price.cost(prompt, completion) if price is not None and reported else None
    return JudgeUsage(calls, reported, prompt, completion, cost)


def plus(a: JudgeUsage, b: JudgeUsage) -> JudgeUsage:
    cost = a.cost if b.cost is None else b.cost if a.cost is None else a.cost + b.cost
    return JudgeUsage(a.calls + b.calls, a.reported + b.reported,
                      a.prompt_tokens + b.prompt_tokens,
                      a.completion_tokens + b.completion_tokens, cost)


def judge_usage(run: Run) -> JudgeUsage:
    """The judge usage of every trial of ``run``, priced from its recorded settings."""
    from gitevals.run.artifact import scenarios

    prices = prices_of(run["settings"])
    total = NO_JUDGE_USAGE
    for _, s in scenarios(run):
        for t in s["results"]:
            total = plus(total, trial_judge_usage(t, prices))
    return total


def trial_cost(trial: Trial, prices: Prices) -> float:
    """What one trial spent as far as it can be known (target replies that report or can
    be priced, and judge calls at the judge's price): what the cost limit counts."""
    from gitevals.run.artifact import reply_reported_cost

    target = 0.0
    for reply in trial["transcript"]["turns"]:
        if isinstance(reply, dict):
            cost = reply_reported_cost(reply, prices)
            target += cost if cost is not None else 0.0
    judged = trial_judge_usage(trial, prices).cost
    return target + (judged or 0.0)


class CostMeter:
    """The running cost of a run's finished trials, against ``run --cost-limit``: once
    it reaches ``limit``, ``crossed`` is called once (it stops the run as SIGINT does).
    Thread-safe: trials finish on many threads."""

    def __init__(self, prices: Prices, limit: float, crossed: Callable[[], None]) -> None:
        import threading

        self.prices, self.limit, self._crossed = prices, limit, crossed
        self.spent = 0.0
        self.reached = False
        self._lock = threading.Lock()

    def add(self, trial: Trial) -> None:
        cost = trial_cost(trial, self.prices)
        with self._lock:
            self.spent += cost
            now = not self.reached and self.spent >= self.limit
            self.reached = self.reached or now
        if now:
            self._crossed()

    def reason(self) -> str:
        """The artifact's ``interrupted_reason`` once the limit is reached."""
        return (f"cost limit {_usd(self.limit)} USD reached: {_usd(self.spent)} USD spent by "
                "the target and the judge on the trials that finished")


def _usd(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
