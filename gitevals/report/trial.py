"""One trial read as a conversation: ``gitevals show --trial CASE/SCENARIO[/N]``, or a
golden's (``goldens/ID``, a drift row's ``drift:NAME/ID``).

``pick`` finds the trial in a run, ``document`` gathers everything about it as JSON data
(what ``--format json`` prints), ``render_text`` writes that same document for a reader:
each user turn and the reply to it (tool calls with arguments and results, hook
decisions, errors, the answer), then every assertion, every grader's answer and the
trial's errors. Long values are folded (``fold``) and every value is terminal-escaped.
Pure: a run in, a string out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import zip_longest
from typing import TYPE_CHECKING

from gitevals.report.runs import usage_from_json, usage_json, usage_line
from gitevals.run.artifact import trial_usage
from gitevals.text import fold, one_line, visible

if TYPE_CHECKING:
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import CaseRun, Run, ScenarioRun, Trial
    from gitevals.run.goldens import SuiteItem

#: Characters of one value shown before it is folded (``--format json`` has all of it).
LIMIT = 500


def pick(run: Run, spec: str) -> tuple[CaseRun, ScenarioRun, Trial]:
    """The trial ``CASE/SCENARIO[/N]`` of ``run``; N defaults to the first failing trial,
    else trial 0. ``UsageError`` in one line naming what the run holds instead."""
    from gitevals.errors import UsageError

    case_name, _, rest = spec.partition("/")
    scenario_id, _, n = rest.partition("/")
    cases = {c["name"]: c for c in run["cases"]}
    case = cases.get(case_name)
    if case is None:
        goldens = ", or goldens/ID for a golden" if run.get("goldens") else ""
        raise UsageError(f"--trial {visible(spec)}: no case {visible(case_name)!r} in this "
                         f"run; {_closest(case_name, cases)} (give CASE/SCENARIO[/N]{goldens})")
    found = {s["id"]: s for s in case["scenarios"]}
    scenario = found.get(scenario_id)
    if scenario is None:
        raise UsageError(f"--trial {visible(spec)}: no scenario {visible(scenario_id)!r} in "
                         f"case {visible(case_name)!r}; it has {_names(found)}")
    return case, scenario, _trial(scenario, n, spec)


def pick_golden(run: Run, spec: str) -> SuiteItem | None:
    """The golden ``goldens/ID`` (or drift row ``drift:NAME/ID``) of ``run``: the case and
    scenario its target was sent; a trailing ``/0`` names its one trial. None when
    ``spec`` addresses a case (the run has none of those items, or a case of that name).
    ``UsageError`` for an id the run does not hold, with the closest ids it does."""
    from gitevals.errors import UsageError
    from gitevals.run.goldens import case_of

    part = run.get("goldens")
    name, _, rest = spec.partition("/")
    items = [it for it in (part["items"] if part is not None else ())
             if case_of(it["kind"], it["slice"]) == name]
    if not items:
        return None
    if any(c["name"] == name for c in run["cases"]):
        raise UsageError(f"--trial {visible(spec)}: {visible(name)!r} names both a case of "
                         "this run and its goldens; rename the case file to show either")
    by_id: dict[str, list[SuiteItem]] = {}
    for it in items:
        by_id.setdefault(it["id"], []).append(it)
    found = by_id.get(rest) or (by_id.get(rest[:-2]) if rest.endswith("/0") else None)
    if found is None:
        what = "golden" if name == "goldens" else f"row of {visible(name)}"
        raise UsageError(f"--trial {visible(spec)}: no {what} with id {visible(rest)!r} in "
                         f"this run; {_closest(rest, by_id)} (give {visible(name)}/ID)")
    if len(found) > 1:
        lines = ", ".join(str(it["line"]) for it in found)
        raise UsageError(f"--trial {visible(spec)}: {len(found)} rows of {visible(name)} have "
                         f"id {visible(rest)!r} ({visible(found[0]['path'])} lines {lines}); "
                         "give each row its own id to show one")
    return found[0]


def _closest(given: str, ids: Mapping[str, object]) -> str:
    """``did you mean 'f3'?`` when an id is close to ``given``, else the ids it has."""
    import difflib

    close = difflib.get_close_matches(given, list(ids), n=3)
    if close:
        return "did you mean " + " or ".join(repr(visible(c)) for c in close) + "?"
    return f"it has {_names(ids)}"


def _trial(scenario: ScenarioRun, n: str, spec: str) -> Trial:
    from gitevals.errors import UsageError

    results = scenario["results"]
    if not n:
        failing = [r for r in results if not r["passed"]]
        if failing or results:
            return (failing or results)[0]
    trials = {str(r["trial"]): r for r in results}
    if n in trials:
        return trials[n]
    have = (f"trials {results[0]['trial']}-{results[-1]['trial']}" if results
            else "no trials: it was not run")
    raise UsageError(f"--trial {visible(spec)}: no trial {visible(n or '0')} of "
                     f"{visible(spec.rsplit('/', 1)[0] if n else spec)}; it has {have}")


def _names(items: Mapping[str, object]) -> str:
    shown = [repr(visible(k)) for k in list(items)[:20]]
    more = f" and {len(items) - 20} more" if len(items) > 20 else ""
    return ", ".join(shown) + more if shown else "none"


def document(run: Run, case: CaseRun, scenario: ScenarioRun, trial: Trial) -> JSONObject:
    """Everything about one trial as JSON data, values whole (``--format json``)."""
    t = trial["transcript"]
    task = trial.get("task")
    # a task's user turns: the instruction, then each revision message it was sent
    users = ([scenario["user"][0], *(it["message"] for it in task["iterations"][1:])]
             if task is not None and scenario["user"] else scenario["user"])
    turns: list[JSON] = [{"user": user, "reply": reply} for user, reply
                         in zip_longest(users, t["turns"])]
    expect = scenario["expect"]
    assertions: list[JSON] = [
        {**_object(a), "rule": expect[a["index"]] if a["index"] < len(expect) else None}
        for a in trial["assertions"]]
    doc: JSONObject = {
        "run_id": run["run_id"], "commit": run["commit"], "rev": run["rev"],
        "case": case["name"], "path": case["path"], "scenario": scenario["id"],
        "trial": trial["trial"], "trials": len(scenario["results"]),
        "passed": trial["passed"], "error": _json(trial["error"]),
        "conversation": turns, "final_answer": t["final_answer"],
        "tool_calls": _json(t["tool_calls"]), "hooks": _json(t["hooks"]),
        "target_error": t["error"], "assertions": assertions,
        "graders": _json(trial["graders"]), "duration_ms": t["duration_ms"],
        "usage": _json(usage_json(trial_usage(trial))),
    }
    if task is not None:
        doc["task"] = _json(task)
    return doc


def golden_document(run: Run, item: SuiteItem) -> JSONObject:
    """Everything about one golden's (or drift row's) trial as JSON data: the row it
    asked, the conversation, the grader's answer and its outcome (``--format json``)."""
    from gitevals.goldens.rows import turns
    from gitevals.run.goldens import case_of

    t = item["transcript"]
    users = turns(item["row"]) or ()
    conversation: list[JSON] = [{"user": user, "reply": reply}
                                for user, reply in zip_longest(users, t["turns"])]
    return {
        "run_id": run["run_id"], "commit": run["commit"], "rev": run["rev"],
        "case": case_of(item["kind"], item["slice"]), "scenario": item["id"],
        "kind": item["kind"], "slice": item["slice"], "path": item["path"],
        "line": item["line"], "grader": item["grader"], "row": item["row"],
        "trial": 0, "trials": 1, "passed": item["passed"], "error": _json(item["error"]),
        "conversation": conversation, "final_answer": t["final_answer"],
        "tool_calls": _json(t["tool_calls"]), "hooks": _json(t["hooks"]),
        "target_error": t["error"], "outcome": _json(item["outcome"]),
        "graders": [_json(item["answer"])] if item["answer"] is not None else [],
        "duration_ms": t["duration_ms"],
        "usage": _json(usage_json(trial_usage(_as_trial(item)))),
    }


