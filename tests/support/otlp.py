"""An OTLP/HTTP collector on 127.0.0.1 (the ``collector`` fixture of ``tests/conftest.py``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def otlp_collector() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    """An OTLP/HTTP collector on 127.0.0.1 that keeps what it is sent (path, content
    type, body); a path under /refuse answers 400."""
    got: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, self.headers["Content-Type"], body))
            status = 400 if self.path.startswith("/refuse") else 200
            self.send_response(status)
            data = b'{"error": "bad spans"}' if status == 400 else b""
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()
