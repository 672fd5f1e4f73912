"""A fake GitHub Checks API on 127.0.0.1 that refuses, as GitHub does (422), a request
over its limits: more than 50 annotations, a summary or text over 65,535 characters, a
title over 255, an annotation missing a required field or with an unknown level. It
keeps every request, and the check runs as GitHub would assemble them (annotations
appended by each update)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REQUIRED = ("path", "start_line", "end_line", "annotation_level", "message")
LEVELS = ("notice", "warning", "failure")


def problems(body: dict[str, Any], creating: bool) -> list[str]:
    """What GitHub would refuse in a create (POST) or update (PATCH) body."""
    found = []
    if creating and not (isinstance(body.get("name"), str) and body.get("head_sha")):
        found.append("name and head_sha are required")
    if body.get("status") == "completed" and body.get("conclusion") not in (
            "success", "failure", "neutral", "cancelled", "skipped", "timed_out",
            "action_required"):
        found.append("a completed check run needs a conclusion")
    output = body.get("output") or {}
    if output and not (isinstance(output.get("title"), str) and output.get("summary")):
        found.append("output needs title and summary")
    if len(output.get("title", "")) > 255:
        found.append("title over 255 characters")
    for key in ("summary", "text"):
        if len(output.get(key) or "") > 65_535:
            found.append(f"{key} over 65535 characters")
    notes = output.get("annotations") or []
    if len(notes) > 50:
        found.append("over 50 annotations in one request")
    for note in notes:
        if any(k not in note for k in REQUIRED) or note["annotation_level"] not in LEVELS:
            found.append(f"bad annotation {note}")
        if len(note.get("title", "")) > 255 or len(note.get("message", "")) > 65_535:
            found.append("annotation title or message too long")
    return found


@dataclass
class FakeChecks:
    url: str = ""
    calls: list[tuple[str, str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    forbid: bool = False  # answer 403, as for a fork's read-only token


@contextmanager
def serve() -> Iterator[FakeChecks]:
    api = FakeChecks()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _answer(self, code: int, doc: object) -> None:
            data = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            api.calls.append((self.command, self.path, json.loads(raw), dict(self.headers)))
            body = json.loads(raw)
            if api.forbid:
                return self._answer(403, {"message": "Resource not accessible by integration"})
            creating = self.command == "POST"
            wrong = problems(body, creating)
            if wrong:
                api.refused += wrong
                return self._answer(422, {"message": "; ".join(wrong)})
            if creating:
                run_id = 100 + len(api.runs)
                api.runs[run_id] = {"annotations": []}
            else:
                run_id = int(self.path.rsplit("/", 1)[1])
            run = api.runs[run_id]
            output = body.pop("output", {})
            run["annotations"] += output.pop("annotations", [])
            run.update(body, **{"output": output} if output else {})
            return self._answer(201 if creating else 200, {"id": run_id})

        do_POST = do_PATCH = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
