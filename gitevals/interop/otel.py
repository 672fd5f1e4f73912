"""A run as OpenTelemetry traces in the OTLP/JSON encoding (an ``ExportTraceServiceRequest``),
with the GenAI semantic conventions' names, for any OTLP/HTTP collector or file.

One trace per trial (a conversation's scenario), so each opens on its own in a trace
viewer:

- the trial's span ``invoke_agent <case>/<scenario>`` (``gen_ai.operation.name``
  ``invoke_agent``, ``gen_ai.conversation.id`` ``<case>#<trial>``), its status ERROR
  when the trial failed, with one ``gen_ai.evaluation.result`` event per assertion
  (``gen_ai.evaluation.name``, ``.score.value`` 1 or 0 or the grader's score,
  ``.score.label`` pass or fail, ``.explanation``; ``error.type`` when it could not
  be checked);
- under it a ``chat`` span per turn (``gen_ai.response.model``,
  ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons``);
- under each turn an ``execute_tool <name>`` span per tool call (``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and ``.result``).

The artifact keeps each scenario's duration, not its start or its turns' times: every
trial's spans start at the run's start and last the trial's duration. Ids are derived
from the run id, so the same run gives the same traces. Pure: a run in, a dict out.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import AssertionOutcome, CaseRun, Run, ScenarioRun, Trial, scenarios

#: SpanKind INTERNAL and CLIENT, StatusCode OK and ERROR (the OTLP enums, as JSON numbers).
_INTERNAL, _CLIENT = 1, 3
_OK, _ERROR = 1, 2
#: A tool call's arguments and results are cut to this many characters in an attribute.
MAX_VALUE = 4096


def traces(run: Run) -> JSONObject:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of ``run``'s trials."""
    start = _nanos(run["started_at"])
    spans: list[JSON] = []
    for case, scenario in scenarios(run):
        for trial in scenario["results"]:
            spans += _trial_spans(run["run_id"], case, scenario, trial, start)
    resource: JSONObject = {"attributes": _attributes({
        "service.name": "gitevals", "gitevals.run_id": run["run_id"],
        "gitevals.commit": run["commit"], "gitevals.rev": run["rev"],
        "gitevals.root": run["root"], "gitevals.interrupted": run["interrupted"]})}
    scope: JSONObject = {"name": "gitevals", "version": run["tool_version"]}
    scoped: JSONObject = {"scope": scope, "spans": spans}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [scoped]}]}


def _nanos(stamp: str) -> int:
    """An artifact's UTC stamp (``2026-12-01T10:00:00Z``) in Unix nanoseconds."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()) * 10**9


def _id(*parts: object, size: int) -> str:
    """A deterministic hex id of ``size`` bytes for the span or trace ``parts`` name."""
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:2 * size]


def _trial_spans(run_id: str, case: CaseRun, scenario: ScenarioRun, trial: Trial,
                 start: int) -> list[JSON]:
    """A trial's trace: its own span, a span per turn beneath it, one per tool call
    beneath each turn."""
    where = (run_id, case["name"], scenario["id"], trial["trial"])
    trace = _id(*where, size=16)
    end = start + int(trial["transcript"]["duration_ms"] * 10**6)
    root = _id(*where, "trial", size=8)
    spans: list[JSON] = [{"traceId": trace, "spanId": root,
                          **_trial_span(case, scenario, trial, (start, end))}]
    for t, reply in enumerate(trial["transcript"]["turns"]):
        turn = _id(*where, "turn", t, size=8)
        spans.append(_span(trace, turn, root, "chat", _turn_attributes(reply), start, end))
        for k, call in enumerate(_calls(reply)):
            tool = str(call.get("name"))
            spans.append(_span(trace, _id(*where, "tool", t, k, size=8), turn,
                               f"execute_tool {tool}", _tool_attributes(call), start, end))
    return spans


def _trial_span(case: CaseRun, scenario: ScenarioRun, trial: Trial,
                during: tuple[int, int]) -> JSONObject:
    """The trial's own span (without its ids): verdict as status, assertions as events."""
    name = f"{case['name']}/{scenario['id']}"
    error = trial["error"]
    attrs: dict[str, JSON] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
        "gen_ai.conversation.id": f"{case['name']}#{trial['trial']}",
        "gitevals.case": case["name"], "gitevals.scenario": scenario["id"],
        "gitevals.trial": trial["trial"], "gitevals.passed": trial["passed"]}
    if error is not None:
        attrs["error.type"] = error["kind"]
    status: JSONObject = {"code": _OK} if trial["passed"] else {
        "code": _ERROR, "message": error["message"] if error else "the trial failed"}
    events: list[JSON] = [_evaluation(a, during[1]) for a in trial["assertions"]]
    return {"name": f"invoke_agent {name}", "kind": _INTERNAL,
            "startTimeUnixNano": str(during[0]), "endTimeUnixNano": str(during[1]),
            "attributes": _attributes(attrs), "status": status, "events": events}