def _as_trial(item: SuiteItem) -> Trial:
    """What ``trial_usage`` reads of a trial (its transcript), for a golden's."""
    return {"transcript": item["transcript"]}  # type: ignore[typeddict-item]


def _json(value: object) -> JSON:
    """A typed record as the JSON value it already is (no copy)."""
    return value  # type: ignore[return-value]


def _object(value: object) -> JSONObject:
    return value  # type: ignore[return-value]


def as_json(doc: JSONObject) -> str:
    """The document as sorted, indented JSON."""
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# -- text -----------------------------------------------------------------------------


def render_text(doc: JSONObject) -> str:
    """The document as a conversation a person reads top to bottom."""
    lines = _head(doc)
    for i, turn in enumerate(_list(doc.get("conversation")), 1):
        lines += ["", *_turn(i, turn if isinstance(turn, dict) else {})]
    lines += ["", f"final answer: {_block(doc.get('final_answer'), '  ')}"]
    if doc.get("target_error") is not None:
        lines.append(f"target error: {_block(doc['target_error'], '  ')}")
    if doc.get("error") is not None:
        lines.append(f"trial error: {_error(doc['error'])}")
    task = doc.get("task")
    if isinstance(task, dict):
        lines += ["", *_iterations(task)]
    if "row" in doc:  # a golden: what it asked, then its one grader's outcome
        lines += ["", f"golden row: {_value(doc['row'])}", "", "outcome", *_outcome(doc)]
    else:
        lines += ["", "assertions", *_assertions(doc)]
    lines += [*_graders(doc), "", _footer(doc)]
    return "\n".join(lines) + "\n"


