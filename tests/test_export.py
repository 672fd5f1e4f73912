"""``gitevals export``: a real run (real CLI, real git) as an Inspect AI eval log that
inspect_ai itself reads back, and as OpenTelemetry traces (OTLP/JSON) that
opentelemetry-proto parses, written to a file or POSTed to a collector on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import Repo, run_cli
from .test_run_cli import _only_artifact

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


@pytest.fixture
def ran(repo: Repo) -> tuple[Repo, dict[str, Any]]:
    repo.commit({"harness.py": HARNESS, **CASES, "pyproject.toml":
                 f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.out + res.err  # moon fails, crash is broken
    return repo, _only_artifact(repo)


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


def test_a_run_is_otlp_json_traces_with_genai_names(ran: tuple[Repo, dict[str, Any]]) -> None:
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    repo, art = ran
    res = run_cli("export", "--format", "otel", cwd=repo.path)
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    parsed = Parse(json.dumps(_hex_to_base64(doc)), ExportTraceServiceRequest())
    (resource,) = parsed.resource_spans
    assert {a.key: a.value.string_value for a in resource.resource.attributes
            if a.value.HasField("string_value")}["gitevals.run_id"] == art["run_id"]
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(resource.scope_spans[0].spans) == len(spans)
    trials = [s for s in spans if "parentSpanId" not in s]
    assert len(trials) == 5 and len({s["traceId"] for s in trials}) == 5  # a trace a trial
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    first = next(s for s in trials if s["name"] == "invoke_agent geo/capital")
    assert _attrs(first)["gen_ai.operation.name"] == "invoke_agent"
    assert _attrs(first)["gen_ai.conversation.id"] == "geo#0"
    assert first["status"] == {"code": 1}
    events = first["events"]
    assert [e["name"] for e in events] == ["gen_ai.evaluation.result"] * 2
    assert _attrs(events[1]) == {
        "gen_ai.evaluation.name": "final_answer_contains",
        "gen_ai.evaluation.score.value": 1.0, "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": _attrs(events[1])["gen_ai.evaluation.explanation"]}
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


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """An OTLP/HTTP collector on 127.0.0.1 that keeps what it is sent; a path ending in
    /refuse answers 400."""
    got: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.headers["Content-Type"], body))
            status = 400 if self.path.endswith("/refuse") else 200
            self.send_response(status)
            data = b'{"error": "bad spans"}' if status == 400 else b"{}"
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def test_traces_go_to_an_otlp_collector(ran: tuple[Repo, dict[str, Any]],
                                        collector: tuple[str, list[tuple[str, bytes]]]) -> None:
    repo, art = ran
    url, got = collector
    res = run_cli("export", "--format", "otel", "--endpoint", f"{url}/v1/traces",
                  cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.startswith(f"sent run {art['run_id']} to {url}/v1/traces as "
                              "OpenTelemetry traces (")
    ((kind, body),) = got
    assert kind == "application/json"
    file = run_cli("export", "--format", "otel", cwd=repo.path).out
    assert json.loads(body) == json.loads(file)
    res = run_cli("export", "--format", "otel", "--endpoint", f"{url}/refuse", cwd=repo.path)
    assert res.code == 2
    assert res.err == (f"gitevals: error: the collector at {url}/refuse refused the traces: "
                       'HTTP 400: {"error": "bad spans"}\n')


#: Bad export input and the one line that says so (checked on one run, in one test: each
#: case is a CLI call, the run behind them is made once).
BAD = [
    (["--format", "inspect", "--endpoint", "http://127.0.0.1:9/v1/traces"],
     "--endpoint sends OpenTelemetry traces: it goes with --format otel"),
    (["--format", "otel", "--endpoint", "ftp://x"],
     "--endpoint 'ftp://x' is not an http:// or https:// URL"),
    (["--format", "otel", "--endpoint", "http://127.0.0.1:1/v1/traces"],
     "cannot reach the collector at http://127.0.0.1:1/v1/traces ("),
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
