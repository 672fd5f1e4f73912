"""Endpoint targets: a harness served as an OpenAI-compatible chat API (``[target] openai``)
or as a plain HTTP endpoint (``[target] http``), run through the real CLI against servers
this file starts on 127.0.0.1: history, tool calls, usage and cost in the transcript; an
endpoint that fails, answers garbage, hangs, cannot be reached or lacks its key is one
line and the trial's error, never a traceback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support import fake_openai
from tests.support.runs import only_artifact

PRICING = """
[tool.gitevals.pricing.models]
"harness-2026-01" = { input = 1000.0, output = 2000.0 }
"""


def _openai_settings(url: str, key_env: str | None = "HARNESS_KEY") -> str:
    key = f', api_key_env = "{key_env}"' if key_env else ""
    return (f'[tool.gitevals.target]\nopenai = {{ base_url = "{url}", '
            f'model = "harness-2026-01"{key} }}\n' + PRICING)


def _case(*turns: str, expect: str = "[]", timeout: str = "20s") -> str:
    users = "\n".join(f"      - {json.dumps(t)}" for t in turns)
    return (f"defaults: {{timeout: {timeout}}}\nscenarios:\n  - id: s\n    user:\n{users}\n"
            f"    expect: {expect}\n")


def _scenario(art: dict[str, Any], case: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in art["cases"] if c["name"] == case)
    return found["scenarios"][0]


@pytest.fixture
def fake() -> Iterator[fake_openai.Fake]:
    with fake_openai.serve() as server:
        yield server


def test_an_openai_endpoint_is_a_target_with_history_tools_and_cost(
        repo: Repo, fake: fake_openai.Fake) -> None:
    repo.commit({"pyproject.toml": _openai_settings(fake.url),
                 "evals/cases/chat.yaml": _case(
                     "hi", "again",
                     expect="[{final_answer_contains: 'You said: again (turn 2)'}]"),
                 "evals/cases/tools.yaml": _case(
                     "weather in Paris?",
                     expect="[{tool_called: {name: get_weather, args: {city: Paris}}}]")})
    res = run_cli("run", cwd=repo.path, env={"HARNESS_KEY": "sk-test-123"})
    assert res.code == 0, res.out + res.err
    art = only_artifact(repo)
    chat = _scenario(art, "chat")["results"][0]["transcript"]
    first, second = chat["turns"]
    assert second["final_answer"] == "You said: again (turn 2)"
    assert first["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert first["model"] == "harness-2026-01" and first["finish_reason"] == "stop"
    calls = _scenario(art, "tools")["results"][0]["transcript"]["tool_calls"]
    assert calls == [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]
    # the second turn carried the first turn and its answer; the model and key were sent
    chat_requests = [r for r in fake.requests if r["messages"][0]["content"] == "hi"]
    assert [m["role"] for m in chat_requests[1]["messages"]] == ["user", "assistant", "user"]
    assert chat_requests[1]["messages"][1]["content"] == "You said: hi (turn 1)"
    assert {r["model"] for r in fake.requests} == {"harness-2026-01"}
    assert {h["Authorization"] for h in fake.headers} == {"Bearer sk-test-123"}
    # priced from the table: 3 replies; 10+30+10 prompt tokens, 15 completion tokens
    assert "tokens 50 in / 15 out; cost 0.08\n" in res.out
    assert "sk-test-123" not in json.dumps(art)


def test_a_tool_call_left_open_is_answered_in_the_next_turns_history(
        repo: Repo, fake: fake_openai.Fake) -> None:
    repo.commit({"pyproject.toml": _openai_settings(fake.url, None),
                 "evals/cases/tools.yaml": _case("weather in Oslo", "thanks")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    second = fake.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "user"]
    assert second[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second[2] == {"role": "tool", "tool_call_id": "call_1",
                         "content": "not run: the evaluation records tool calls and runs no "
                                    "tools"}


def test_a_failing_endpoint_is_each_trials_error_with_its_kind(
        repo: Repo, fake: fake_openai.Fake) -> None:
    repo.commit({"pyproject.toml": _openai_settings(fake.url, None),
                 "evals/cases/fail.yaml": _case("fail"),
                 "evals/cases/garbage.yaml": _case("garbage"),
                 "evals/cases/nochoices.yaml": _case("nochoices"),
                 "evals/cases/slow.yaml": _case("slow", timeout="1s"),  # only its kind is checked
                 "evals/cases/fine.yaml": _case("hello")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    assert "Traceback" not in res.err + res.out
    art = only_artifact(repo)
    errors = {c["name"]: c["scenarios"][0]["results"][0]["error"] for c in art["cases"]}
    url = f"{fake.url}/chat/completions"
    assert errors["fail"] == {"kind": "target_crash", "message": (
        f"openai target: {url} answered HTTP 500: {{\"error\": {{\"message\": \"the model "
        "is overloaded\", \"type\": \"server_error\"}}")}
    assert errors["garbage"] == {"kind": "target_protocol", "message": (
        f"openai target: {url} answered something that is not JSON: "
        "'<html>not json</html>'")}
    assert errors["nochoices"]["kind"] == "target_protocol"
    assert "no choices[0].message" in errors["nochoices"]["message"]
    assert errors["slow"]["kind"] == "target_timeout"
    assert errors["fine"] is None


def test_a_missing_key_variable_is_one_line_before_the_run(
        repo: Repo, fake: fake_openai.Fake) -> None:
    repo.commit({"pyproject.toml": _openai_settings(fake.url, "NO_SUCH_KEY_VAR"),
                 "evals/cases/chat.yaml": _case("hi")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert res.err == ("gitevals: error: [target] openai: the API key variable "
                       "NO_SUCH_KEY_VAR is not set: export it, or give it with --target-env "
                       "NO_SUCH_KEY_VAR=...; or pass --no-preflight to run anyway\n")
    assert not fake.requests
    # given to the target, the key is found
    res = run_cli("run", "--target-env", "NO_SUCH_KEY_VAR=k", cwd=repo.path)
    assert res.code == 0, res.err
    assert fake.headers[-1]["Authorization"] == "Bearer k"


def test_without_preflight_a_missing_key_is_the_trials_start_error(
        repo: Repo, fake: fake_openai.Fake) -> None:
    repo.commit({"pyproject.toml": _openai_settings(fake.url, "NO_SUCH_KEY_VAR"),
                 "evals/cases/chat.yaml": _case("hi")})
    res = run_cli("run", "--no-preflight", cwd=repo.path)
    assert res.code == 1 and "Traceback" not in res.err
    error = only_artifact(repo)["cases"][0]["scenarios"][0]["results"][0]["error"]
    assert error == {"kind": "target_start", "message": "openai target: the API key variable "
                     "NO_SUCH_KEY_VAR is not set: export it, or give it with run --target-env"}


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_endpoint_is_one_line_or_the_trials_error(repo: Repo) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    repo.commit({"pyproject.toml": _openai_settings(url, None),
                 "evals/cases/chat.yaml": _case("hi")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert res.err.startswith(f"gitevals: error: [target] openai: {url} does not answer (")
    assert res.err.endswith("): start the server or fix the url; or pass --no-preflight to "
                            "run anyway\n") and res.err.count("\n") == 1
    res = run_cli("run", "--no-preflight", cwd=repo.path)
    assert res.code == 1 and "Traceback" not in res.err
    error = only_artifact(repo)["cases"][0]["scenarios"][0]["results"][0]["error"]
    assert error["kind"] == "target_crash"
    assert error["message"].startswith(f"openai target: cannot reach {url}/chat/completions: ")


# --- a plain HTTP endpoint ----------------------------------------------------------------


@pytest.fixture
def http_harness() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A harness served over plain HTTP: counts the turns it was sent; ``bad`` answers
    without final_answer, ``list`` answers a JSON list."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            text = body["text"]
            out: Any = {"final_answer": f"{len(body['messages'])} messages, {text}",
                        "tool_calls": [{"name": "lookup", "args": {"q": text},
                                        "result": "found"}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
            if text == "bad":
                out = {"answer": "no final_answer here"}
            elif text == "list":
                out = ["not", "an", "object"]
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # polled every 50 ms: shutdown() waits for the loop to look (0.5 s by default)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/turn", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_plain_http_endpoint_gets_each_turn_and_its_history(
        repo: Repo, http_harness: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = http_harness
    repo.commit({"pyproject.toml": f'[tool.gitevals.target]\nhttp = {{ url = "{url}" }}\n',
                 "evals/cases/chat.yaml": _case(
                     "one", "two", expect="[{final_answer_contains: '3 messages, two'}, "
                     "{result_contains: {name: lookup, substring: found}}]"),
                 "evals/cases/bad.yaml": _case("bad"),
                 "evals/cases/list.yaml": _case("list")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    art = only_artifact(repo)
    second = next(b for b in seen if b["text"] == "two")
    assert second["conversation"] == "chat#0" and second["turn"] == 1
    assert second["case"] == "chat" and second["scenario"] == "s" and second["trial"] == 0
    assert second["messages"] == [{"role": "user", "content": "one"},
                                  {"role": "assistant", "content": "1 messages, one"},
                                  {"role": "user", "content": "two"}]
    assert _scenario(art, "chat")["verdict"]["verdict"] == "pass"
    assert _scenario(art, "chat")["results"][0]["transcript"]["turns"][0]["usage"] == {
        "prompt_tokens": 7, "completion_tokens": 3}
    bad = _scenario(art, "bad")["results"][0]["error"]
    assert bad == {"kind": "target_protocol",
                   "message": "reply has no 'final_answer' (use null when there is none)"}
    listed = _scenario(art, "list")["results"][0]["error"]
    assert listed == {"kind": "target_protocol", "message": (
        f"http target: {url} answered a JSON list, not an object with final_answer")}


@pytest.mark.parametrize(("table", "wanted"), [
    ('openai = { base_url = "ftp://x", model = "m" }', "openai.base_url"),
    ('openai = { base_url = "http://x/v1" }', "missing required key 'model'"),
    ('http = { url = "http://x", api_key_env = "NOT A NAME" }', "http.api_key_env"),
], ids=["scheme", "no-model", "bad-variable-name"])
def test_a_bad_endpoint_setting_is_a_settings_finding(repo: Repo, table: str,
                                                      wanted: str) -> None:
    repo.commit({"pyproject.toml": f"[tool.gitevals.target]\n{table}\n",
                 "evals/cases/chat.yaml": _case("hi")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "pyproject.toml:2:" in res.err and "GE701" in res.err and wanted in res.err
    assert "Traceback" not in res.err
