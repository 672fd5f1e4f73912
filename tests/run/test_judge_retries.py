"""``t.llm`` retries 429, 5xx and timeouts with backoff; the grader limit holds them all."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from typing import Any

import pytest

from gitevals.run.judge import JudgeError, budget, llm
from tests.conftest import Repo, run_cli
from tests.support.runs import SETTINGS_NO_SITE as SETTINGS  # the harness with -S
from tests.support.runs import only_artifact, setup

OK = json.dumps({"choices": [{"message": {"content": "judged"}}]}).encode()


@dataclass
class Script:
    """What the server answers, in order: (status, headers, delay seconds); the last
    answer repeats. ``times`` records when each request arrived."""

    url: str = ""
    answers: list[tuple[int, dict[str, str], float]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Script]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            n = len(script.times)
            script.times.append(time.monotonic())
            status, headers, delay = script.answers[min(n, len(script.answers) - 1)]
            time.sleep(delay)
            body = OK if status == 200 else f"status {status}".encode()
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up on a slow answer

        def do_GET(self) -> None:  # the run's preflight
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    script.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield script
    srv.shutdown()
    srv.server_close()


def _config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": url, "model": "judge-2026-01-15", "timeout": 5, **extra}


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITEVALS_JUDGE_BACKOFF", "0.05")


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in pairwise(times)]


@pytest.mark.parametrize("retry_after", ["1", "date"], ids=["seconds", "http-date"])
def test_429_waits_what_retry_after_asks_then_answers(server: Script, retry_after: str) -> None:
    value = formatdate(time.time() + 2, usegmt=True) if retry_after == "date" else retry_after
    server.answers = [(429, {"Retry-After": value}, 0), (200, {}, 0)]
    assert llm(_config(server.url), "p") == "judged"
    assert len(server.times) == 2
    assert _gaps(server.times)[0] >= 0.9  # not the 0.05 s backoff


def test_503_twice_then_200_backs_off_exponentially(server: Script) -> None:
    server.answers = [(503, {}, 0), (503, {}, 0), (200, {}, 0)]
    assert llm(_config(server.url), "p") == "judged"
    first, second = _gaps(server.times)
    assert first >= 0.05 and second >= 0.1


def test_always_500_gives_up_after_the_retries(server: Script) -> None:
    server.answers = [(500, {}, 0)]
    with pytest.raises(JudgeError) as err:
        llm(_config(server.url, retries=2), "p")
    assert len(server.times) == 3
    assert str(err.value) == (f"judge answered HTTP 500 at {server.url}/chat/completions: "
                              "status 500 (gave up after 3 attempts)")


def test_a_client_error_is_not_retried(server: Script) -> None:
    server.answers = [(400, {}, 0)]
    with pytest.raises(JudgeError, match="HTTP 400"):
        llm(_config(server.url), "p")
    assert len(server.times) == 1


def test_a_retry_after_beyond_the_longest_wait_ends_the_call(server: Script) -> None:
    server.answers = [(429, {"Retry-After": "3600"}, 0)]
    with pytest.raises(JudgeError, match=r"gave up after 1 attempt; it asked to wait 3600 s"):
        llm(_config(server.url), "p")


def test_a_slow_judge_times_out_and_is_retried(server: Script) -> None:
    server.answers = [(200, {}, 1.5), (200, {}, 0)]
    assert llm(_config(server.url, timeout=0.5), "p") == "judged"
    assert len(server.times) == 2


def test_a_judge_slow_every_time_is_a_judge_error(server: Script) -> None:
    server.answers = [(200, {}, 1.0)]
    with pytest.raises(JudgeError, match=r"did not answer within 0.3 s \(gave up after 2 "):
        llm(_config(server.url, timeout=0.3, retries=1), "p")


def test_the_budget_holds_every_attempt_and_wait() -> None:
    assert budget(_config("http://x", timeout=60, retries=3)) == 60 * 4 + 30 * 3
    assert budget(None) == 0


JUDGED = "def judged(t, case, run):\n    return {'pass': True, 'why': t.llm('x')}\n"
CASE = ("defaults: {trials: 3, timeout: 5s}\nscenarios:\n  - id: g\n    user: France?\n"
        "    expect: [{grader: {name: q.judged}}]\n")


def _judge(url: str, extra: str = "") -> str:
    return (f'\n[tool.gitevals.judge]\nbase_url = "{url}"\nmodel = "judge-2026-01-15"\n'
            f"timeout = 2\n{extra}")


def test_a_judge_slower_than_the_grader_limit_is_not_a_grader_timeout(server: Script,
                                                                      repo: Repo) -> None:
    # The grader limit is 1 s here; the judge takes 1.5 s: the grader's limit grows by
    # the judge's budget, so the answer arrives and is recorded.
    server.answers = [(200, {}, 1.5)]
    setup(repo, {"c": CASE}, {"q": JUDGED}, SETTINGS + _judge(server.url))
    res = run_cli("run", "--trials", "1", cwd=repo.path, env={"GITEVALS_GRADER_TIMEOUT": "1"})
    assert res.code == 0, res.out + res.err
    (result,) = only_artifact(repo)["cases"][0]["scenarios"][0]["results"]
    assert result["graders"][0]["raw"] == {"pass": True, "why": "judged"}


def test_a_run_records_giving_up_as_a_judge_error(server: Script, repo: Repo) -> None:
    server.answers = [(500, {}, 0)]
    setup(repo, {"c": CASE}, {"q": JUDGED}, SETTINGS + _judge(server.url, "retries = 1\n"))
    res = run_cli("run", "--trials", "1", cwd=repo.path, env={"GITEVALS_JUDGE_BACKOFF": "0.05"})
    # the grader is not calibrated, so advisory: its error is shown, not counted
    assert res.code == 0 and "advisory, not counted: grader q.judged: judge_error" in res.out
    (result,) = only_artifact(repo)["cases"][0]["scenarios"][0]["results"]
    error = result["graders"][0]["error"]
    assert error["kind"] == "judge_error"
    assert "HTTP 500" in error["message"] and "gave up after 2 attempts" in error["message"]


def test_retries_beyond_the_schema_are_refused(repo: Repo) -> None:
    setup(repo, {"c": CASE}, {"q": JUDGED},
           SETTINGS + _judge("http://127.0.0.1:9/v1", "retries = 99\n"))
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "bad setting judge.retries" in res.err


# -- #23 item 6: the grader's own time, the judge's time, and the ceiling -----------------

OWN_THEN_JUDGE = """\
import time

