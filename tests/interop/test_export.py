"""``gitevals export``: a real run (real CLI, real git) as an Inspect AI eval log that
inspect_ai itself reads back, and as OpenTelemetry spans and gen_ai.evaluation.result
events: OTLP/JSON lines that opentelemetry-proto parses, the OpenTelemetry SDK's own spans
and log records (its in-memory exporters), and what an OTLP/HTTP collector on 127.0.0.1
receives from the SDK's exporters."""

from __future__ import annotations

import base64
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, built_once, git, run_cli
from tests.support.runs import only_artifact

HARNESS = """\
import json, sys
for line in sys.stdin:
    turn = json.loads(line)
    text = turn["text"]
    if text == "crash":
        sys.exit(3)
    print(json.dumps({
        "final_answer": "Paris" if "France" in text else "no idea",
        "tool_calls": [{"name": "search", "args": {"q": text}, "result": {"hits": 1},
                        "id": f"call_{turn['turn']}"}],
        "model": "agent-2026-01", "finish_reason": "stop",
        "usage": {"prompt_tokens": 30, "completion_tokens": 7}}), flush=True)
"""
CASES = {
    "evals/cases/geo.yaml": """\
defaults: {trials: 2}
scenarios:
  - id: capital
    user: ["France?", "are you sure about France?"]
    expect: [{tool_called: {name: search}}, {final_answer_contains: Paris}]
  - id: moon
    user: moon?
    expect: [{final_answer_contains: cheese}]
""",
    "evals/cases/broken.yaml": "scenarios:\n  - id: crash\n    user: crash\n    expect: []\n",
}


def _build_ran(root: Path) -> None:
    """The run every export test reads, in ``root/repo``."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    repo.commit({"harness.py": HARNESS, **CASES, "pyproject.toml":
                 f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.out + res.err  # moon fails, crash is broken


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Repo, dict[str, Any]]:
    """A copy of one real run's repository (notes, results and all), the run made once
    for the test run: the tests export it, and some change its artifact or notes."""
    built = built_once(tmp_path_factory, "export-ran", _build_ran)
    shutil.copytree(built / "repo", tmp_path / "repo", symlinks=True)
    repo = Repo(tmp_path / "repo")
    return repo, only_artifact(repo)


def test_a_run_is_an_inspect_log_inspect_reads_back(ran: tuple[Repo, dict[str, Any]]) -> None:
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    repo, art = ran
    res = run_cli("export", "--format", "inspect", "-o", "run.eval", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out == (f"wrote run.eval: run {art['run_id']} as an Inspect AI eval log "
                       "(`inspect view` shows it)\n")
    log = read_eval_log(str(repo.path / "run.eval"))
    assert log.status == "success" and log.eval.run_id == art["run_id"]
    assert log.eval.revision is not None and log.eval.revision.commit == art["commit"]
    assert log.eval.config.epochs == 2 and log.eval.model == "gitevals/agent-2026-01"
    got = {(s.id, s.epoch): s for s in log.samples or []}
    assert sorted(got) == [("broken/crash", 1), ("geo/capital", 1), ("geo/capital", 2),
                           ("geo/moon", 1), ("geo/moon", 2)]
    # the same verdicts, trial by trial, and the run's pass rate as accuracy
    assert {k: s.scores["gitevals"].value for k, s in got.items() if s.scores} == {
        ("broken/crash", 1): 0.0, ("geo/capital", 1): 1.0, ("geo/capital", 2): 1.0,
        ("geo/moon", 1): 0.0, ("geo/moon", 2): 0.0}
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(2 / 5)
    capital = got[("geo/capital", 1)]
    assert [m.role for m in capital.messages] == ["user", "assistant", "tool"] * 2
    call = capital.messages[1].tool_calls[0]  # type: ignore[union-attr]
    assert (call.function, call.arguments, call.id) == ("search", {"q": "France?"}, "call_0")
    assert capital.messages[2].text == '{"hits": 1}'
    assert capital.model_usage["agent-2026-01"].input_tokens == 60
    assert capital.scores["1:final_answer_contains"].value == 1.0
    moon = got[("geo/moon", 2)]
    assert moon.scores["gitevals"].explanation.startswith("final_answer_contains")
    crash = got[("broken/crash", 1)]
    assert crash.error is not None and crash.error.message.startswith("target_crash: ")
    assert len(read_eval_log_sample_summaries(str(repo.path / "run.eval"))) == 5
    # from the note alone (a summary there): the transcripts come from the full artifact
    for path in (repo.path / "evals" / "results").glob("*.json"):
        path.unlink()
    res = run_cli("export", "--format", "inspect", "-o", "noted.eval", cwd=repo.path)
    assert res.code == 0, res.err
    noted = read_eval_log(str(repo.path / "noted.eval"))
    again = next(x for x in noted.samples or [] if (x.id, x.epoch) == ("geo/capital", 1))
    assert [m.role for m in again.messages] == ["user", "assistant", "tool"] * 2


def test_the_same_run_exports_the_same_bytes(ran: tuple[Repo, dict[str, Any]]) -> None:
    repo, _ = ran
    for fmt in ("inspect", "otel"):
        outs = [repo.path / f"{fmt}-{n}" for n in (1, 2)]
        for out in outs:
            assert run_cli("export", "--format", fmt, "-o", str(out), cwd=repo.path).code == 0
        assert outs[0].read_bytes() == outs[1].read_bytes()


def _hex_to_base64(doc: Any) -> Any:
    """OTLP/JSON writes ids in hex where protobuf's JSON mapping wants base64 (the OTLP
    specification's one deviation): convert them before parsing with protobuf."""
    if isinstance(doc, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in ("traceId", "spanId", "parentSpanId") else _hex_to_base64(v)
                for k, v in doc.items()}
    return [_hex_to_base64(v) for v in doc] if isinstance(doc, list) else doc


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}


