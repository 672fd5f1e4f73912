"""``gitevals observe``: recorded conversations of one release, from real files, through
the real CLI: commits proved line by line, missing counters flagged, limits applied."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.paths import EXPERIMENT_HARNESS

HARNESS = EXPERIMENT_HARNESS
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
GEO = ("defaults: {trials: 2}\nscenarios:\n  - id: capital\n"
       "    user: [What is the capital of France?, Sure?]\n"
       "    expect:\n      - final_answer_contains: Paris\n")


@pytest.fixture
def release(repo: Repo) -> tuple[Repo, str, str]:
    old = repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                       "evals/cases/geo.yaml": GEO})
    new = repo.commit({"notes.txt": "v2"})
    return repo, old, new


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _turn(commit: str, conv: str, **counters: Any) -> dict[str, Any]:
    return {"final_answer": "ok", "commit": commit, "conversation": conv, **counters}


def test_complete_evidence_without_limits_is_ready_for_review(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    log = _jsonl(tmp_path / "prod.jsonl", [
        _turn(new, "c1", retries=0, overflow_recoveries=0),
        _turn(new, "c1", retries=2, overflow_recoveries=1),
        _turn(new, "c2", retries=1, overflow_recoveries=0),
        {**_turn(new, "c2"), "error": "upstream timeout"},  # not completed: no counters needed
    ])
    r = run_cli("observe", "HEAD", "--from", log, "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert (doc["commit"], doc["conversations"], doc["turns"], doc["completed_turns"]) == (
        new, 2, 4, 3)
    assert doc["metrics"]["retries"] == {"turns": 3, "observed": 3, "missing": 0, "total": 3,
                                         "per_turn": 1.0, "limit": None, "status": "complete"}
    assert doc["status"] == "ready for human review"
    assert doc["sources"] == [{"path": log, "kind": "jsonl", "conversations": 2, "turns": 4,
                               "lines": 4}]


def test_missing_counters_are_missing_evidence_not_zero(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    log = _jsonl(tmp_path / "prod.jsonl", [
        _turn(new, "c1", retries=3, overflow_recoveries=0),
        _turn(new, "c1", overflow_recoveries=0),  # an older harness: no retries counter
    ])
    r = run_cli("observe", new, "--from", log, "--format", "json", cwd=repo.path)
    assert r.code == 1
    m = json.loads(r.out)["metrics"]["retries"]
    assert (m["observed"], m["missing"], m["per_turn"], m["status"]) == (
        1, 1, 3.0, "missing evidence")  # 3 per observed turn, not 1.5 with a zero
    assert json.loads(r.out)["status"] == "missing evidence"
    text = run_cli("observe", new, "--from", log, cwd=repo.path)
    assert "retries: 3 per turn, missing on 1 of 2 turns: missing evidence" in text.out


def test_limits_within_and_exceeded(release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    rows = [_turn(new, f"c{i}", retries=int(i == 0), overflow_recoveries=0) for i in range(20)]
    log = _jsonl(tmp_path / "prod.jsonl", rows)
    ok = run_cli("observe", new, "--from", log, "--max", "retries=0.05",
                 "--max", "overflow_recoveries=0", "--minimum-samples", "20",
                 "--format", "json", cwd=repo.path)
    assert ok.code == 0, ok.err
    doc = json.loads(ok.out)
    assert doc["metrics"]["retries"]["per_turn"] == 0.05
    assert doc["metrics"]["retries"]["status"] == "within"
    assert doc["status"] == "within limits"
    over = run_cli("observe", new, "--from", log, "--max", "retries=0.01", cwd=repo.path)
    assert over.code == 1
    assert "retries: 0.05 per turn (limit 0.01): needs review" in over.out
    assert over.out.splitlines()[-1] == "needs review"
    few = run_cli("observe", new, "--from", log, "--minimum-samples", "21", cwd=repo.path)
    assert few.code == 1 and few.out.splitlines()[-1] == "too few samples"


def test_a_transcript_line_from_another_commit_is_refused_with_its_line(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, old, new = release
    log = _jsonl(tmp_path / "prod.jsonl", [
        _turn(new, "c1", retries=0, overflow_recoveries=0),
        _turn(new, "c1", retries=0, overflow_recoveries=0),
        _turn(old, "c2", retries=0, overflow_recoveries=0),
    ])
    r = run_cli("observe", new, "--from", log, cwd=repo.path)
    assert r.code == 2
    assert r.err.startswith(f"gitevals: error: {log}:3:1: this reply ran as commit '{old}'")
    assert len(r.err.splitlines()) == 1 and r.out == ""


@pytest.mark.parametrize(("line", "message"), [
    ('{"final_answer": "ok"}', ':1:1: the line carries no "commit"'),
    ("not json", ":1:1: not a target reply: reply is not JSON"),
    ('{"commit": "COMMIT"}', ":1:1: not a target reply"),
    ('{"final_answer": null, "error": "boom", "commit": "COMMIT"}', ":1:1: conversation"),
], ids=["no-commit", "not-json", "not-a-reply", "no-completed-turn"])
def test_bad_transcripts_are_refused_with_their_line(
        release: tuple[Repo, str, str], tmp_path: Path, line: str, message: str) -> None:
    repo, _, new = release
    log = tmp_path / "prod.jsonl"
    log.write_text(line.replace("COMMIT", new) + "\n")
    r = run_cli("observe", new, "--from", str(log), cwd=repo.path)
    assert r.code == 2
    assert f"{log}{message}" in r.err and len(r.err.splitlines()) == 1


def test_run_artifacts_prove_their_commit(release: tuple[Repo, str, str]) -> None:
    repo, old, new = release
    assert run_cli("run", "--rev", old, "--no-note", cwd=repo.path).code == 0
    (artifact,) = (repo.path / "evals/results").glob("*.json")
    r = run_cli("observe", old, "--from", str(artifact), "--format", "json", cwd=repo.path)
    assert r.code == 1  # the harness reports no retries counter: missing evidence
    doc = json.loads(r.out)
    assert (doc["conversations"], doc["turns"], doc["completed_turns"]) == (2, 4, 4)
    assert doc["metrics"]["retries"]["missing"] == 4
    assert doc["sources"][0]["kind"] == "run"
    r = run_cli("observe", new, "--from", str(artifact), cwd=repo.path)
    assert r.code == 2
    line = next(i for i, t in enumerate(artifact.read_text().splitlines(), 1)
                if t.startswith(' "commit": '))
    assert f"{artifact}:{line}:2: this run is of commit {old[:12]}, not {new[:12]}" in r.err


def test_usage_errors(release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    log = _jsonl(tmp_path / "a.jsonl", [_turn(new, "c", retries=0, overflow_recoveries=0)])
    for args, message in [
        (["--from", log, "--max", "retries"], "expected COUNTER=LIMIT"),
        (["--from", log, "--max", "retries=-1"], "expected COUNTER=LIMIT"),
        (["--from", log, log], "named twice"),
        (["--from", str(tmp_path / "absent.jsonl")], "cannot read"),
        (["--from", str(tmp_path)], "not a regular file"),
    ]:
        r = run_cli("observe", new, *args, cwd=repo.path)
        assert r.code == 2 and message in r.err and len(r.err.splitlines()) == 1, args


def test_a_mistyped_counter_gets_a_did_you_mean(release: tuple[Repo, str, str],
                                                tmp_path: Path) -> None:
    repo, _, new = release
    log = _jsonl(tmp_path / "a.jsonl", [
        {**_turn(new, "c", retries=0), "usage": {"cache_misses": 2}}])
    for counter, near in [("retires", "retries"), ("cache_mises", "cache_misses"),
                          ("tool_failure", "tool_failures")]:
        r = run_cli("observe", new, "--from", log, "--max", f"{counter}=0.1", cwd=repo.path)
        assert (r.code, r.out) == (2, ""), counter
        assert r.err == (f"gitevals: error: --max {counter}: no turn reports a counter "
                         f"{counter!r}; did you mean {near!r}?\n")
    # a counter near nothing stays missing evidence, as does a known one no turn reports
    for counter in ("latency_budget", "compactions"):
        r = run_cli("observe", new, "--from", log, "--max", f"{counter}=1", cwd=repo.path)
        assert r.code == 1 and r.err == "", counter
        assert f"  {counter}: unknown (limit 1), missing on 1 of 1 turns: missing evidence" \
            in r.out


def test_more_than_500_conversations_are_refused(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    log = _jsonl(tmp_path / "a.jsonl", [_turn(new, f"c{i}") for i in range(501)])
    r = run_cli("observe", new, "--from", log, cwd=repo.path)
    assert r.code == 2 and "501 conversations named, over the limit of 500" in r.err


def test_a_conversation_over_10000_turns_is_refused_at_its_line(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, _, new = release
    line = json.dumps(_turn(new, "long", retries=0, overflow_recoveries=0)) + "\n"
    log = tmp_path / "long.jsonl"
    log.write_text(line * 10_001)
    r = run_cli("observe", new, "--from", str(log), cwd=repo.path)
    assert r.code == 2
    assert f"{log}:10001:1: conversation 'long' has more than 10,000 turns" in r.err


def test_a_conversation_in_two_files_is_counted_once(
        release: tuple[Repo, str, str], tmp_path: Path) -> None:
    """Issue 23 item 4: a log rotated into two files (and a copy of one) is still one
    conversation per id; a reply numbered by turn/sequence counts once; the report
    records the last turn and sequence seen per conversation."""
    repo, _, new = release
    first = _jsonl(tmp_path / "a.jsonl", [
        {**_turn(new, "c1", retries=0), "turn": 0, "sequence": 1},
        {**_turn(new, "c1", retries=1), "turn": 1, "sequence": 2},
        {**_turn(new, "c2", retries=0), "turn": 0}])
    second = _jsonl(tmp_path / "b.jsonl", [
        {**_turn(new, "c1", retries=1), "turn": 1, "sequence": 2},   # read again
        {**_turn(new, "c1", retries=3), "turn": 2, "sequence": 3}])
    r = run_cli("observe", "HEAD", "--from", first, "--from", second, "--max", "retries=5",
                "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert (doc["conversations"], doc["turns"]) == (2, 4)
    assert doc["metrics"]["retries"]["total"] == 4
    assert doc["last_seen"] == {"c1": {"turn": 2, "sequence": 3},
                                "c2": {"turn": 0, "sequence": None}}
