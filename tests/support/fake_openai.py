"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 for the endpoint target
and adapter tests: deterministic answers chosen by the last message, every request kept.

What the last user message asks for decides the answer:

- ``weather in CITY``: a ``get_weather`` tool call (``{"city": CITY}``); once the tool's
  result comes back (a ``tool`` message last), ``It is <result> in CITY.``
- ``slow``: answers after ``SLOW`` seconds (past the tests' scenario timeout)
- ``garbage``: a body that is not JSON; ``nochoices``: JSON that is no chat completion
- ``fail``: HTTP 500 with an OpenAI-style error
- anything else: ``You said: <text> (turn N)``, N the number of user messages so far

Every answer reports ``usage`` (10 prompt tokens a message, 5 completion tokens).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW = 30.0


@dataclass
class Fake:
    """The running server: its base URL (``.../v1``) and the requests it was sent."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts (some clients send them)
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def answer(body: dict[str, Any]) -> tuple[int, Any]:
    """The status and JSON (or raw bytes) the fake answers ``body`` with."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    users = [m for m in messages if m.get("role") == "user"]
    text = _text(last)
    usage = {"prompt_tokens": 10 * len(messages), "completion_tokens": 5,
             "total_tokens": 10 * len(messages) + 5}
    if last.get("role") == "tool":
        asked = _text(users[-1]) if users else ""
        city = asked.rpartition("weather in ")[2].strip(" ?")
        return 200, _completion(f"It is {text} in {city}.", usage, body)
    if text == "slow":
        time.sleep(SLOW)
    if text == "garbage":
        return 200, b"<html>not json</html>"
    if text == "nochoices":
        return 200, {"id": "x", "object": "chat.completion", "choices": []}
    if text == "fail":
        return 500, {"error": {"message": "the model is overloaded", "type": "server_error"}}
    if "weather in " in text:
        city = text.rpartition("weather in ")[2].strip(" ?")
        call = {"id": f"call_{len(users)}", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
        return 200, _completion(None, usage, body, [call])
    return 200, _completion(f"You said: {text} (turn {len(users)})", usage, body)


def _completion(content: str | None, usage: dict[str, int], body: dict[str, Any],
                calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1767225600,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage}


@contextmanager
def serve() -> Iterator[Fake]:
    """Run the fake on 127.0.0.1 (a free port) until the block ends."""
    fake = Fake("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            status, out = answer(body)
            data = out if isinstance(out, bytes) else json.dumps(out).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client was killed while the answer was slow

        def do_GET(self) -> None:  # a preflight's "is anyone there"
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # polled every 50 ms: shutdown() waits for the loop to look (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