def _parse_lines(text: str) -> tuple[Any, Any]:
    """The file form (JSON lines: the spans' request, the events') as protobuf messages."""
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    spans, events = text.splitlines()
    return (Parse(json.dumps(_hex_to_base64(json.loads(spans))), ExportTraceServiceRequest()),
            Parse(json.dumps(_hex_to_base64(json.loads(events))), ExportLogsServiceRequest()))


def _kv(attributes: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return {a.key: MessageToDict(a.value) for a in attributes}


def _view(spans_req: Any, logs_req: Any) -> dict[str, Any]:
    """What a collector keeps of the protobuf requests, in an order-free form: the
    resource's gitevals attributes, each span and each event record."""
    spans = sorted((s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name, s.kind,
                    s.start_time_unix_nano, s.end_time_unix_nano,
                    json.dumps(_kv(s.attributes), sort_keys=True), s.status.code, s.status.message)
                   for r in spans_req.resource_spans for sc in r.scope_spans for s in sc.spans)
    records = sorted((x.trace_id.hex(), x.span_id.hex(), x.event_name, x.time_unix_nano,
                      x.observed_time_unix_nano, x.severity_number, x.flags,
                      json.dumps(_kv(x.attributes), sort_keys=True))
                     for r in logs_req.resource_logs for sc in r.scope_logs for x in sc.log_records)
    resources = [{k: v for k, v in _kv(r.resource.attributes).items()
                  if k.startswith("gitevals.") or k == "service.name"}
                 for r in [*spans_req.resource_spans, *logs_req.resource_logs]]
    scopes = {(sc.scope.name, sc.scope.version) for r in spans_req.resource_spans
              for sc in r.scope_spans} | {(sc.scope.name, sc.scope.version)
                                          for r in logs_req.resource_logs for sc in r.scope_logs}
    return {"spans": spans, "events": records, "resources": resources, "scopes": scopes}


def test_a_run_is_otlp_json_spans_and_events_with_genai_names(
        ran: tuple[Repo, dict[str, Any]]) -> None:
    repo, art = ran
    res = run_cli("export", "--format", "otel", cwd=repo.path)
    assert res.code == 0, res.err
    traces, logs = _parse_lines(res.out)  # both parse as OTLP requests
    (resource,) = traces.resource_spans
    assert len(logs.resource_logs[0].scope_logs[0].log_records) == 6
    assert _kv(resource.resource.attributes)["gitevals.run_id"] == {"stringValue": art["run_id"]}
    doc, events_doc = map(json.loads, res.out.splitlines())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(resource.scope_spans[0].spans) == len(spans)
    trials = [s for s in spans if "parentSpanId" not in s]
    assert len(trials) == 5 and len({s["traceId"] for s in trials}) == 5  # a trace a trial
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    first = next(s for s in trials if s["name"] == "invoke_agent geo/capital")
    assert _attrs(first)["gen_ai.operation.name"] == "invoke_agent"
    assert _attrs(first)["gen_ai.conversation.id"] == "geo#0"
    assert first["status"] == {"code": 1} and "events" not in first
    # the assertions are gen_ai.evaluation.result events: log records in the trial's span
    records = events_doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert len(records) == 6  # capital: 2 assertions x 2 trials; moon: 1 x 2; crash: none
    mine = [r for r in records if r["spanId"] == first["spanId"]]
    assert [r["eventName"] for r in mine] == ["gen_ai.evaluation.result"] * 2
    assert {r["traceId"] for r in mine} == {first["traceId"]}
    assert _attrs(mine[1]) == {
        "gen_ai.evaluation.name": "final_answer_contains",
        "gen_ai.evaluation.score.value": 1.0, "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": _attrs(mine[1])["gen_ai.evaluation.explanation"]}
    moon = {r["spanId"] for r in records if _attrs(r)["gen_ai.evaluation.score.label"] == "fail"}
    assert moon == {s["spanId"] for s in trials if s["name"] == "invoke_agent geo/moon"}
    turns = [s for s in spans if s.get("parentSpanId") == first["spanId"]]
    assert [s["name"] for s in turns] == ["chat agent-2026-01"] * 2
    assert _attrs(turns[0])["gen_ai.usage.input_tokens"] == "30"  # int64 as a string
    assert _attrs(turns[0])["gen_ai.response.finish_reasons"] == {
        "values": [{"stringValue": "stop"}]}
    (tool,) = [s for s in spans if s.get("parentSpanId") == turns[0]["spanId"]]
    assert tool["name"] == "execute_tool search"
    assert _attrs(tool)["gen_ai.tool.call.arguments"] == '{"q": "France?"}'
    assert _attrs(tool)["gen_ai.tool.call.result"] == '{"hits": 1}'
    crash = next(s for s in trials if s["name"] == "invoke_agent broken/crash")
    assert crash["status"]["code"] == 2 and _attrs(crash)["error.type"] == "target_crash"


def test_the_sdk_makes_the_same_spans_and_events(ran: tuple[Repo, dict[str, Any]]) -> None:
    """Through the SDK's own in-memory exporters: real SDK spans (parents, kinds, status)
    and log records with the event name in the trial span's context, the same as the
    file form holds."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
    from opentelemetry.sdk.trace import StatusCode
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from gitevals.interop.otel import signals
    from gitevals.interop.otelsdk import send

    repo, art = ran
    spans, records = InMemorySpanExporter(), InMemoryLogRecordExporter()
    assert send(signals(art), spans, records) is None
    got = spans.get_finished_spans()
    assert len(got) == 5 + 2 * 4 + 2 * 2  # trials; capital: 2 turns, 2 tools; moon: 1 and 1
    capital = next(s for s in got if s.name == "invoke_agent geo/capital"
                   and s.attributes["gen_ai.conversation.id"] == "geo#0")
    assert capital.parent is None and capital.status.status_code is StatusCode.OK
    chats = [s for s in got if s.parent is not None
             and s.parent.span_id == capital.context.span_id]
    assert [s.name for s in chats] == ["chat agent-2026-01"] * 2
    assert all(s.context.trace_id == capital.context.trace_id for s in chats)
    crash = next(s for s in got if s.name == "invoke_agent broken/crash")
    assert crash.status.status_code is StatusCode.ERROR
    logs = records.get_finished_logs()
    assert len(logs) == 6 and {x.log_record.event_name for x in logs} == {
        "gen_ai.evaluation.result"}
    on_capital = [x.log_record for x in logs if x.log_record.span_id == capital.context.span_id]
    assert [x.attributes["gen_ai.evaluation.name"] for x in on_capital] == [
        "tool_called", "final_answer_contains"]
    assert all(x.trace_id == capital.context.trace_id for x in on_capital)
    # the file form and the SDK's hold the same spans and events, ids and all
    file = run_cli("export", "--format", "otel", cwd=repo.path).out
    assert _view(encode_spans(got), encode_logs(logs)) == _view(*_parse_lines(file))


def test_spans_and_events_go_to_an_otlp_collector_through_the_sdk(
        ran: tuple[Repo, dict[str, Any]],
        collector: tuple[str, list[tuple[str, str, bytes]]]) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    repo, art = ran
    url, got = collector
    res = run_cli("export", "--format", "otel", "--endpoint", url, cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out == (f"sent run {art['run_id']} to {url} through the OpenTelemetry SDK: "
                       "17 spans, 6 evaluation events\n")
    assert [(path, kind) for path, kind, _ in got] == [
        ("/v1/traces", "application/x-protobuf"), ("/v1/logs", "application/x-protobuf")]
    spans = ExportTraceServiceRequest.FromString(got[0][2])
    logs = ExportLogsServiceRequest.FromString(got[1][2])
    file = run_cli("export", "--format", "otel", cwd=repo.path).out
    assert _view(spans, logs) == _view(*_parse_lines(file))
    # a signal's own URL names the same collector; sending again sends the same ids
    again = run_cli("export", "--format", "otel", "--endpoint", f"{url}/v1/traces",
                    cwd=repo.path)
    assert again.code == 0, again.err
    assert got[2][0] == "/v1/traces" and got[2][2] == got[0][2]
    res = run_cli("export", "--format", "otel", "--endpoint", f"{url}/refuse", cwd=repo.path)
    assert res.code == 2 and res.out == ""
    assert res.err == (f"gitevals: error: the collector at {url}/refuse refused the spans: "
                       'HTTP 400: {"error": "bad spans"}\n')


def test_without_the_otel_extra_endpoint_is_one_line(ran: tuple[Repo, dict[str, Any]],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = ran
    monkeypatch.delitem(sys.modules, "gitevals.interop.otelsdk", raising=False)
    for name in [*sys.modules, "opentelemetry.sdk"]:  # as if the SDK were not installed
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            monkeypatch.setitem(sys.modules, name, None)
    res = run_cli("export", "--format", "otel", "--endpoint", "http://127.0.0.1:9",
                  cwd=repo.path)
    assert res.code == 2 and res.out == ""
    assert res.err.startswith("gitevals: error: --endpoint sends through the OpenTelemetry "
                              "SDK, which is not installed here (no module opentelemetry.sdk")
    assert res.err.endswith("): pip install 'gitevals[otel]'\n") and res.err.count("\n") == 1
    # the file form needs no extra
    assert run_cli("export", "--format", "otel", cwd=repo.path).code == 0


#: Bad export input and the one line that says so (checked on one run, in one test: each
#: case is a CLI call, the run behind them is made once).
BAD = [
    (["--format", "inspect", "--endpoint", "http://127.0.0.1:9/v1/traces"],
     "--endpoint sends OpenTelemetry traces: it goes with --format otel"),
    (["--format", "otel", "--endpoint", "ftp://x"],
     "--endpoint 'ftp://x' is not an http:// or https:// URL"),
    (["--format", "otel", "--endpoint", "http://127.0.0.1:1/v1/traces"],
     "cannot reach the collector at http://127.0.0.1:1 ("),
    (["--format", "inspect", "-o", "no/such/dir/run.eval"], "cannot write no/such/dir/run.eval"),
    (["nothing.json", "--format", "inspect"], "nothing.json"),
]


def test_bad_export_input_is_one_line(ran: tuple[Repo, dict[str, Any]]) -> None:
    repo, _ = ran
    for args, said in BAD:
        res = run_cli("export", *args, cwd=repo.path)
        assert res.code == 2 and res.out == "", args
        assert res.err.count("\n") == 1 and said in res.err, (args, res.err)
        assert "Traceback" not in res.err
    assert not list(Path(repo.path).glob("**/*.eval"))


def test_a_revision_without_a_run_is_one_line(repo: Repo) -> None:
    repo.commit({"README": "x"})
    res = run_cli("export", "--format", "inspect", cwd=repo.path)
    assert res.code == 2 and res.err.startswith("gitevals: error: no run of HEAD (")
