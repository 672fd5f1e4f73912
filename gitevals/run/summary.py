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

In the note line a summary's trials are packed (``pack``): each scenario's
``results`` is left empty and ``packed`` holds its outcomes, one character a trial,
and the trials column by column (``columns``: a quarter of their text, since trials
differ in a few numbers only), kept as one JSON text so that a reader that only
counts parses one string, not a tree of columns. ``log`` and ``report``'s history check each
verdict against the outcomes and never parse a trial (``store.parse_note`` with
``trials=False``); every other reader gets the trials back (``unpack``), checked
against the outcomes. A summary written before packing (trials inline) reads as is.

Measured on the issue's realistic trial (``benchmarks/bench_notes.py``): a 500-trial
run's note compresses to well under 150 bytes a trial in the pack.
"""

from __future__ import annotations

import json
import re

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import (
    AssertionOutcome,
    ErrorRecord,
    Run,
    ScenarioRun,
    TaskTrial,
    Transcript,
    Trial,
    is_trial,
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


# -- packed trials: what a note line holds ------------------------------------------

#: The most values ``rows`` rebuilds from one scenario's columns (a hostile note could
#: ask a constant to repeat a billion times): 4,000 a trial for 500 trials.
MAX_CELLS = 2_000_000
_INTS = re.compile(r"-?[0-9]{1,30}(?:,-?[0-9]{1,30})*")
_BITS = re.compile(r"[01]*")


def outcome(t: Trial) -> str:
    """A trial in one character: ``1`` passed, ``x`` failed with an infrastructure
    error (``scoring.trial_errors``), ``0`` failed: all a verdict is made of."""
    from gitevals.run.scoring import trial_errors

    if t["passed"] is True:
        return "1"
    return "x" if trial_errors(t) else "0"


def outcomes_verdict(outcomes: str) -> tuple[str, int, int]:
    """``(verdict, passes, trials)`` the outcomes give, as ``scoring.verdict`` would."""
    passes, trials = outcomes.count("1"), len(outcomes)
    if trials == 0:
        return "not_run", 0, 0
    if passes == trials:
        return "pass", passes, trials
    if passes:
        return "flaky", passes, trials
    return ("broken" if outcomes.count("x") == trials else "fail"), 0, trials


def columns(values: list[JSON]) -> JSONObject:
    """``values`` (JSON values) column by column, losslessly (``rows`` gives them back):
    objects of one key set as ``{"o": {key: column}}``, lists as their lengths and
    their items (``{"l": ..., "v": ...}``), one repeated scalar as ``{"c": value}``,
    consecutive integers as ``{"r": first}``, other integers as ``{"n": "3,1,4"}``,
    booleans as ``{"b": "101"}``, anything else as ``{"a": values}``.

    Why: a summary's trials are alike but for a few numbers, so the columns are a
    quarter of the rows' text; numbers kept as text cost a reader that only counts
    (``log``) one string each, not one object a value."""
    if values and all(isinstance(v, dict) for v in values):
        keys = set(values[0]) if isinstance(values[0], dict) else set()
        objects = [v for v in values if isinstance(v, dict) and v.keys() == keys]
        if len(objects) == len(values):
            return {"o": {k: columns([v[k] for v in objects]) for k in sorted(keys)}}
    if values and all(isinstance(v, list) for v in values):
        lists = [v for v in values if isinstance(v, list)]
        lengths: list[JSON] = [len(v) for v in lists]
        return {"l": columns(lengths), "v": columns([x for v in lists for x in v])}
    first = values[0] if values else None
    if values and not isinstance(first, (dict, list)):
        if all(type(v) is type(first) and v == first for v in values):  # True is not 1
            return {"c": first}
        if all(type(v) is int for v in values):
            if isinstance(first, int) and values == list(range(first, first + len(values))):
                return {"r": first}
            return {"n": ",".join(map(str, values))}  # text: parsed only when read
        if all(type(v) is bool for v in values):
            return {"b": "".join("1" if v else "0" for v in values)}
    return {"a": values}


def rows(node: JSON, n: int, budget: list[int]) -> list[JSON]:
    """The ``n`` values ``columns`` made ``node`` of; ``ValueError`` when ``node`` is no
    such columns, or would rebuild more than ``budget[0]`` values in all."""
    budget[0] -= n
    if budget[0] < 0 or not isinstance(node, dict) or len(node) not in (1, 2):
        raise ValueError("columns too large or malformed")
    if len(node) == 2:
        lengths = rows(node.get("l"), n, budget)
        counts = [x for x in lengths if type(x) is int and x >= 0]
        if len(counts) != n:
            raise ValueError("list lengths are no counts")
        flat, at = rows(node.get("v"), sum(counts), budget), 0
        out: list[JSON] = []
        for count in counts:
            out.append(flat[at:at + count])
            at += count
        return out
    ((kind, value),) = node.items()
    if kind == "o" and isinstance(value, dict):
        cols = {k: rows(c, n, budget) for k, c in value.items()}
        return [{k: col[i] for k, col in cols.items()} for i in range(n)]
    if kind == "c" and not isinstance(value, (dict, list)):
        return [value] * n
    if kind == "r" and type(value) is int:
        return list(range(value, value + n))
    if kind == "n" and isinstance(value, str) and _INTS.fullmatch(value):
        numbers: list[JSON] = [int(x) for x in value.split(",")]
        if len(numbers) == n:
            return numbers
    if kind == "b" and isinstance(value, str) and len(value) == n and _BITS.fullmatch(value):
        return [c == "1" for c in value]
    if kind == "a" and isinstance(value, list) and len(value) == n:
        return value
    raise ValueError(f"malformed columns ({kind!r})")


def pack(run: Run) -> Run:
    """``run`` with each scenario's trials packed (module docstring); a scenario packed
    already is kept as it is. Only summaries are packed: a full run is returned as is."""
    if not is_summary(run) or not _shaped(run):
        return run
    return {**run, "cases": [
        {**case, "scenarios": [s if "packed" in s or not _trials_in(s) else _packed(s)
                               for s in case["scenarios"]]}
        for case in run["cases"]]}


def _shaped(run: Run) -> bool:
    """True when ``run``'s cases and scenarios are lists of objects. A line read from a
    note is not validated yet: a run shaped otherwise is left as it is, for validation
    to refuse in one line."""
    cases: object = run.get("cases")
    return isinstance(cases, list) and all(
        isinstance(c, dict) and isinstance(c.get("scenarios"), list)
        and all(isinstance(s, dict) for s in c["scenarios"]) for c in cases)


def _trials_in(s: ScenarioRun) -> bool:
    results: object = s.get("results")
    return isinstance(results, list) and all(map(is_trial, results))


def _packed(s: ScenarioRun) -> ScenarioRun:
    values: list[JSON] = json.loads(_text(s["results"]))  # plain JSON from here on
    return {**s, "results": [], "packed": {"outcomes": "".join(map(outcome, s["results"])),
                                           "columns": _text(columns(values))}}


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def unpack(run: Run) -> Run:
    """``run`` with each packed scenario's trials back in ``results``. A scenario whose
    columns are no list of trials, or whose trials are not what its outcomes say,
    keeps ``packed`` without ``columns``: ``store.problem`` refuses such a run."""
    if not _shaped(run) or not any("packed" in s for c in run["cases"] for s in c["scenarios"]):
        return run
    return {**run, "cases": [{**case, "scenarios": [_unpacked(s) for s in case["scenarios"]]}
                             for case in run["cases"]]}


def _unpacked(s: ScenarioRun) -> ScenarioRun:
    packed: object = s.get("packed")
    outcomes = packed.get("outcomes") if isinstance(packed, dict) else None
    if not isinstance(packed, dict) or not isinstance(outcomes, str):
        return s  # not a packed scenario: validation refuses it as it is
    out: ScenarioRun = {**s}
    del out["packed"]
    text = packed.get("columns")
    try:
        node = json.loads(text) if isinstance(text, str) else None
        values = rows(node, len(outcomes), [MAX_CELLS])
    except (ValueError, RecursionError):
        values = []
    trials = [t for t in values if is_trial(t)]
    if len(trials) == len(values) == len(outcomes) and "".join(
            map(outcome, trials)) == outcomes:
        out["results"] = trials
    else:
        out["results"] = []
        out["packed"] = {"outcomes": outcomes}
    return out