def _head(doc: JSONObject) -> list[str]:
    if "row" in doc:
        return _golden_head(doc)
    name = f"{doc['case']}/{doc['scenario']}/{doc['trial']}"
    outcome = "passed" if doc.get("passed") is True else "FAILED"
    trials = doc["trials"]
    among = "the only one run" if trials == 1 else f"one of {trials} run"
    return [f"{visible(name)}: {outcome} (trial {doc['trial']}, {among})",
            f"run {visible(doc['run_id'])} of {visible(doc['rev'])} "
            f"({str(doc['commit'])[:12]}), {'task' if 'task' in doc else 'case file'} "
            f"{visible(doc['path'])}"]


def _golden_head(doc: JSONObject) -> list[str]:
    name = f"{doc['case']}/{doc['scenario']}"
    outcome = "passed" if doc.get("passed") is True else "FAILED"
    return [f"{visible(name)}: {outcome} ({_short(doc.get('kind'))} {_short(doc.get('slice'))}, "
            f"grader {_short(doc.get('grader'))}; one trial)",
            f"run {visible(doc['run_id'])} of {visible(doc['rev'])} "
            f"({str(doc['commit'])[:12]}), {visible(doc['path'])}:{doc['line']}"]


def _outcome(doc: JSONObject) -> list[str]:
    """The golden's grader outcome, or the error that ended it before grading."""
    outcome = doc.get("outcome")
    if not isinstance(outcome, dict):
        why = "lost to the trial error above" if doc.get("error") is not None else "not graded"
        return [f"  FAIL  {why}"]
    mark = "pass" if outcome.get("passed") is True else "FAIL"
    out = [f"  {mark}  {_block(outcome.get('message'), '        ')}"]
    if outcome.get("error") is not None:
        out.append(f"        error {_error(outcome['error'])}")
    return out


def _turn(i: int, turn: JSONObject) -> list[str]:
    lines = [f"[{i}] user: {_block(turn.get('user'), '    ')}"]
    reply = turn.get("reply")
    if not isinstance(reply, dict):
        return [*lines, "    (no reply: the conversation ended before this turn)"]
    for call in _list(reply.get("tool_calls")):
        lines += _tool(call if isinstance(call, dict) else {})
    for hook in _list(reply.get("hooks")):
        h = hook if isinstance(hook, dict) else {}
        lines.append(f"    hook {_short(h.get('name'))}: {_short(h.get('decision'))}")
    if reply.get("error") is not None:
        lines.append(f"    error: {_block(reply['error'], '      ')}")
    return [*lines, f"    answer: {_block(reply.get('final_answer'), '      ')}"]


def _tool(call: JSONObject) -> list[str]:
    lines = [f"    tool {_short(call.get('name'))} {_value(call.get('args', {}))}"]
    if "result" in call:
        lines.append(f"      -> {_block(call['result'], '         ')}")
    return lines