def _span(trace: str, span: str, parent: str, name: str, attrs: dict[str, JSON],
          start: int, end: int) -> JSONObject:
    kind = _CLIENT if name == "chat" else _INTERNAL
    model = attrs.get("gen_ai.response.model")
    shown = f"chat {model}" if name == "chat" and isinstance(model, str) else name
    return {"traceId": trace, "spanId": span, "parentSpanId": parent, "name": shown,
            "kind": kind, "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": _attributes(attrs)}


def _calls(reply: JSONObject) -> list[JSONObject]:
    calls = reply.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _turn_attributes(reply: JSONObject) -> dict[str, JSON]:
    attrs: dict[str, JSON] = {"gen_ai.operation.name": "chat"}
    model = reply.get("model")
    if isinstance(model, str):
        attrs["gen_ai.response.model"] = model
    usage = reply.get("usage")
    if isinstance(usage, dict):
        for ours, theirs, name in (("prompt_tokens", "input_tokens", "input"),
                                   ("completion_tokens", "output_tokens", "output")):
            value = usage.get(ours, usage.get(theirs))
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                attrs[f"gen_ai.usage.{name}_tokens"] = value
    reason = reply.get("finish_reason")
    if isinstance(reason, str):
        attrs["gen_ai.response.finish_reasons"] = [reason]
    if isinstance(reply.get("error"), str):
        attrs["error.type"] = "target_error"
    return attrs


def _tool_attributes(call: JSONObject) -> dict[str, JSON]:
    attrs: dict[str, JSON] = {"gen_ai.operation.name": "execute_tool",
                              "gen_ai.tool.name": str(call.get("name")),
                              "gen_ai.tool.type": "function"}
    if isinstance(call.get("id"), str):
        attrs["gen_ai.tool.call.id"] = call["id"]
    if "args" in call:
        attrs["gen_ai.tool.call.arguments"] = _cut(call["args"])
    if "result" in call:
        attrs["gen_ai.tool.call.result"] = _cut(call["result"])
    return attrs


def _cut(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def _evaluation(outcome: AssertionOutcome, at: int) -> JSONObject:
    """One assertion as a ``gen_ai.evaluation.result`` event."""
    score = outcome["score"]
    attrs: dict[str, JSON] = {
        "gen_ai.evaluation.name": outcome["kind"],
        "gen_ai.evaluation.score.value": float(score) if score is not None
        else 1.0 if outcome["passed"] else 0.0,
        "gen_ai.evaluation.score.label": "pass" if outcome["passed"] else "fail",
        "gen_ai.evaluation.explanation": outcome["message"]}
    if outcome["error"] is not None:
        attrs["error.type"] = outcome["error"]["kind"]
    if outcome.get("advisory"):
        attrs["gitevals.advisory"] = True
    return {"name": "gen_ai.evaluation.result", "timeUnixNano": str(at),
            "attributes": _attributes(attrs)}


def _attributes(attrs: dict[str, JSON]) -> list[JSON]:
    """OTLP ``KeyValue``s, sorted by key: ints as strings (int64 in JSON), lists as arrays."""
    return [{"key": key, "value": _value(value)} for key, value in sorted(attrs.items())]


def _value(value: JSON) -> JSON:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        values: list[JSON] = [_value(v) for v in value]
        return {"arrayValue": {"values": values}}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}
