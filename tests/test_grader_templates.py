"""``gitevals init --graders``: the four templates, written into a real repo, linted, and
run by ``gitevals run`` on passing and failing answers (an echo harness answers with the
user's own text, so each scenario's ``user`` is the answer graded)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from gitevals.grader_templates import TEMPLATES
from tests.conftest import Repo, run_cli
from tests.support.judges import FakeJudge

ECHO = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    print(json.dumps({"final_answer": msg["text"], "tool_calls": [], "hooks": [],
                      "error": None}), flush=True)
"""


def _case(grader: str, scenarios: dict[str, str], trials: int = 1) -> str:
    lines = [f"defaults: {{trials: {trials}, timeout: 60s}}", "scenarios:"]
    for sid, answer in scenarios.items():
        lines += [f"  - id: {sid}", f"    user: {json.dumps(answer)}",
                  f"    expect: [{{grader: {{name: {grader}}}}}]"]
    return "\n".join(lines) + "\n"


def _init(repo: Repo, settings: str = "") -> None:
    res = run_cli("init", "--graders", cwd=repo.path)
    assert res.code == 0, res.err
    assert sorted(p.name for p in (repo.path / "evals/graders").iterdir()) == sorted(TEMPLATES)
    repo.write({"echo.py": ECHO, "pyproject.toml": '[tool.gitevals.target]\ncommand = '
                f'["{sys.executable}", "echo.py"]\n' + settings})


def _run(repo: Repo, env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """scenario id -> its one grader outcome, from the artifact of a real run."""
    res = run_cli("run", "--no-note", cwd=repo.path, env=env)
    assert "Traceback" not in res.err, res.err
    [path] = (repo.path / "evals/results").glob("*.json")
    art = json.loads(path.read_text())
    path.unlink()
    return {s["id"]: s["results"][0]["assertions"][0]
            for c in art["cases"] for s in c["scenarios"]}


def test_init_graders_never_overwrites(repo: Repo) -> None:
    _init(repo)
    mine = repo.path / "evals/graders/exact_match.py"
    mine.write_text("# mine\n")
    res = run_cli("init", "--graders", cwd=repo.path)
    assert res.code == 1 and "exact_match.py: already exists" in res.err
    assert mine.read_text() == "# mine\n"


def test_the_templates_lint_clean(repo: Repo) -> None:
    _init(repo)
    names = ["schema_compliance.follows_schema", "exact_match.matches",
             "execution.passes_tests", "llm_judge.meets_criterion"]
    repo.commit({f"evals/cases/t{i}.yaml": _case(n, {"answers-the-question": "x"}, 3)
                 for i, n in enumerate(names)})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    # the only finding: the judge template is not calibrated yet (a warning on the case)
    found = [line for line in (res.out + res.err).splitlines() if ": GE" in line]
    assert len(found) == 1, found
    assert "GE510 (warning) grader llm_judge.meets_criterion" in found[0]


def test_schema_compliance(repo: Repo) -> None:
    _init(repo)
    repo.commit({"evals/cases/s.yaml": _case("schema_compliance.follows_schema", {
        "valid": '{"action": "search", "arguments": {"q": "x"}}',
        "extra-key": '{"action": "search", "arguments": {}, "why": 1}',
        "malformed": '{"action": "search", '})})
    out = _run(repo)
    assert out["valid"]["passed"] is True
    assert out["extra-key"]["passed"] is False and out["extra-key"]["error"] is None
    assert "judged fail" in out["malformed"]["message"] and out["malformed"]["error"] is None


def test_exact_match_normalizes_both_sides(repo: Repo) -> None:
    _init(repo)
    repo.commit({"evals/cases/e.yaml": _case("exact_match.matches", {
        "answers-the-question": "  PARIS. "})})
    assert _run(repo)["answers-the-question"]["passed"] is True
    repo.commit({"evals/cases/e.yaml": _case("exact_match.matches", {
        "answers-the-question": "Lyon", "not-listed": "Paris"})})
    out = _run(repo)
    assert out["answers-the-question"]["passed"] is False
    assert out["answers-the-question"]["error"] is None
    assert out["not-listed"]["error"]["kind"] == "grader_error"  # no expected: never a pass


@pytest.mark.needs_bwrap
def test_execution_runs_the_answer_in_the_sandbox_and_refuses_without_it(
        repo: Repo, tmp_path: Path) -> None:
    _init(repo)
    repo.commit({"evals/cases/x.yaml": _case("execution.passes_tests", {
        "adds": "def add(a, b):\n    return a + b\n",
        "subtracts": "def add(a, b):\n    return a - b\n",
        "escapes": "import socket\nsocket.create_connection(('127.0.0.1', 9))\n"
                   "def add(a, b):\n    return a + b\n"})})
    out = _run(repo)
    assert out["adds"]["passed"] is True, out["adds"]
    assert out["subtracts"]["passed"] is False and out["subtracts"]["error"] is None
    assert out["escapes"]["passed"] is False  # no network in the sandbox
    # no bwrap on PATH: an error, never a pass and never a run on the host
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink("/usr/bin/git", bare / "git")
    out = _run(repo, env={"PATH": str(bare)})
    for sid in ("adds", "subtracts"):
        assert out[sid]["passed"] is False
        assert out[sid]["error"]["kind"] == "grader_error"
        assert "SandboxUnavailable: bubblewrap (bwrap) is not on PATH" in out[sid]["message"]


def test_llm_judge_asks_t_judge_with_few_shot_slots(repo: Repo, judge: FakeJudge) -> None:
    settings = (f'[tool.gitevals.judge]\nbase_url = "{judge.url}"\n'
                'model = "judge-2026-01-15"\nretries = 0\n')
    _init(repo, settings)
    repo.commit({"evals/cases/j.yaml": _case("llm_judge.meets_criterion", {
        "polite": "The capital of France is Paris."})})
    for said, passed in (("PASS", True), ("fail", False)):
        judge.body = json.dumps({"choices": [{"message": {"content": said}}]}).encode()
        out = _run(repo)
        assert out["polite"]["passed"] is passed and out["polite"]["error"] is None
        assert out["polite"]["advisory"] is True  # not calibrated: shown, not counted
    prompt = judge.requests[-1]["json"]["messages"][-1]["content"]
    assert "Responses that meet it (PASS):\n- Task: What is the capital" in prompt
    assert "Responses that do not (FAIL):" in prompt
    assert prompt.endswith("Response: The capital of France is Paris.\nVerdict:")
    assert judge.requests[-1]["json"]["temperature"] == 0
    judge.body = json.dumps({"choices": [{"message": {"content": "PASS, mostly"}}]}).encode()
    out = _run(repo)
    assert out["polite"]["error"]["kind"] == "judge_unparseable"