def _assertions(doc: JSONObject) -> list[str]:
    out = []
    for a in _list(doc.get("assertions")):
        a = a if isinstance(a, dict) else {}
        mark = "pass" if a.get("passed") is True else "FAIL"
        # an advisory (uncalibrated) judge grader's failure, marked as run marks it
        aside = "advisory, not counted: " if a.get("advisory") is True and mark == "FAIL" else ""
        out.append(f"  {mark}  {aside}{_block(a.get('message'), '        ')}")
        if a.get("error") is not None:
            out.append(f"        error {_error(a['error'])}")
    return out or ["  (none)"]


def _graders(doc: JSONObject) -> list[str]:
    graders = _list(doc.get("graders"))
    if not graders:
        return []
    out = ["", "graders"]
    for g in graders:
        g = g if isinstance(g, dict) else {}
        head = f"  {_short(g.get('name'))} ({_ms(g.get('duration_ms'))})"
        if g.get("error") is not None:
            out.append(f"{head}: error {_error(g['error'])}")
        else:
            out.append(f"{head}: {_answer(g.get('raw'))}")
    return out


def _iterations(task: JSONObject) -> list[str]:
    """A task trial's iterations: each reward, the verifier's exit and output tail."""
    out = [f"iterations (sandbox {_short(task.get('sandbox'))})"]
    for it in _list(task.get("iterations")):
        it = it if isinstance(it, dict) else {}
        rewards = it.get("rewards")
        named = (", ".join(f"{_short(k)} {_value(v)}" for k, v in sorted(rewards.items()))
                 if isinstance(rewards, dict) and rewards else "no reward")
        verdict = "satisfied" if it.get("passed") is True else (
            "error" if it.get("error") is not None else "needs_revision")
        out.append(f"  [{_value(it.get('iteration'))}] {verdict}: {named}; verifier exit "
                   f"{_value(it.get('verifier_exit'))}, {_value(it.get('attempts'))} call(s), "
                   f"{_ms(it.get('duration_ms'))}")
        if it.get("error") is not None:
            out.append(f"      error {_error(it['error'])}")
        tail = _text(it.get("verifier_tail") or "").rstrip() or None
        out.append(f"      verifier output: {_block(tail, '        ')}")
    final = task.get("final_reward")
    out.append(f"state {_short(task.get('state'))}, final reward "
               f"{'(none)' if final is None else _value(final)}")
    return out


def _answer(raw: JSON) -> str:
    """``pass true, score 0.8, why: ...`` for a decision; anything else as its JSON."""
    if isinstance(raw, bool):
        return f"pass {str(raw).lower()}"
    if not isinstance(raw, dict):
        return f"answered {_value(raw)}"
    parts = [f"{k} {_value(raw[k])}" for k in ("pass", "score") if k in raw]
    if "why" in raw:
        parts.append(f"why: {_block(raw['why'], '    ')}")
    others = {k: v for k, v in raw.items() if k not in ("pass", "score", "why")}
    if others:
        parts.append(f"also {_value(others)}")
    return ", ".join(parts)


def _footer(doc: JSONObject) -> str:
    usage = doc.get("usage")
    line = usage_line(usage_from_json(usage)) if isinstance(usage, dict) else None
    return f"duration {_ms(doc.get('duration_ms'))}" + (f"; {line}" if line else "")


# -- values -----------------------------------------------------------------------------


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _text(value: JSON) -> str:
    """Strings as they are; anything else as its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _block(value: JSON, indent: str) -> str:
    """A value that may span lines: folded, each line escaped and indented under the first."""
    if value is None:
        return "(none)"
    return f"\n{indent}".join(visible(line) for line in fold(_text(value), LIMIT).split("\n"))


def _value(value: JSON) -> str:
    """A value on one line: as JSON (strings quoted), folded, escaped."""
    return visible(fold(json.dumps(value, ensure_ascii=False, sort_keys=True), LIMIT))


def _short(value: JSON) -> str:
    """A name or decision: one line, folded, escaped."""
    return visible(fold(one_line(_text(value)), 120)) if value is not None else "(none)"


def _error(error: JSON) -> str:
    if isinstance(error, dict):
        return f"{_short(error.get('kind'))}: {_block(error.get('message'), '    ')}"
    return _block(error, "    ")


def _ms(value: JSON) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"
