"""A run as OpenTelemetry signals with the GenAI semantic conventions' names: spans for
the trials, turns and tool calls, and a ``gen_ai.evaluation.result`` event (a log
record tied to its trial's span) per assertion.

:func:`signals` builds them once, as plain values; two encoders read them:
:func:`traces` and :func:`logs` give the OTLP/JSON requests (``gitevals export -o``,
pure, needs no extra), and ``gitevals.interop.otelsdk`` hands the same values to the
OpenTelemetry SDK, which sends them to an OTLP/HTTP collector. One source, so a file and
a collector hold the same spans and events.

One trace per trial (a conversation's scenario), so each opens on its own in a trace
viewer:

- the trial's span ``invoke_agent <case>/<scenario>`` (``gen_ai.operation.name``
  ``invoke_agent``, ``gen_ai.conversation.id`` ``<case>#<trial>``), its status ERROR
  when the trial failed;
- per assertion, an event ``gen_ai.evaluation.result`` on that span
  (``gen_ai.evaluation.name``, ``.score.value`` 1 or 0 or the grader's score,
  ``.score.label`` pass or fail, ``.explanation``; ``error.type`` when it could not be
  checked): a log record, as the conventions define their events;
- under the trial a ``chat`` span per turn (``gen_ai.response.model``,
  ``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons``);
- under each turn an ``execute_tool <name>`` span per tool call (``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and ``.result``).

The artifact keeps each scenario's duration, not its start or its turns' times: every
trial's spans start at the run's start and last the trial's duration. Ids are derived
from the run id, so the same run gives the same signals. Pure: a run in, values out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import AssertionOutcome, CaseRun, Run, ScenarioRun, Trial, scenarios

#: SpanKind INTERNAL and CLIENT, StatusCode OK and ERROR, SeverityNumber INFO (the OTLP
#: enums' numbers).
INTERNAL, CLIENT = 1, 3
OK, ERROR = 1, 2
INFO = 9
#: A tool call's arguments and results are cut to this many characters in an attribute.
MAX_VALUE = 4096
#: The event's name in the GenAI semantic conventions.
EVALUATION = "gen_ai.evaluation.result"

#: An attribute's value as OpenTelemetry takes it.
Value = str | bool | int | float | tuple[str, ...]


@dataclass(frozen=True)
class Span:
    """One span: ids in hex, times in Unix nanoseconds, ``status`` (code, message) or
    None for unset."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start: int
    end: int
    attributes: Mapping[str, Value]
    status: tuple[int, str] | None


@dataclass(frozen=True)
class Event:
    """One ``gen_ai.evaluation.result`` log record, tied to its trial's span."""

    trace_id: str
    span_id: str
    time: int
    attributes: Mapping[str, Value]


@dataclass(frozen=True)
class Signals:
    """A run's spans and events, with the resource and scope that carry them."""

    resource: Mapping[str, Value]
    version: str
    spans: tuple[Span, ...]
    events: tuple[Event, ...]


def signals(run: Run) -> Signals:
    """The spans and evaluation events of ``run``'s trials."""
    start = _nanos(run["started_at"])
    spans: list[Span] = []
    events: list[Event] = []
    for case, scenario in scenarios(run):
        for trial in scenario["results"]:
            trial_spans = _trial_spans(run["run_id"], case, scenario, trial, start)
            spans += trial_spans
            root = trial_spans[0]
            events += [Event(root.trace_id, root.span_id, root.end, _evaluation(a))
                       for a in trial["assertions"]]
    resource: dict[str, Value] = {
        "service.name": "gitevals", "gitevals.run_id": run["run_id"],
        "gitevals.commit": run["commit"], "gitevals.rev": run["rev"],
        "gitevals.root": run["root"], "gitevals.interrupted": run["interrupted"]}
    return Signals(resource, run["tool_version"], tuple(spans), tuple(events))


def traces(sig: Signals) -> JSONObject:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of the spans."""
    spans: list[JSON] = [_span_json(s) for s in sig.spans]
    scoped: JSONObject = {"scope": _scope(sig), "spans": spans}
    return {"resourceSpans": [{"resource": {"attributes": _attributes(sig.resource)},
                               "scopeSpans": [scoped]}]}


def logs(sig: Signals) -> JSONObject:
    """The OTLP/JSON ``ExportLogsServiceRequest`` of the evaluation events."""
    records: list[JSON] = [{
        "timeUnixNano": str(e.time), "observedTimeUnixNano": str(e.time),
        "severityNumber": INFO, "eventName": EVALUATION, "traceId": e.trace_id,
        "spanId": e.span_id, "flags": 1, "attributes": _attributes(e.attributes)}
        for e in sig.events]
    scoped: JSONObject = {"scope": _scope(sig), "logRecords": records}
    return {"resourceLogs": [{"resource": {"attributes": _attributes(sig.resource)},
                              "scopeLogs": [scoped]}]}


def _scope(sig: Signals) -> JSONObject:
    return {"name": "gitevals", "version": sig.version}


def _span_json(span: Span) -> JSON:
    doc: JSONObject = {"traceId": span.trace_id, "spanId": span.span_id, "name": span.name,
                       "kind": span.kind, "startTimeUnixNano": str(span.start),
                       "endTimeUnixNano": str(span.end),
                       "attributes": _attributes(span.attributes)}
    if span.parent_id is not None:
        doc["parentSpanId"] = span.parent_id
    if span.status is not None:
        code, message = span.status
        doc["status"] = {"code": code, "message": message} if message else {"code": code}
    return doc


def _nanos(stamp: str) -> int:
    """An artifact's UTC stamp (``2026-12-01T10:00:00Z``) in Unix nanoseconds."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()) * 10**9


