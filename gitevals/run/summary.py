"""A run's summary: what the git note keeps of it (pure).

A summary is a ``Run`` with nothing of a transcript left, marked by ``stored`` (the
sha256 and size of the full artifact's canonical text, ``artifact.dumps``). Every
deciding command -- ``diff``, ``gate``, ``log``, ``report``'s history, ``plan``,
``publish-check --require-gate`` -- reads it as it reads a full run, because what they
read is kept as it was:

- identity and pins (every top-level field but ``dirty_diff``'s text, which is a hash);
- each scenario's rules, verdict and sequential looks; each golden slice's rate;
- per trial: its pass bit, assertion outcomes (kind, pass, score, advisory), the
  *kinds* of its errors, its duration, and of each reply only what it reported of
  its cost (``usage`` and ``cost``), so ``artifact.run_usage`` sums the same totals.

Dropped: every text the target or a grader produced (answers, tool calls, hooks,
turns, grader answers, error and assertion messages, a task's iterations, golden
rows and answers). ``show --trial``, ``report``'s transcripts and ``score --regrade``
read the full artifact (``gitevals.run.runstore``).

Measured on the issue's realistic trial (``benchmarks/bench_notes.py``): a 500-trial
run's note compresses to well under 150 bytes a trial in the pack.
"""

from __future__ import annotations

from gitevals.jsontypes import JSONObject
from gitevals.run.artifact import (
    AssertionOutcome,
    ErrorRecord,
    Run,
    ScenarioRun,
    TaskTrial,
    Transcript,
    Trial,
)

#: The keys of a reply that say what it cost (``artifact._reported`` reads them).
_COST_KEYS = ("usage", "cost")
_USAGE_KEYS = frozenset(("prompt_tokens", "completion_tokens", "input_tokens",
                         "output_tokens", "cost"))


def is_summary(run: Run) -> bool:
    """True when ``run`` is a summary: its transcripts are in the full artifact only."""
    return "stored" in run


def summarize(run: Run, sha256: str, size: int) -> Run:
    """The summary of ``run``, whose canonical text has ``sha256`` and ``size`` bytes."""
    out: Run = {**run, "cases": [
        {**case, "scenarios": [_scenario(s) for s in case["scenarios"]]}
        for case in run["cases"]]}
    part = run.get("goldens")
    if part is not None:
        out["goldens"] = {**part, "items": [
            {**it, "row": {}, "transcript": _transcript(it["transcript"]), "answer": None,
             "error": _error(it["error"]),
             "outcome": None if it["outcome"] is None else _assertion(it["outcome"])}
            for it in part["items"]]}
    out["stored"] = {"sha256": sha256, "bytes": size}
    return out


def _scenario(s: ScenarioRun) -> ScenarioRun:
    return {**s, "results": [_trial(t) for t in s["results"]]}


def _trial(t: Trial) -> Trial:
    out: Trial = {"trial": t["trial"], "passed": t["passed"], "error": _error(t["error"]),
                  "graders": [], "assertions": [_assertion(a) for a in t["assertions"]],
                  "transcript": _transcript(t["transcript"])}
    if "task" in t:
        out["task"] = _task(t["task"])
    return out


def _task(task: TaskTrial) -> TaskTrial:
    return {"state": task["state"], "final_reward": task["final_reward"],
            "sandbox": task["sandbox"], "iterations": []}


def _error(e: ErrorRecord | None) -> ErrorRecord | None:
    return None if e is None else {"kind": e["kind"], "message": ""}


def _assertion(a: AssertionOutcome) -> AssertionOutcome:
    out: AssertionOutcome = {"index": a["index"], "kind": a["kind"], "passed": a["passed"],
                             "message": "", "error": _error(a["error"]), "score": a["score"]}
    if "advisory" in a:
        out["advisory"] = a["advisory"]
    return out


def _transcript(t: Transcript) -> Transcript:
    """The transcript with only each reply's cost left (a reply that is no object is
    kept as it is: ``trial_usage`` counts replies, and counts none of its cost)."""
    reported = t["error"] is not None
    return {"final_answer": None, "tool_calls": [], "hooks": [],
            "error": "" if reported else None,  # that the target reported one, not what
            "turns": [_cost(r) if isinstance(r, dict) else r for r in t["turns"]],
            "duration_ms": t["duration_ms"]}


def _cost(reply: JSONObject) -> JSONObject:
    out: JSONObject = {}
    for key in _COST_KEYS:
        value = reply.get(key)
        if key == "usage" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k in _USAGE_KEYS}
        if value is not None:
            out[key] = value
    return out
