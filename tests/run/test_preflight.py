"""``gitevals run`` checks the target and the judge before any trial (exit 2, one line)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support import runs
from tests.support.runs import scenario_case

#: The example harness as a python target (``runs.AGENT``, the same answers) for the
#: judge and grader preflights, which are not about the kind of target: one Python a
#: run instead of one a conversation. The command-target preflights write their own.
SETTINGS = runs.AGENT_SETTINGS


def setup(repo: Repo, cases: dict[str, str], graders: dict[str, str] | None = None,
          settings: str = SETTINGS) -> str:
    """``runs.setup`` with the example harness as a python target (``SETTINGS``)."""
    return runs.setup(repo, cases, graders, settings)


JUDGED = "def judged(t, case, run):\n    return {'pass': True, 'why': t.llm('x')}\n"
PLAIN = "def plain(t, case, run):\n    return True\n"
GRADED = ("defaults: {trials: 3}\nscenarios:\n  - id: g\n    user: capital of France?\n"
          "    expect: [{grader: {name: q.judged}}]\n")


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A server that answers every GET with 404 (an answer is all the preflight asks)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    import threading

    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _judge(url: str, key: str = "PF_JUDGE_KEY") -> str:
    return (f'\n[tool.gitevals.judge]\nbase_url = "{url}"\nmodel = "judge-2026-01-15"\n'
            f'api_key_env = "{key}"\ntimeout = 5\n')


def _refused(res: Any, says: str) -> None:
    assert res.code == 2, res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], res.err
    assert res.out == ""


@pytest.mark.parametrize(("command", "says"), [
    ('["./nothere.sh"]', "'./nothere.sh' is not a file in the commit"),
    ('["./harness.py"]', "'./harness.py' is not executable in the commit"),
    ('["no-such-program-gitevals"]', "'no-such-program-gitevals' is not on PATH"),
    ('["/nonexistent/gitevals-agent"]', "'/nonexistent/gitevals-agent' does not exist"),
], ids=["missing", "not-executable", "not-on-path", "absolute"])
def test_a_target_command_that_cannot_start_stops_the_run(repo: Repo, command: str,
                                                          says: str) -> None:
    setup(repo, {"tone": scenario_case("ok")},
           settings=f"[tool.gitevals.target]\ncommand = {command}\n")
    res = run_cli("run", cwd=repo.path)
    _refused(res, says)
    assert not (repo.path / "evals" / "results").exists()
    assert "--no-preflight" in res.err


def test_no_preflight_runs_and_records_the_broken_trials(repo: Repo) -> None:
    setup(repo, {"tone": scenario_case("ok", trials=1)},
           settings='[tool.gitevals.target]\ncommand = ["./nothere.sh"]\n')
    res = run_cli("run", "--no-preflight", cwd=repo.path)
    assert res.code == 1
    assert "target_start" in res.out


@pytest.mark.parametrize(("module", "spec", "says"), [
    ("raise RuntimeError('kaboom')\n", "agent:respond", "RuntimeError: kaboom"),
    ("x = 1\n", "agent:respond", "agent has no function 'respond'"),
    ("x = 1\n", "nomodule:respond", "No module named 'nomodule'"),
], ids=["raises", "no-function", "no-module"])
def test_a_python_target_that_does_not_import_stops_the_run(repo: Repo, module: str,
                                                            spec: str, says: str) -> None:
    repo.commit({"agent.py": module, "pyproject.toml":
                 f'[tool.gitevals.target]\npython = "{spec}"\n',
                 "evals/cases/tone.yaml": scenario_case("ok")})
    res = run_cli("run", cwd=repo.path)
    _refused(res, f"python target {spec} does not load in the commit: ")
    assert says in res.err


def test_a_python_target_that_imports_runs(repo: Repo) -> None:
    repo.commit({"agent.py": "def respond(m):\n    return {'final_answer': 'Paris'}\n",
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n',
                 "evals/cases/tone.yaml": scenario_case("ok", trials=1)})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err


def test_a_grader_calling_the_judge_needs_a_judge(repo: Repo) -> None:
    setup(repo, {"capital": GRADED}, {"q": JUDGED})
    _refused(run_cli("run", cwd=repo.path),
             "grader q.judged calls t.llm but no judge is configured: set "
             "[tool.gitevals.judge]")


def test_the_judge_key_variable_must_be_set(repo: Repo, endpoint: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PF_JUDGE_KEY", raising=False)
    setup(repo, {"capital": GRADED}, {"q": JUDGED}, SETTINGS + _judge(endpoint))
    _refused(run_cli("run", cwd=repo.path),
             "the judge key variable PF_JUDGE_KEY is not set: export it")


def test_a_judge_that_does_not_answer_stops_the_run(repo: Repo) -> None:
    setup(repo, {"capital": GRADED}, {"q": JUDGED}, SETTINGS + _judge("http://127.0.0.1:9/v1"))
    _refused(run_cli("run", cwd=repo.path, env={"PF_JUDGE_KEY": "k"}),
             "the judge at http://127.0.0.1:9/v1 does not answer")


def test_any_http_answer_counts_and_the_run_goes_on(repo: Repo, endpoint: str) -> None:
    # The 404 server answers GET; its chat endpoint does not exist, so the grader's
    # t.llm fails at run time: the preflight only asks whether the endpoint is there.
    setup(repo, {"capital": GRADED}, {"q": JUDGED}, SETTINGS + _judge(endpoint))
    res = run_cli("run", cwd=repo.path, env={"PF_JUDGE_KEY": "k",
                                             "GITEVALS_JUDGE_BACKOFF": "0.01"})
    # q.judged is not calibrated, so advisory: its error is shown but not counted
    assert res.code == 0, res.err
    assert "advisory, not counted: grader q.judged: judge_error" in res.out


def test_graders_that_never_call_the_judge_need_none(repo: Repo) -> None:
    case = GRADED.replace("q.judged", "q.plain")
    setup(repo, {"capital": case}, {"q": PLAIN})
    assert run_cli("run", cwd=repo.path).code == 0


def test_only_selected_cases_count(repo: Repo) -> None:
    setup(repo, {"capital": GRADED, "tone": scenario_case("ok", trials=1)}, {"q": JUDGED})
    assert run_cli("run", "tone", cwd=repo.path).code == 0

