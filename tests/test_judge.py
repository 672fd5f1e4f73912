"""``t.llm`` against a small OpenAI-compatible server started on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.grading import GraderWorker
from gitevals.run.judge import NO_JUDGE, JudgeError, T, llm

from .conftest import Repo, run_cli


@dataclass
class FakeJudge:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: bytes | None = None


@pytest.fixture
def judge() -> Iterator[FakeJudge]:
    state = FakeJudge("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "json": data,
                                   "auth": self.headers.get("Authorization")})
            prompt = data["messages"][-1]["content"]
            body = state.body if state.body is not None else json.dumps(
                {"choices": [{"message": {"role": "assistant",
                                          "content": f"judged: {prompt}"}}]}).encode()
            self.send_response(state.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": url, "model": "judge-2026-01-15", "api_key_env": "JUDGE_KEY",
            "timeout": 5, **extra}


def test_llm_posts_the_prompt_to_the_pinned_model_at_temperature_0(
        judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-test-123")
    assert llm(_config(judge.url + "/"), "Is Paris right?") == "judged: Is Paris right?"
    (req,) = judge.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["json"]["model"] == "judge-2026-01-15"
    assert req["json"]["temperature"] == 0
    assert req["json"]["messages"] == [{"role": "user", "content": "Is Paris right?"}]
    assert req["auth"] == "Bearer sk-test-123"


def test_no_key_variable_means_no_authorization_header(judge: FakeJudge) -> None:
    assert T(_config(judge.url, api_key_env=None)).llm("x") == "judged: x"
    assert judge.requests[0]["auth"] is None


@pytest.mark.parametrize(("status", "body", "says"), [
    (500, b"overloaded", "judge answered HTTP 500"),
    (200, b"<html>", "not JSON"),
    (200, b'{"choices": []}', "no choices[0].message.content"),
    (200, b'{"choices": [{"message": {"content": 3}}]}', "not a string"),
], ids=["http-error", "not-json", "no-choices", "content-not-text"])
def test_a_bad_judge_reply_is_a_judge_error(judge: FakeJudge, monkeypatch: pytest.MonkeyPatch,
                                            status: int, body: bytes, says: str) -> None:
    monkeypatch.setenv("JUDGE_KEY", "k")
    monkeypatch.setenv("GITEVALS_JUDGE_BACKOFF", "0.01")  # a 500 is retried
    judge.status, judge.body = status, body
    with pytest.raises(JudgeError) as err:
        llm(_config(judge.url), "p")
    assert says in str(err.value)


def test_an_unreachable_judge_is_a_judge_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "k")
    with pytest.raises(JudgeError, match=r"cannot reach the judge at http://127\.0\.0\.1:9/"):
        llm(_config("http://127.0.0.1:9/v1"), "p")


def test_a_missing_key_variable_is_named(judge: FakeJudge,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    with pytest.raises(JudgeError, match="JUDGE_KEY is not set"):
        llm(_config(judge.url), "p")
    assert judge.requests == []


def test_no_judge_configured() -> None:
    with pytest.raises(JudgeError, match=r"no judge configured: set \[tool.gitevals.judge\]"):
        T(None).llm("p")
    assert NO_JUDGE == "no judge configured: set [tool.gitevals.judge]"


def test_a_grader_in_the_worker_reaches_the_judge(judge: FakeJudge, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-worker")
    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "q.py").write_text(
        "def judged(t, case, run):\n"
        "    said = t.llm('grade: ' + run['final_answer'])\n"
        "    return {'pass': said.startswith('judged'), 'why': said}\n"
        "def swallowed(t, case, run):\n"
        "    try:\n        t.llm('x')\n    except Exception:\n        return False\n")
    worker = GraderWorker(str(tmp_path), "evals", _config(judge.url))
    try:
        got = worker.call("q.judged", {"id": "s"}, {"final_answer": "Paris"})
        judge.status = 503
        swallowed = worker.call("q.swallowed", {"id": "s"}, {"final_answer": "Paris"})
    finally:
        worker.stop()
    assert got["raw"] == {"pass": True, "why": "judged: grade: Paris"}
    assert judge.requests[0]["auth"] == "Bearer sk-worker"
    assert swallowed == {**swallowed, "raw": False, "error": None}


def test_a_run_passes_the_configured_judge_to_its_graders(judge: FakeJudge, repo: Repo) -> None:
    from .test_run_cli import HARNESS, SETTINGS, _only_artifact

    settings = SETTINGS + (f'\n[tool.gitevals.judge]\nbase_url = "{judge.url}"\n'
                           'model = "judge-2026-01-15"\napi_key_env = "RUN_JUDGE_KEY"\n')
    repo.commit({
        "harness.py": HARNESS, "pyproject.toml": settings,
        "evals/graders/q.py": "def judged(t, case, run):\n"
                              "    return {'pass': True, 'why': t.llm(run['final_answer'])}\n",
        "evals/cases/capital.yaml": "scenarios:\n  - id: ok\n    user: capital of France?\n"
                                    "    expect: [{grader: {name: q.judged}}]\n"})
    res = run_cli("run", cwd=repo.path, env={"RUN_JUDGE_KEY": "sk-run"})
    assert res.code == 0, res.err
    (result,) = _only_artifact(repo)["cases"][0]["scenarios"][0]["results"]
    assert result["graders"][0]["raw"] == {"pass": True, "why": "judged: Paris"}
    assert judge.requests[0]["auth"] == "Bearer sk-run"
    assert judge.requests[0]["json"]["model"] == "judge-2026-01-15"