def _id(*parts: object, size: int) -> str:
    """A deterministic hex id of ``size`` bytes for the span or trace ``parts`` name."""
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:2 * size]


def _trial_spans(run_id: str, case: CaseRun, scenario: ScenarioRun, trial: Trial,
                 start: int) -> list[Span]:
    """A trial's trace: its own span first, a span per turn beneath it, one per tool
    call beneath each turn."""
    where = (run_id, case["name"], scenario["id"], trial["trial"])
    trace = _id(*where, size=16)
    end = start + int(trial["transcript"]["duration_ms"] * 10**6)
    root = _id(*where, "trial", size=8)
    spans = [_trial_span(trace, root, case, scenario, trial, (start, end))]
    for t, reply in enumerate(trial["transcript"]["turns"]):
        turn = _id(*where, "turn", t, size=8)
        attrs = _turn_attributes(reply)
        model = attrs.get("gen_ai.response.model")
        name = f"chat {model}" if isinstance(model, str) else "chat"
        spans.append(Span(trace, turn, root, name, CLIENT, start, end, attrs, None))
        for k, call in enumerate(_calls(reply)):
            spans.append(Span(trace, _id(*where, "tool", t, k, size=8), turn,
                              f"execute_tool {call.get('name')}", INTERNAL, start, end,
                              _tool_attributes(call), None))
    return spans


def _trial_span(trace: str, span: str, case: CaseRun, scenario: ScenarioRun, trial: Trial,
                during: tuple[int, int]) -> Span:
    """The trial's own span: its verdict as the status."""
    name = f"{case['name']}/{scenario['id']}"
    error = trial["error"]
    attrs: dict[str, Value] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
        "gen_ai.conversation.id": f"{case['name']}#{trial['trial']}",
        "gitevals.case": case["name"], "gitevals.scenario": scenario["id"],
        "gitevals.trial": trial["trial"], "gitevals.passed": trial["passed"]}
    if error is not None:
        attrs["error.type"] = error["kind"]
    status = (OK, "") if trial["passed"] else (
        ERROR, error["message"] if error else "the trial failed")
    return Span(trace, span, None, f"invoke_agent {name}", INTERNAL, *during, attrs, status)


def _calls(reply: JSONObject) -> list[JSONObject]:
    calls = reply.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _turn_attributes(reply: JSONObject) -> dict[str, Value]:
    attrs: dict[str, Value] = {"gen_ai.operation.name": "chat"}
    model = reply.get("model")
    if isinstance(model, str):
        attrs["gen_ai.response.model"] = model
    usage = reply.get("usage")
    if isinstance(usage, dict):
        for ours, theirs, name in (("prompt_tokens", "input_tokens", "input"),
                                   ("completion_tokens", "output_tokens", "output")):
            value = usage.get(ours, usage.get(theirs))
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
                attrs[f"gen_ai.usage.{name}_tokens"] = value
    reason = reply.get("finish_reason")
    if isinstance(reason, str):
        attrs["gen_ai.response.finish_reasons"] = (reason,)
    if isinstance(reply.get("error"), str):
        attrs["error.type"] = "target_error"
    return attrs


def _tool_attributes(call: JSONObject) -> dict[str, Value]:
    attrs: dict[str, Value] = {"gen_ai.operation.name": "execute_tool",
                               "gen_ai.tool.name": str(call.get("name")),
                               "gen_ai.tool.type": "function"}
    call_id = call.get("id")
    if isinstance(call_id, str):
        attrs["gen_ai.tool.call.id"] = call_id
    if "args" in call:
        attrs["gen_ai.tool.call.arguments"] = _cut(call["args"])
    if "result" in call:
        attrs["gen_ai.tool.call.result"] = _cut(call["result"])
    return attrs


def _cut(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def _evaluation(outcome: AssertionOutcome) -> dict[str, Value]:
    """One assertion as the attributes of a ``gen_ai.evaluation.result`` event."""
    score = outcome["score"]
    attrs: dict[str, Value] = {
        "gen_ai.evaluation.name": outcome["kind"],
        "gen_ai.evaluation.score.value": float(score) if score is not None
        else 1.0 if outcome["passed"] else 0.0,
        "gen_ai.evaluation.score.label": "pass" if outcome["passed"] else "fail",
        "gen_ai.evaluation.explanation": outcome["message"]}
    if outcome["error"] is not None:
        attrs["error.type"] = outcome["error"]["kind"]
    if outcome.get("advisory"):
        attrs["gitevals.advisory"] = True
    return attrs


def _attributes(attrs: Mapping[str, Value]) -> list[JSON]:
    """OTLP ``KeyValue``s, sorted by key: ints as strings (int64 in JSON), tuples as arrays."""
    return [{"key": key, "value": _value(value)} for key, value in sorted(attrs.items())]


def _value(value: Value) -> JSON:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, tuple):
        values: list[JSON] = [{"stringValue": v} for v in value]
        return {"arrayValue": {"values": values}}
    return {"stringValue": value}
