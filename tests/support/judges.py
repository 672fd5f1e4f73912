"""A small OpenAI-compatible judge on 127.0.0.1 for the tests of ``t.llm``/``t.judge``:
it answers ``judged: <prompt>`` (or the ``body`` a test sets, with its ``status``) and
keeps every request. The ``judge`` fixture in ``tests/conftest.py`` starts one a test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class FakeJudge:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: bytes | None = None


@contextmanager
def fake_judge() -> Iterator[FakeJudge]:
    """The judge, serving from a thread until the block ends."""
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
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def module_judge() -> Iterator[FakeJudge]:
    """One judge server for a module whose repositories are built once (their settings
    name its URL). A module takes it with ``judge`` by importing both fixtures."""
    with fake_judge() as state:
        yield state


@pytest.fixture(name="judge")
def module_judge_fresh(module_judge: FakeJudge) -> FakeJudge:
    """The module's judge, as fresh as a judge of the test's own: echoing, no requests
    (this ``judge`` replaces ``tests/conftest.py``'s in the modules that import it)."""
    module_judge.requests.clear()
    module_judge.status, module_judge.body = 200, None
    return module_judge
