"""The sticky comment: its body (marker, verdict, the diff cut to the platform's limit)
and ``python -m gitevals.ci comment`` against a fake GitHub (and GitLab) REST API on
127.0.0.1: one comment created, then updated in place, found across pages by its marker
and its author, never someone else's; an API that refuses is one line, not a failure."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gitevals.ci import comment
from gitevals.ci.__main__ import main as ci_main
from tests.conftest import run_main

BOT = {"login": "github-actions[bot]", "type": "Bot"}


# -- the body ---------------------------------------------------------------------------

def test_a_short_diff_is_kept_whole_under_the_marker() -> None:
    md = "| scenario | A | B |\n|---|---|---|\n| capital | 10/10 | 1/10 ▼ |\n"
    text = comment.body(md, 1, comment.GITHUB_LIMIT, "in the summary")
    assert text == (f"{comment.MARKER}\n**gitevals diff: failed.** A scenario or goldens "
                    f"bucket regressed beyond noise (exit 1).\n\n{md}")
    assert "passed" in comment.body(md, 0, 1000, "x").splitlines()[1]
    assert "could not compare** (exit 2)" in comment.body(md, 2, 1000, "x")
    for fail_on, code, says in (("any-change", 0, "Nothing changed"),
                                ("any-change", 1, "Something changed"),
                                ("never", 0, "it does not gate this job"),
                                ("never", 2, "could not compare")):
        assert says in comment.verdict(code, fail_on)


@pytest.mark.parametrize("char", ["x", "é", "😀"], ids=["ascii", "latin", "astral"])
def test_a_long_diff_is_cut_at_a_line_within_the_limit(char: str) -> None:
    lines = [f"| row {i} | {char * 40} |\n" for i in range(5_000)]
    md = "".join(lines)
    text = comment.body(md, 1, comment.GITHUB_LIMIT, "in the job summary")
    assert comment.units(text) <= comment.GITHUB_LIMIT < comment.units(md)
    assert len(text) > 0.9 * comment.GITHUB_LIMIT / (2 if char == "😀" else 1)
    head, _, rest = text.partition("\n\n")
    kept, _, note = rest.rpartition("\n\n")
    assert head.startswith(comment.MARKER)
    assert kept.splitlines(keepends=True) == lines[:len(kept.splitlines())]  # whole lines
    assert note == ("_The diff was cut to fit the 65,536-character limit: the whole diff is "
                    "in the job summary._\n")


def test_a_cut_inside_a_code_block_closes_it() -> None:
    md = "before\n```text\n" + "".join(f"line {i}\n" for i in range(20_000)) + "```\nafter\n"
    text = comment.body(md, 1, comment.GITHUB_LIMIT, "there")
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert len(fences) == 2 and text.rstrip().endswith("the whole diff is there._")
    assert comment.units(text) <= comment.GITHUB_LIMIT


def test_the_step_summary_stays_under_1_mib_in_bytes() -> None:
    md = "".join(f"| {i} | {'€' * 60} |\n" for i in range(20_000))  # 3 bytes a character
    text = comment.summary_body(md, 1, "in the artifact")
    assert not text.startswith(comment.MARKER)
    assert len(text.encode("utf-8")) <= comment.SUMMARY_LIMIT < len(md.encode("utf-8"))
    assert text.endswith("the whole diff is in the artifact._\n")
    small = comment.summary_body("| a |\n", 0, "x")
    assert small.endswith("| a |\n") and "passed" in small


# -- a fake GitHub / GitLab ---------------------------------------------------------------

@dataclass
class FakeApi:
    """Comments of one pull request (GitHub) or notes of one merge request (GitLab)."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any] | None, dict[str, str]]] = field(
        default_factory=list)
    refuse: str | None = None  # a method answered 403
    url: str = ""


def serve(api: FakeApi) -> Iterator[FakeApi]:
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
            parts = urlsplit(self.path)
            size = int(self.headers.get("Content-Length") or 0)
            doc = json.loads(self.rfile.read(size)) if size else None
            api.calls.append((self.command, parts.path, doc, dict(self.headers)))
            if self.command == api.refuse:
                return self._answer(403, {"message": "Resource not accessible by integration"})
            if self.command == "GET":
                page = int(parse_qs(parts.query).get("page", ["1"])[0])
                return self._answer(200, api.comments[(page - 1) * 100:page * 100])
            if self.command == "POST":
                made = {"id": 1000 + len(api.comments), "body": doc["body"], "user": BOT,
                        "author": {"username": "gitevals-bot"}}
                api.comments.append(made)
                return self._answer(201, made)
            target = int(parts.path.rsplit("/", 1)[1])
            [found] = [c for c in api.comments if c["id"] == target]
            found["body"] = doc["body"]
            return self._answer(200, found)

        do_GET = do_POST = do_PATCH = do_PUT = _handle

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


@pytest.fixture
def fake() -> Iterator[FakeApi]:
    yield from serve(FakeApi())


def post(tmp_path: Path, api: FakeApi, code: int, md: str = "| capital | 1/10 ▼ |\n",
         **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "diff.md").write_text(md)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    base = {"GITHUB_API_URL": api.url, "GITHUB_TOKEN": "t0ken", "GITHUB_REPOSITORY": "o/r",
            "GITHUB_EVENT_PATH": str(event), "PATH": "/usr/bin:/bin"}
    return ci(["comment", str(tmp_path / "diff.md"), "--exit-code", str(code)],
              {**base, **env})


