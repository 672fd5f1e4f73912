"""Full artifacts kept behind an HTTP(S) URL (issue 24, item 2): the real CLI against a
small object store this test serves on 127.0.0.1 (GET, PUT, HEAD of content-addressed
keys, an Authorization header required), a store that lies, and one that is down."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support.notes import clone, note_of, remote_with_commit

TOKEN = "Bearer not-a-real-secret"


class _Store(http.server.BaseHTTPRequestHandler):
    """An in-memory object store: ``objects`` by path; ``lie`` answers every GET with
    other bytes; every request is counted by method."""

    objects: ClassVar[dict[str, bytes]] = {}
    calls: ClassVar[list[str]] = []
    lie: ClassVar[bytes | None] = None

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet

    def _allowed(self) -> bool:
        self.calls.append(self.command)
        if self.headers.get("Authorization") == TOKEN:
            return True
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_HEAD(self) -> None:
        if self._allowed():
            self.send_response(200 if self.path in self.objects else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_GET(self) -> None:
        if not self._allowed():
            return
        body = self.lie if self.lie is not None else self.objects.get(self.path)
        self.send_response(404 if body is None else 200)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def do_PUT(self) -> None:
        if self._allowed():
            size = int(self.headers.get("Content-Length", "0"))
            self.objects[self.path] = self.rfile.read(size)
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture
def store() -> Iterator[tuple[str, type[_Store]]]:
    handler = type("Store", (_Store,), {"objects": {}, "calls": [], "lie": None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/bucket/runs", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _env(url: str) -> dict[str, str]:
    return {"GITEVALS_RUN_STORE": url, "GITEVALS_RUN_STORE_AUTH": "GE_TEST_STORE_TOKEN",
            "GE_TEST_STORE_TOKEN": TOKEN}


def test_a_run_uploads_and_a_fresh_clone_reads_a_trial_from_the_url(
        repo: Repo, tmp_path: Path, store: tuple[str, type[_Store]]) -> None:
    url, served = store
    env = _env(url)
    bare, sha = remote_with_commit(repo, tmp_path)
    one = clone(tmp_path, bare, "one")
    r = run_cli("run", cwd=one, env=env)
    assert r.code == 1 and "warning" not in r.err, r.err
    stored = json.loads(note_of(one, sha))["stored"]["sha256"]
    assert list(served.objects) == [f"/bucket/runs/{stored[:2]}/{stored}.gea"]
    assert git(one, "for-each-ref", "refs/gitevals/runs/") == ""  # none in git
    assert served.calls == ["HEAD", "PUT"]
    trial = run_cli("show", "--trial", "geo/steady/1", "--format", "json", cwd=one, env=env)
    assert trial.code == 1 and json.loads(trial.out)["final_answer"] == "Lyon", trial.err
    assert served.calls == ["HEAD", "PUT"]  # the uploader kept its copy: no download
    assert run_cli("notes", "push", cwd=one).code == 0

    fresh = clone(tmp_path, bare, "fresh")
    assert run_cli("notes", "pull", cwd=fresh).code == 0
    got = run_cli("show", "--trial", "geo/steady/1", "--format", "json", cwd=fresh, env=env)
    assert (got.code, got.out) == (1, trial.out), got.err
    assert got.err.startswith("gitevals: fetching the transcripts of run ")
    assert served.calls[2:] == ["GET"]
    again = run_cli("fetch-run", cwd=fresh, env=env)
    assert again.out.endswith(f"its transcripts are here, and already in {url}\n"), again.err
    assert served.calls[3:] == ["HEAD"]  # kept here after one download

    other = clone(tmp_path, bare, "other")
    assert run_cli("notes", "pull", cwd=other).code == 0
    no_token = run_cli("fetch-run", cwd=other,
                       env={**env, "GE_TEST_STORE_TOKEN": "Bearer wrong"})
    assert no_token.code == 2 and no_token.err.count("\n") == 1
    assert f"the run store {url} answered GET with HTTP 401" in no_token.err
    assert "not-a-real-secret" not in no_token.err


def test_a_lying_store_is_refused_and_a_down_store_is_one_line(
        repo: Repo, tmp_path: Path, store: tuple[str, type[_Store]]) -> None:
    url, served = store
    bare, sha = remote_with_commit(repo, tmp_path)
    one = clone(tmp_path, bare, "one")
    down = _env(f"http://127.0.0.1:{_closed_port()}/runs")
    r = run_cli("run", cwd=one, env=down)  # the upload fails: the run and its note stay
    assert r.code == 1 and r.err.count("warning: the run store http://127.0.0.1:") == 1
    assert "is unreachable" in r.err and "fetch-run REV" in r.err
    assert "stored" in json.loads(note_of(one, sha))
    up = run_cli("fetch-run", cwd=one, env=_env(url))  # the store is back: upload it
    assert up.code == 0 and up.out.endswith(f"and now uploaded to {url}\n"), up.err
    assert run_cli("notes", "push", cwd=one).code == 0

    fresh = clone(tmp_path, bare, "fresh")
    assert run_cli("notes", "pull", cwd=fresh).code == 0
    unreachable = run_cli("show", "--trial", "geo/steady", cwd=fresh, env=down)
    assert unreachable.code == 2 and unreachable.err.splitlines()[-1].startswith(
        "gitevals: error: the run store http://127.0.0.1:")
    assert "is unreachable" in unreachable.err and "Traceback" not in unreachable.err

    (genuine,) = served.objects.values()
    for lie in (b"not an archive at all", genuine[:-1] + bytes([genuine[-1] ^ 1])):
        served.lie = lie
        refused = run_cli("show", "--trial", "geo/steady", cwd=fresh, env=_env(url))
        assert refused.code == 2 and refused.err.count("\n") == 2, refused.err  # + fetching
        assert refused.err.splitlines()[-1].startswith(
            f"gitevals: error: refused: what the run store {url} answered for ")
        assert "nothing was kept" in refused.err
        assert not (fresh / ".git" / "gitevals" / "runs").exists()
    served.lie = None
    ok = run_cli("show", "--trial", "geo/steady", cwd=fresh, env=_env(url))
    assert ok.code == 1 and "final answer: Lyon" in ok.out, ok.err

    secret_in_url = run_cli("fetch-run", cwd=fresh,
                            env={"GITEVALS_RUN_STORE": "https://me:pw@example.com/runs"})
    assert secret_in_url.code == 2 and secret_in_url.err == (
        "gitevals: error: run store URL: it holds credentials; remove them and name the "
        "environment variable that holds them in gitevals.runStoreAuth\n")