def little(t, case, run):
    time.sleep(0.3)
    why = t.llm("x")
    time.sleep(0.3)
    return {"pass": True, "why": why}

def much(t, case, run):
    time.sleep(0.7)
    why = t.llm("x")
    time.sleep(0.7)
    return {"pass": True, "why": why}

def chatty(t, case, run):
    return {"pass": all(t.llm(str(i)) for i in range(100)), "why": "asked 100 times"}
"""


def _grader_case(name: str) -> str:
    return ("defaults: {trials: 1, timeout: 5s}\nscenarios:\n  - id: g\n    user: France?\n"
            f"    expect: [{{grader: {{name: q.{name}}}}}]\n")


def _answer_of(repo: Repo, server: Script, name: str, judge: str) -> dict[str, Any]:
    setup(repo, {"c": _grader_case(name)}, {"q": OWN_THEN_JUDGE}, SETTINGS + judge)
    res = run_cli("run", "--no-preflight", cwd=repo.path,
                  env={"GITEVALS_GRADER_TIMEOUT": "1"})
    assert res.code in (0, 1), res.err
    (result,) = only_artifact(repo)["cases"][0]["scenarios"][0]["results"]
    answer: dict[str, Any] = result["graders"][0]
    return answer


def test_the_grader_limit_counts_its_own_code_not_the_judge(server: Script,
                                                            repo: Repo) -> None:
    # 0.6 s of its own and a 1.5 s judge: 2.1 s in all, within a 1 s own limit
    server.answers = [(200, {}, 1.5)]
    got = _answer_of(repo, server, "little", _judge(server.url))
    assert got["error"] is None and got["raw"] == {"pass": True, "why": "judged"}
    assert got["duration_ms"] >= 2000


def test_a_grader_past_its_own_limit_around_a_quick_judge_times_out(server: Script,
                                                                    repo: Repo) -> None:
    # 1.4 s of its own: past the 1 s limit although the judge added only 0.1 s (before,
    # the limit grew by the judge's whole budget and the grader ran on)
    server.answers = [(200, {}, 0.1)]
    got = _answer_of(repo, server, "much", _judge(server.url))
    assert got["error"]["kind"] == "grader_timeout"
    assert got["error"]["message"] == ("grader q.much ran past 1 s of its own time (waiting "
                                       "for the judge not counted); its worker was restarted")
    assert got["duration_ms"] < 5000  # stopped (a loaded machine adds its own delay)


def test_the_judge_calls_of_one_grader_call_share_one_budget(server: Script,
                                                             repo: Repo) -> None:
    # timeout 0.5 s, no retries: the judge has 0.5 s in all for this grader call; each
    # answer takes 0.2 s, so the third of 100 asks finds it spent (100 x 0.2 s before)
    server.answers = [(200, {}, 0.2)]
    got = _answer_of(repo, server, "chatty", _judge(server.url).replace(
        "timeout = 2\n", "timeout = 0.5\nretries = 0\n"))
    assert got["error"]["kind"] == "judge_error"
    assert ("the judge's 0.5 s for this grader call are spent" in got["error"]["message"])
    assert got["duration_ms"] < 1500 and len(server.times) <= 4


def test_the_ceiling_is_the_own_limit_plus_one_judge_budget(tmp_path: Any) -> None:
    from gitevals.run.grading import GraderWorker

    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "asks.py").write_text("def f(t, case, run):\n    return t.judge('x')\n")
    (graders / "plain.py").write_text("def f(t, case, run):\n    return True\n")
    config = _config("http://127.0.0.1:9/v1", timeout=60, retries=3)
    worker = GraderWorker(str(tmp_path), "evals", config)
    # t.judge may ask 4 times: they share the 330 s (it was 30 + 4 x 330 s, 22.5 minutes)
    asks, plain = ((graders / f"{n}.py").read_bytes() for n in ("asks", "plain"))
    assert worker.limit("asks", asks) == 30 + 60 * 4 + 30 * 3 == 360
    assert worker.limit("plain", plain) == 30