def ci(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m gitevals.ci ARGS`` with exactly ``env`` as its environment, run in this
    process (``run_main``; test_action_local runs the steps as processes)."""
    r = run_main(ci_main, args, env)
    return subprocess.CompletedProcess(["gitevals.ci", *args], r.code, r.out, r.err)


def test_one_comment_is_created_then_updated(fake: FakeApi, tmp_path: Path) -> None:
    first = post(tmp_path, fake, 1)
    assert (first.returncode, first.stderr) == (0, "gitevals: pull request #7: comment created\n")
    second = post(tmp_path, fake, 0, "| capital | 10/10 |\n")
    assert (second.returncode, second.stderr) == (
        0, "gitevals: pull request #7: comment updated\n")
    [only] = fake.comments
    assert only["body"].startswith(f"{comment.MARKER}\n**gitevals diff: passed.**")
    assert only["body"].endswith("| capital | 10/10 |\n")
    methods = [(m, p) for m, p, _, _ in fake.calls]
    assert methods == [("GET", "/repos/o/r/issues/7/comments"),
                       ("POST", "/repos/o/r/issues/7/comments"),
                       ("GET", "/repos/o/r/issues/7/comments"),
                       ("PATCH", f"/repos/o/r/issues/comments/{only['id']}")]
    headers = fake.calls[0][3]
    assert headers["Authorization"] == "Bearer t0ken"
    assert headers["Accept"] == "application/vnd.github+json"


def test_ours_is_found_on_a_later_page_and_no_one_elses_is_touched(
        fake: FakeApi, tmp_path: Path) -> None:
    forged = {"id": 1, "body": f"{comment.MARKER}\nI quote the marker",
              "user": {"login": "mallory", "type": "User"}}
    chatter = [{"id": 2 + i, "body": f"comment {i}", "user": BOT} for i in range(150)]
    ours = {"id": 999, "body": f"{comment.MARKER}\nold", "user": BOT}
    fake.comments.extend([forged, *chatter, ours])
    r = post(tmp_path, fake, 1)
    assert r.returncode == 0 and "comment updated" in r.stderr
    assert ours["body"].startswith(f"{comment.MARKER}\n**gitevals diff: failed.**")
    assert forged["body"].endswith("I quote the marker") and len(fake.comments) == 152
    assert [c[0] for c in fake.calls] == ["GET", "GET", "PATCH"]


def test_a_huge_diff_makes_a_comment_github_accepts(fake: FakeApi, tmp_path: Path) -> None:
    md = "".join(f"| scenario {i} | 1/10 ▼ |\n" for i in range(20_000))
    assert post(tmp_path, fake, 1, md).returncode == 0
    [only] = fake.comments
    assert comment.units(only["body"]) <= comment.GITHUB_LIMIT
    assert "cut to fit the 65,536-character limit" in only["body"]


def test_a_refusing_api_is_one_line_and_does_not_fail_the_job(
        fake: FakeApi, tmp_path: Path) -> None:
    fake.refuse = "POST"
    r = post(tmp_path, fake, 1)
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr == ("gitevals: could not update the comment: POST /repos/o/r/issues/7/"
                        "comments: 403 Forbidden; the job needs `pull-requests: write` "
                        "(GitHub) or a token with the api scope (GitLab); the diff is in the "
                        "summary\n")


def test_a_push_event_makes_no_comment(fake: FakeApi, tmp_path: Path) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    r = post(tmp_path, fake, 0, GITHUB_EVENT_PATH=str(event))
    assert (r.returncode, r.stderr) == (0, "gitevals: not a pull request event: no comment\n")
    assert fake.calls == []


def test_a_bad_exit_code_or_file_is_one_line(fake: FakeApi, tmp_path: Path) -> None:
    bad = ci(["comment", "x.md", "--exit-code", "-1"], dict(os.environ))
    assert bad.returncode == 2 and "is not an exit code (0-255)" in bad.stderr
    missing = ci(["summary", str(tmp_path), "--exit-code", "1"],
                 {"PATH": "/usr/bin:/bin", "GITHUB_STEP_SUMMARY": "/dev/null"})
    assert missing.returncode == 2
    assert missing.stderr == (f"gitevals: error: {tmp_path}: not a regular file; give the "
                              "file `gitevals diff --format markdown` wrote\n")


def test_gitlab_notes_are_kept_the_same_way(fake: FakeApi, tmp_path: Path) -> None:
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": fake.url + "/api/v4",
           "CI_PROJECT_ID": "group/agent", "CI_MERGE_REQUEST_IID": "3",
           "GITEVALS_GITLAB_TOKEN": "glpat", "GITEVALS_COMMENT_AUTHOR": "gitevals-bot"}
    assert "merge request !3: comment created" in post(tmp_path, fake, 1, **env).stderr
    assert "merge request !3: comment updated" in post(tmp_path, fake, 0, **env).stderr
    assert len(fake.comments) == 1
    where = "/api/v4/projects/group%2Fagent/merge_requests/3/notes"
    assert [(m, p) for m, p, _, _ in fake.calls] == [
        ("GET", where), ("POST", where), ("GET", where), ("PUT", f"{where}/1000")]
    assert fake.calls[0][3]["Private-Token"] == "glpat"
