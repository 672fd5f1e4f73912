"""What each trial of a lane measured, and the summaries an experiment reports (pure).

One observation is one trial (one scenario of one conversation). A measure a target
did not report on a trial is *missing*: it is counted as missing and left out of the
mean and the variance, never read as zero. Variances are population variances (the
lane's trials are the whole population the report speaks about).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import NamedTuple, TypedDict

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import Trial, trial_usage

#: Counters a reply may carry (top level, or in ``usage``), summed over a trial's turns.
COUNTERS: tuple[str, ...] = ("retries", "tool_failures", "compactions", "recoveries")
#: Every measure, in report order.
METRICS: tuple[str, ...] = ("iterations", "prompt_tokens", "completion_tokens",
                            "latency_ms_per_turn", "tool_calls", "errors", *COUNTERS, "cost")
#: z for a two-sided 95 % interval.
Z95 = 1.959963984540054

Value = int | float | None


class MetricDoc(TypedDict):
    """A measure of a lane in the experiment report (``Summary.as_json``)."""

    n: int
    missing: int
    mean: float | None
    variance: float | None


class RateDoc(TypedDict):
    """A lane's pass rate in the experiment report (``Rate.as_json``)."""

    passes: int
    trials: int
    rate: float | None
    low: float | None
    high: float | None


class Summary(NamedTuple):
    """``n`` observed values, ``missing`` not reported; their mean and population variance
    (None, "unknown", when nothing was observed)."""

    n: int
    missing: int
    mean: float | None
    variance: float | None

    def as_json(self) -> MetricDoc:
        return {"n": self.n, "missing": self.missing, "mean": self.mean,
                "variance": self.variance}


def summarize(values: Iterable[Value]) -> Summary:
    """The summary of one measure's values over a lane's trials (None = missing)."""
    seen, missing = [], 0
    for v in values:
        if v is None:
            missing += 1
        else:
            seen.append(v)
    if not seen:
        return Summary(0, missing, None, None)
    return Summary(len(seen), missing, statistics.fmean(seen), float(statistics.pvariance(seen)))


def counter(reply: JSONObject, name: str) -> int | None:
    """Counter ``name`` of one reply (a whole number >= 0 at top level or in ``usage``)."""
    value: JSON = reply.get(name)
    usage = reply.get("usage")
    if value is None and isinstance(usage, dict):
        value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _summed(replies: list[JSONObject], name: str) -> int | None:
    """The counter summed over every reply, or None unless every reply reported it (a
    partial sum would read as the whole)."""
    values = [counter(r, name) for r in replies]
    if not values or None in values:
        return None
    return sum(v for v in values if v is not None)


def trial_metrics(trial: Trial) -> dict[str, Value]:
    """Every measure of one trial: iterations (turns the target answered), tokens and
    cost (``artifact.trial_usage``), latency per answered turn, tool calls, errors (the
    replies that reported one, plus an infrastructure error), and the reply counters."""
    t = trial["transcript"]
    replies = [r for r in t["turns"] if isinstance(r, dict)]
    used = trial_usage(trial)
    errors = sum(1 for r in replies if r.get("error") is not None)
    errors += 1 if trial["error"] is not None else 0
    ms = t["duration_ms"]
    out: dict[str, Value] = {
        "iterations": len(replies),
        "prompt_tokens": used.get("prompt_tokens").total,
        "completion_tokens": used.get("completion_tokens").total,
        "latency_ms_per_turn": ms / len(replies) if replies else None,
        "tool_calls": len(t["tool_calls"]),
        "errors": errors,
    }
    for name in COUNTERS:
        out[name] = _summed(replies, name)
    out["cost"] = used.get("cost").total
    return out


def lane_metrics(trials: Iterable[Trial]) -> dict[str, Summary]:
    """Each measure summarized over ``trials``."""
    rows = [trial_metrics(t) for t in trials]
    return {m: summarize(r[m] for r in rows) for m in METRICS}


class Rate(NamedTuple):
    """``passes`` of ``trials`` with the Wilson score 95 % interval (None when none ran)."""

    passes: int
    trials: int
    rate: float | None
    low: float | None
    high: float | None

    def as_json(self) -> RateDoc:
        return {"passes": self.passes, "trials": self.trials, "rate": self.rate,
                "low": self.low, "high": self.high}


def pass_rate(passes: int, trials: int) -> Rate:
    """The pass rate with its Wilson score interval: unlike the normal approximation it
    stays inside [0, 1] and is not empty at 0 or all passes, which small lanes hit often."""
    if trials == 0:
        return Rate(0, 0, None, None, None)
    p, z2 = passes / trials, Z95 * Z95
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 or all passes the interval's end is exactly 0 or 1; floats would miss it by an ulp.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return Rate(passes, trials, p, low, high)
