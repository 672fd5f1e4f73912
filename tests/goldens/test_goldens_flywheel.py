"""``gitevals goldens from-runs`` (the flywheel) and ``goldens stats``' priority ranking:
the real CLI on a real repository with a run made by a real target."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support.runs import repo_copy

AGENT = """\
def respond(messages):
    if messages[-1]["scenario"] == "raises":
        raise RuntimeError("kaboom")
    return {"final_answer": "Paris"}
"""
CASE = """\
defaults: {trials: 2, timeout: 20s}
scenarios:
  - id: fine
    user: What is the capital of France?
    expect: [{final_answer_contains: Paris}]
  - id: raises
    user: [hi, are you there?]
    expect: [{final_answer_contains: Paris}]
"""
GOLDEN = '{"id": "g1", "input": "hello", "bucket": "greeting"}\n'


def rows(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def _commit_and_run(repo: Repo) -> None:
    repo.commit({"agent.py": AGENT, "evals/cases/demo.yaml": CASE,
                 "evals/goldens.jsonl": GOLDEN,
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n'})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.err


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of the repository and its run, made once for the test run."""
    return repo_copy(tmp_path_factory, tmp_path, "flywheel-ran", _commit_and_run)


def test_failed_trials_become_rows_that_lint_clean(ran: Repo) -> None:
    res = run_cli("goldens", "from-runs", "HEAD", "--failed", "--bucket", "crash",
                  cwd=ran.path)
    assert res.code == 0, res.err
    got = rows(res.out)
    commit = git(ran.path, "rev-parse", "HEAD").strip()
    [artifact] = (ran.path / "evals/results").glob("*.json")
    run_id = json.loads(artifact.read_text())["run_id"]
    assert [r["id"] for r in got] == ["run-demo-raises-0", "run-demo-raises-1"]
    for n, r in enumerate(got):
        assert r["input"] == ["hi", "are you there?"]
        assert r["bucket"] == "crash"
        assert r["passed"] is False
        assert r["source"] == {"run_id": run_id, "commit": commit, "case": "demo",
                               "scenario": "raises", "trial": n}
    assert res.err == "wrote 2 rows to stdout; refused 0\n"
    goldens = ran.path / "evals/goldens.jsonl"
    goldens.write_text(GOLDEN + res.out)
    lint = run_cli("lint", cwd=ran.path)
    assert lint.code == 0, lint.out + lint.err
    stats = run_cli("goldens", "stats", cwd=ran.path)
    assert re.search(r"\n  crash +2\n", stats.out)


def test_every_trial_without_failed_and_the_artifact_file_is_the_same(ran: Repo) -> None:
    [artifact] = (ran.path / "evals/results").glob("*.json")
    by_rev = run_cli("goldens", "from-runs", "HEAD", cwd=ran.path)
    by_file = run_cli("goldens", "from-runs", str(artifact), cwd=ran.path)
    assert by_rev.code == by_file.code == 0
    assert by_rev.out == by_file.out
    got = rows(by_rev.out)
    assert [(r["id"], r["passed"], r["input"]) for r in got] == [
        ("run-demo-fine-0", True, "What is the capital of France?"),
        ("run-demo-fine-1", True, "What is the capital of France?"),
        ("run-demo-raises-0", False, ["hi", "are you there?"]),
        ("run-demo-raises-1", False, ["hi", "are you there?"])]
    assert got[0]["output"] == "Paris"
    assert all("bucket" not in r for r in got)


def test_a_retired_id_is_refused(ran: Repo) -> None:
    (ran.path / "evals/goldens.retired").write_text("old\nrun-demo-raises-0\n")
    res = run_cli("goldens", "from-runs", "HEAD", "--failed", cwd=ran.path)
    assert res.code == 1
    assert [r["id"] for r in rows(res.out)] == ["run-demo-raises-1"]
    assert res.err.splitlines() == [
        'gitevals: refused id "run-demo-raises-0": retired (evals/goldens.retired line 2); '
        "ids are never reused",
        "wrote 1 rows to stdout; refused 1"]


def test_an_id_already_in_goldens_is_refused(ran: Repo) -> None:
    first = run_cli("goldens", "from-runs", "HEAD", "--failed", cwd=ran.path)
    goldens = ran.path / "evals/goldens.jsonl"
    goldens.write_text(GOLDEN + first.out)
    again = run_cli("goldens", "from-runs", "HEAD", cwd=ran.path)
    assert again.code == 1
    assert [r["id"] for r in rows(again.out)] == ["run-demo-fine-0", "run-demo-fine-1"]
    assert 'gitevals: refused id "run-demo-raises-1": already in evals/goldens.jsonl\n' \
        in again.err


def test_output_file_is_created_never_overwritten(ran: Repo) -> None:
    out = ran.path / "new.jsonl"
    res = run_cli("goldens", "from-runs", "HEAD", "--failed", "-o", str(out), cwd=ran.path)
    assert res.code == 0, res.err
    assert res.out == ""
    written = out.read_text()
    assert len(rows(written)) == 2
    again = run_cli("goldens", "from-runs", "HEAD", "-o", str(out), cwd=ran.path)
    assert again.code == 2
    assert again.err == (f"gitevals: error: {out}: already exists; name a new file (rows are never "
                         "written over an existing one)\n")
    assert out.read_text() == written


TRANSCRIPT = [
    {"conversation": "c1", "user": "refund please", "final_answer": "done", "error": None},
    {"conversation": "c2", "user": "cancel", "final_answer": None, "error": "timeout"},
    {"conversation": "c2", "user": "hello?", "final_answer": "sorry", "error": None},
]


