"""``t.llm`` against a small OpenAI-compatible server started on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitevals.run.grading import GraderWorker
from gitevals.run.judge import NO_JUDGE, JudgeError, T, llm
from tests.conftest import Repo, run_cli
from tests.support.judges import FakeJudge


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
    # the worker inherits it: the 503 is retried after 10 ms, not after 1 s, 2 s (the
    # retries and their waits are test_judge_retries'; here only the swallowed error)
    monkeypatch.setenv("GITEVALS_JUDGE_BACKOFF", "0.01")
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
    from tests.support.runs import HARNESS, SETTINGS, only_artifact

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
    (result,) = only_artifact(repo)["cases"][0]["scenarios"][0]["results"]
    assert result["graders"][0]["raw"] == {"pass": True, "why": "judged: Paris"}
    assert judge.requests[0]["auth"] == "Bearer sk-run"
    assert judge.requests[0]["json"]["model"] == "judge-2026-01-15"
