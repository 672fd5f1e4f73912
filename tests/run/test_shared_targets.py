"""A command target that serves many conversations on one process
(``[target] conversations = "many"``), driven through the real ``gitevals run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema

from tests.conftest import Repo, run_cli
from tests.support.paths import SCHEMAS

# Keeps each conversation's turn count, answers in the id's conversation, logs its start
# and every ended conversation. "wait" is held until a "crash" arrives; "crash" (after a
# "wait" was read) exits with code 3.
HARNESS = """\
import json, os, sys

LOG = {log!r}
turns, held, crash = {{}}, [], False
with open(LOG, "a") as f:
    f.write("start %d\\n" % os.getpid())
for line in sys.stdin:
    msg = json.loads(line)
    with open(LOG, "a") as f:
        f.write(json.dumps(msg) + "\\n")
    cid = msg["conversation"]
    if msg.get("end"):
        turns.pop(cid, None)
        continue
    if msg["text"] == "wait":
        held.append(cid)
    if msg["text"] == "crash":
        crash = True
    if crash and held:
        sys.exit(3)
    if msg["text"] in ("wait", "crash"):
        continue
    turns[cid] = turns.get(cid, 0) + 1
    print(json.dumps({{"conversation": cid, "final_answer": "ok %d" % turns[cid],
                      "pid": os.getpid()}}), flush=True)
"""
SETTINGS = ('[tool.gitevals.target]\ncommand = ["{python}", "harness.py"]\n'
            'conversations = "many"\n')


def _commit(repo: Repo, tmp_path: Path, cases: dict[str, str]) -> Path:
    log = tmp_path / "target.log"
    files = {"harness.py": HARNESS.format(log=str(log)),
             "pyproject.toml": SETTINGS.format(python=sys.executable)}
    files.update({f"evals/cases/{name}.yaml": body for name, body in cases.items()})
    repo.commit(files)
    return log


def _results(out: str) -> dict[str, list[dict[str, Any]]]:
    run = json.loads(out)
    return {c["name"]: r for c in run["cases"] for s in c["scenarios"]
            for r in [s["results"]]}


def _log(log: Path) -> list[Any]:
    return [line.split()[1] if line.startswith("start ") else json.loads(line)
            for line in log.read_text().splitlines()]


def test_one_process_serves_every_conversation_and_each_keeps_its_own_state(
        repo: Repo, tmp_path: Path) -> None:
    case = ("scenarios:\n  - id: s\n    user: [one, two]\n    trials: 2\n"
            "    expect: [{final_answer_contains: ok 2}]\n")
    log = _commit(repo, tmp_path, {"a": case, "b": case, "c": case})
    res = run_cli("run", "--jobs", "3", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    results = _results(res.out)
    pids = {t["pid"] for rs in results.values() for r in rs
            for t in r["transcript"]["turns"]}
    assert len(pids) == 1  # one process for the six conversations
    for rs in results.values():
        assert [[t["final_answer"] for t in r["transcript"]["turns"]] for r in rs] == [
            ["ok 1", "ok 2"]] * 2  # each conversation counted its own turns
        assert all("conversation" not in t for r in rs for t in r["transcript"]["turns"])
    lines = _log(log)
    assert sum(isinstance(x, str) for x in lines) == 1
    ended = sorted(x["conversation"] for x in lines if isinstance(x, dict) and x.get("end"))
    assert ended == ["a#0", "a#1", "b#0", "b#1", "c#0", "c#1"]
    schema = jsonschema.Draft202012Validator(
        json.loads((SCHEMAS / "target-input.schema.json").read_text()))
    for x in lines:
        if isinstance(x, dict):
            schema.validate(x)  # turn lines and end lines alike


def test_a_crash_ends_every_conversation_in_flight_and_the_process_restarts(
        repo: Repo, tmp_path: Path) -> None:
    one = "scenarios:\n  - id: s\n    user: [{text}]\n    timeout: 30s\n"
    log = _commit(repo, tmp_path, {"a": one.format(text="wait"), "b": one.format(text="crash"),
                                   "c": one.format(text="hello")})
    res = run_cli("run", "--jobs", "2", "--format", "json", cwd=repo.path)
    assert res.code == 1
    results = _results(res.out)
    for name in ("a", "b"):  # both were in flight when the process exited
        (error,) = [r["error"] for r in results[name]]
        assert error == {"kind": "target_crash", "message": "the shared target ended: "
                         "exited before answering (exited with code 3)"}
    (c,) = results["c"]
    assert c["error"] is None and c["transcript"]["final_answer"] == "ok 1"
    starts = [x for x in _log(log) if isinstance(x, str)]
    assert len(starts) == 2 and c["transcript"]["turns"][0]["pid"] == int(starts[1])
