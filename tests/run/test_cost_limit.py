"""Cost as a limit: tokens priced by [tool.gitevals.pricing], `run --cost-limit` stopping a
run cleanly, and the judge's usage reported apart from the target's (real CLI, real git)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.runs import only_artifact

#: A target that reports only tokens (one million in, half a million out) and its model:
#: a python target (imported once a run, forked per conversation), as pricing reads the
#: reply whatever the kind of target; test_a_bad_price_is_a_settings_finding keeps the
#: command form (COMMAND) in the settings it lints.
TOKENS_HARNESS = """\
def respond(messages):
    return {"final_answer": "Paris", "model": "agent-2026-01-01",
            "usage": {"prompt_tokens": 1000000, "completion_tokens": 500000}}
"""
# agent: 1 USD in + 0.5 * 2 USD out = 2 USD a reply
PRICING = """
[tool.gitevals.pricing.models]
"agent-2026-01-01" = { input = 1.0, output = 2.0 }
"judge-2026-01-15" = { input = 10.0, output = 100.0 }
"""
COMMAND = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n' + PRICING


def _case(trials: int, expect: str = "[{final_answer_contains: Paris}]") -> str:
    return (f"defaults: {{trials: {trials}, timeout: 10s}}\nscenarios:\n  - id: s\n"
            f"    user: France?\n    expect: {expect}\n")


def _setup(repo: Repo, case: str, settings: str = SETTINGS,
           graders: dict[str, str] | None = None) -> None:
    files: dict[str, str | bytes] = {"harness.py": TOKENS_HARNESS, "pyproject.toml": settings,
                                     "evals/cases/geo.yaml": case}
    files.update({f"evals/graders/{n}.py": g for n, g in (graders or {}).items()})
    repo.commit(files)


def _results(art: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = art["cases"][0]["scenarios"][0]["results"]
    return results


def test_tokens_are_priced_from_the_table(repo: Repo) -> None:
    _setup(repo, _case(3))
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    assert "tokens 3,000,000 in / 1,500,000 out; cost 6\n" in res.out
    art = only_artifact(repo)
    assert art["settings"]["pricing"]["models"]["agent-2026-01-01"] == {"input": 1.0,
                                                                      "output": 2.0}
    assert "cost_limit" not in art["options"] and "interrupted_reason" not in art
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert json.loads(shown.out)["usage"]["cost"] == 6


def test_the_cost_limit_stops_the_run_and_keeps_what_finished(repo: Repo) -> None:
    _setup(repo, _case(10))
    res = run_cli("run", "--jobs", "1", "--cost-limit", "5", cwd=repo.path)
    assert res.code == 130, res.err
    art = only_artifact(repo)  # validated against the result schema
    assert art["interrupted"] is True and art["options"]["cost_limit"] == 5
    # 2 USD a trial: the third crosses 5 USD, and nothing after it starts
    assert len(_results(art)) == 3
    reason = "cost limit 5 USD reached: 6 USD spent by the target and the judge"
    assert art["interrupted_reason"].startswith(reason)
    said = [line for line in res.err.splitlines() if "cost limit" in line]
    assert len(said) == 1 and said[0].startswith(f"gitevals: {reason}")
    assert "evals/results/" in said[0]
    assert "cost 6" in res.out


def test_a_limit_not_reached_changes_nothing_but_the_record(repo: Repo) -> None:
    _setup(repo, _case(2))
    res = run_cli("run", "--cost-limit", "100", cwd=repo.path)
    assert res.code == 0, res.err
    art = only_artifact(repo)
    assert art["interrupted"] is False and "interrupted_reason" not in art
    assert art["options"]["cost_limit"] == 100 and len(_results(art)) == 2


@pytest.mark.parametrize("given", ["0", "-1", "inf", "nan", "1e9", "two"])
def test_a_bad_cost_limit_is_one_line(repo: Repo, given: str) -> None:
    _setup(repo, _case(1))
    res = run_cli("run", "--cost-limit", given, cwd=repo.path)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res.err
    assert "--cost-limit" in res.err and "Traceback" not in res.err
    assert not (repo.path / "evals" / "results").exists()


@pytest.mark.parametrize("row", ["{ input = -1.0, output = 1.0 }", "{ input = 1.0 }",
                                 "{ input = nan, output = 1.0 }",
                                 '{ input = "1", output = 1.0 }',
                                 "{ input = 1e7, output = 1.0 }"])
def test_a_bad_price_is_a_settings_finding(repo: Repo, row: str) -> None:
    settings = COMMAND + f'[tool.gitevals.pricing.models]\n"m" = {row}\n'
    _setup(repo, _case(1), settings)
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1 and "pyproject.toml:" in res.out + res.err
    assert "GE70" in res.out + res.err and "Traceback" not in res.err


JUDGE_ANSWER = {"choices": [{"message": {"content": "PASS"}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 10}}


@pytest.fixture
def judge_url() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps(JUDGE_ANSWER).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # the run's preflight
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


JUDGED = "def judged(t, case, run):\n    return t.judge('is it ' + run['final_answer'])\n"


def test_judge_usage_is_recorded_and_reported_apart(repo: Repo, judge_url: str) -> None:
    judge = (f'[tool.gitevals.judge]\nbase_url = "{judge_url}"\n'
             'model = "judge-2026-01-15"\n')
    _setup(repo, _case(2, "[{grader: {name: q.judged}}]"), SETTINGS + judge,
           {"q": JUDGED})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    answers = [r["graders"][0] for r in _results(only_artifact(repo))]
    assert [a["usage"] for a in answers] == [
        {"calls": 1, "reported": 1, "prompt_tokens": 1000, "completion_tokens": 10,
         "models": [None]}] * 2  # the reply named no model (#23 item 5 records it per call)
    # target: 2 USD a trial; judge: 1000 * 10 + 10 * 100 per million = 0.011 a call
    assert "tokens 2,000,000 in / 1,000,000 out; cost 4\n" in res.out
    assert "judge: 2 calls; tokens 2,000 in / 20 out; cost 0.022\n" in res.out
    shown = json.loads(run_cli("show", "--format", "json", cwd=repo.path).out)
    assert shown["usage"]["cost"] == 4
    assert shown["judge_usage"] == {"calls": 2, "reported": 2, "prompt_tokens": 2000,
                                    "completion_tokens": 20, "cost": pytest.approx(0.022)}


def test_the_judge_counts_toward_the_limit(repo: Repo, judge_url: str) -> None:
    # the target reports nothing priced here (no table row for its model): only the judge
    judge = (f'[tool.gitevals.judge]\nbase_url = "{judge_url}"\n'
             'model = "judge-2026-01-15"\n')
    only_judge = SETTINGS.replace('"agent-2026-01-01"', '"other-model"') + judge
    _setup(repo, _case(10, "[{grader: {name: q.judged}}]"), only_judge, {"q": JUDGED})
    res = run_cli("run", "--jobs", "1", "--cost-limit", "0.02", cwd=repo.path)
    assert res.code == 130, res.out + res.err
    art = only_artifact(repo)
    assert len(_results(art)) == 2  # 0.011 a trial: the second crosses 0.02
    assert art["interrupted_reason"].startswith("cost limit 0.02 USD reached: 0.022 USD")