def test_a_jsonl_transcript_gives_one_row_per_conversation(ran: Repo) -> None:
    log = ran.path / "prod.jsonl"
    log.write_text("".join(json.dumps({**r, "commit": "c" * 40}) + "\n" for r in TRANSCRIPT))
    res = run_cli("goldens", "from-runs", "prod.jsonl", "--failed", "--bucket", "timeouts",
                  cwd=ran.path)
    assert res.code == 0, res.err
    assert rows(res.out) == [{
        "id": "log-c2", "input": ["cancel", "hello?"], "output": "sorry", "passed": False,
        "bucket": "timeouts", "source": {"file": "prod.jsonl", "line": 2, "commit": "c" * 40,
                                         "conversation": "c2"}}]


def test_a_transcript_line_without_its_user_turn_is_refused(ran: Repo) -> None:
    log = ran.path / "prod.jsonl"
    log.write_text(json.dumps(TRANSCRIPT[0]) + "\n" + json.dumps({"conversation": "c3"}) + "\n")
    res = run_cli("goldens", "from-runs", "prod.jsonl", cwd=ran.path)
    assert res.code == 2
    assert res.out == ""
    assert res.err == ('gitevals: error: prod.jsonl:2:1: no "user" string: each line carries the '
                       "user turn the reply answered\n")


def test_more_conversations_than_the_limit_are_refused_not_cut(ran: Repo) -> None:
    log = ran.path / "big.jsonl"
    log.write_text("".join(json.dumps({"conversation": f"c{i}", "user": "hi"}) + "\n"
                           for i in range(10_001)))
    res = run_cli("goldens", "from-runs", "big.jsonl", cwd=ran.path)
    assert res.code == 2
    assert res.out == ""
    assert res.err == ("gitevals: error: big.jsonl:10001:1: more than 10,000 conversations; "
                       "export a smaller file\n")


def test_only_regular_files_are_read(ran: Repo) -> None:
    fifo = ran.path / "pipe.jsonl"
    os.mkfifo(fifo)
    res = run_cli("goldens", "from-runs", "pipe.jsonl", cwd=ran.path, timeout=20)
    assert res.code == 2
    assert "pipe.jsonl: not a regular file" in res.err
    assert res.out == ""


def test_a_revision_without_a_run_is_one_line(repo: Repo) -> None:
    repo.commit({"evals/goldens.jsonl": GOLDEN})
    res = run_cli("goldens", "from-runs", "HEAD", cwd=repo.path)
    assert res.code == 2
    assert len(res.err.splitlines()) == 1
    assert "no run of HEAD" in res.err


def test_a_bad_bucket_is_refused(ran: Repo) -> None:
    res = run_cli("goldens", "from-runs", "HEAD", "--bucket", " ", cwd=ran.path)
    assert res.code == 2
    assert "--bucket ' ': a bucket is a printable name" in res.err


def test_drift_failures_are_exported_the_same_way(repo: Repo) -> None:
    from tests.support.drift import SUITE, tagged_goldens, trivia
    from tests.support.gate import commit as gate_commit

    gate_commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE, "bench/trivia.jsonl": trivia(),
                              "evals/goldens.jsonl": tagged_goldens()})
    assert run_cli("run", "--no-note", cwd=repo.path).code == 1
    (path,) = (repo.path / "evals/results").glob("*.json")
    items = json.loads(path.read_text())["goldens"]["items"]
    failed = [it for it in items if it["kind"] != "bucket" and not it["passed"]]
    assert failed
    res = run_cli("goldens", "from-runs", str(path), "--failed", cwd=repo.path)
    assert res.code == 0, res.err
    got = rows(res.out)
    assert [r["id"] for r in got] == [f"drift-{it['slice']}-{it['id']}" for it in failed]
    assert [r["input"] for r in got] == [it["row"]["input"] for it in failed]
    assert got[0]["source"]["file"] == failed[0]["path"]
    assert got[0]["source"]["line"] == failed[0]["line"]


# -- stats: frequency x severity x value ------------------------------------------------

def test_stats_ranks_buckets_by_frequency_severity_and_value(repo: Repo) -> None:
    data = [{"id": f"a{i}", "bucket": "tone", "severity": 1, "value": 1} for i in range(5)]
    data += [{"id": f"b{i}", "bucket": "refund", "severity": 3, "value": 2} for i in range(2)]
    data += [{"id": "c0", "bucket": "format", "severity": 2}]  # value missing: counts as 1
    repo.commit({"evals/goldens.jsonl": "".join(json.dumps(r) + "\n" for r in data)})
    text = run_cli("goldens", "stats", cwd=repo.path)
    assert text.code == 0, text.err
    block = text.out.split("priority (frequency × severity × value):\n")[1].split("\n\n")[0]
    assert [line.split()[0] for line in block.splitlines()[1:4]] == ["refund", "tone", "format"]
    assert block.splitlines()[1].split() == ["refund", "2", "3", "2", "12"]
    assert "format" in block and "1 of 8 rows lack value" in text.out
    doc = json.loads(run_cli("goldens", "stats", "--format", "json", cwd=repo.path).out)
    assert [(p["bucket"], p["priority"]) for p in doc["priority"]] == [
        ("refund", 12.0), ("tone", 5.0), ("format", 2.0)]


def test_stats_without_severity_or_value_is_unchanged(repo: Repo) -> None:
    repo.commit({"evals/goldens.jsonl": GOLDEN})
    text = run_cli("goldens", "stats", cwd=repo.path)
    assert "priority" not in text.out
    doc = json.loads(run_cli("goldens", "stats", "--format", "json", cwd=repo.path).out)
    assert "priority" not in doc
