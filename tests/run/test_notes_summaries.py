"""Summaries in notes, full artifacts kept once and fetched on demand (issue 24, items
1 and 2): through the real CLI, local bare repos as remotes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gitevals.run.archive import digest, item_of, pack, trial_of, unpack
from tests.conftest import Repo, git, run_cli
from tests.support.notes import FILES, clone, note_of, note_run, remote_with_commit

RUNS = "refs/gitevals/runs/"


def _refs(cwd: Path) -> list[str]:
    return git(cwd, "for-each-ref", "--format=%(refname)", RUNS).split()


def _trial_text(cwd: Path, spec: str = "geo/steady") -> tuple[int, str, str]:
    r = run_cli("show", "--trial", spec, "--format", "json", cwd=cwd)
    return r.code, r.out, r.err


def test_a_fresh_clone_decides_on_summaries_and_fetches_a_trial_on_demand(
        repo: Repo, tmp_path: Path) -> None:
    bare, sha = remote_with_commit(repo, tmp_path)
    one = clone(tmp_path, bare, "one")
    run_id = note_run(one)
    code, full, _ = _trial_text(one)
    assert code == 1 and json.loads(full)["final_answer"] == "Lyon"
    note = note_of(one, sha)
    doc = json.loads(note)
    for case in doc["cases"]:
        for s in case["scenarios"]:
            s["verdict"]["first_failure"] = None  # a verdict's one line: kept, and only it
    assert "Lyon" not in json.dumps(doc)  # no transcript
    (scenario,) = [s for c in doc["cases"] for s in c["scenarios"] if s["id"] == "steady"]
    assert scenario["results"] == [] and scenario["packed"]["outcomes"] == "10"
    assert json.loads(scenario["packed"]["columns"])["o"]["transcript"]["o"]["turns"] == {
        "l": {"c": 1}, "v": {"o": {}}}  # each trial's one turn: an empty object
    assert json.loads(note)["stored"]["sha256"] in _refs(one)[0]
    assert run_cli("notes", "push", cwd=one).code == 0
    assert git(bare, "for-each-ref", "--format=%(refname)", RUNS) == _refs(one)[0]

    fresh = clone(tmp_path, bare, "fresh")
    assert run_cli("notes", "pull", cwd=fresh).code == 0
    assert _refs(fresh) == []  # only summaries came
    shown = run_cli("show", "--format", "json", cwd=fresh)
    assert json.loads(shown.out)["run_id"] == run_id and shown.code == 1
    log = run_cli("log", "--format", "json", cwd=fresh)
    assert log.code == 0 and run_id in log.out, log.err
    diff = run_cli("diff", "HEAD", "HEAD", "--format", "json", cwd=fresh)
    assert diff.code == 0 and json.loads(diff.out)["b"]["run_id"] == run_id, diff.err
    plan = run_cli("plan", "--format", "json", cwd=fresh)
    assert json.loads(plan.out)["run_id"] == run_id, plan.err

    code, fetched, err = _trial_text(fresh)
    assert (code, fetched) == (1, full)  # the same trial, read from the fetched artifact
    assert err.startswith(f"gitevals: fetching the transcripts of run {run_id} (")
    assert _refs(fresh) == _refs(one)
    assert _trial_text(fresh)[2] == ""  # kept: no second fetch
    r = run_cli("fetch-run", cwd=fresh)
    assert r.out == (f"run {run_id} of {sha[:12]}: its transcripts are already here "
                     f"(git refs {RUNS}*)\n"), r.err


def test_transcripts_that_cannot_be_had_are_one_line(repo: Repo, tmp_path: Path) -> None:
    bare, sha = remote_with_commit(repo, tmp_path)
    one = clone(tmp_path, bare, "one")
    run_id = note_run(one)
    git(one, "push", "-q", "origin", "refs/notes/gitevals")  # plain git: notes only
    fresh = clone(tmp_path, bare, "fresh")
    assert run_cli("notes", "pull", cwd=fresh).code == 0
    code, out, err = _trial_text(fresh)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"gitevals: error: the transcripts of run {run_id} are not here and cannot be "
        "fetched (origin: it does not have it): the note keeps its summary only; push them "
        "from the machine that ran it with `gitevals notes push`")
    fetch = run_cli("fetch-run", cwd=fresh)
    assert fetch.code == 2 and fetch.err.count("\n") == 1 and "cannot be fetched" in fetch.err
    summary = fresh / "summary.json"
    summary.write_text(note_of(fresh, sha))
    score = run_cli("score", str(summary), "--regrade", cwd=fresh)
    assert score.code == 2 and score.err == (
        f"gitevals: error: {summary}: score --regrade needs the transcripts, and the "
        f"transcripts of run {run_id} are not here and cannot be fetched (origin: it does "
        "not have it): the note keeps its summary only; push them from the machine that "
        "ran it with `gitevals notes push`\n")


def test_a_directory_store_keeps_the_artifacts(repo: Repo, tmp_path: Path) -> None:
    repo.commit(FILES, "evals")
    store = tmp_path / "cache"
    env = {"GITEVALS_RUN_STORE": str(store)}
    r = run_cli("run", cwd=repo.path, env=env)
    assert r.code in (0, 1), r.err
    for path in (repo.path / "evals" / "results").glob("*.json"):
        path.unlink()
    (kept,) = store.glob("*/*.gea")
    assert _refs(repo.path) == []
    trial = run_cli("show", "--trial", "geo/steady", cwd=repo.path, env=env)
    assert trial.code == 1 and "final answer: Lyon" in trial.out, trial.err
    kept.unlink()
    gone = run_cli("show", "--trial", "geo/steady", cwd=repo.path, env=env)
    assert gone.code == 2 and f"it is not in {store}" in gone.err


def _tool_run(n: int) -> dict[str, Any]:
    """A run of ``n`` trials, each calling a tool whose 1 KB result every trial gets."""
    from tests.support.artifacts import artifact, result

    page = "weather report: " + "sunny and mild " * 64
    results = []
    for i in range(n):
        reply = {"final_answer": f"answer {i}", "tool_calls": [
            {"name": "fetch", "arguments": {"city": "Paris"}, "result": page}],
            "hooks": [], "error": None, "usage": {"prompt_tokens": 10 + i}}
        t = {"final_answer": f"answer {i}", "tool_calls": reply["tool_calls"], "hooks": [],
             "error": None, "turns": [reply], "duration_ms": 5 + i}
        results.append(result(i, [{"final_answer_contains": "answer"}], t))
    from tests.support.artifacts import scenario

    doc = artifact({"tools": [scenario("s", [{"final_answer_contains": "answer"}], results)]})
    doc["goldens"] = {"graders": {}, "buckets": None, "budget": None, "files": {},
                      "items": [], "slices": []}
    return doc


def test_an_archive_round_trips_byte_for_byte_and_reads_one_trial_alone() -> None:
    run: Any = _tool_run(40)
    sha, size, data = pack(run)
    assert (sha, size) == digest(run)[:2]
    text = digest(run)[2]
    assert digest(unpack(data, "t"))[2] == text
    # the repeated 1 KB result is kept once, the derived transcript fields not at all
    assert len(data) < len(text) / 15
    one = trial_of(data, 0, 0, 33, "t")
    assert one == run["cases"][0]["scenarios"][0]["results"][33]
    assert trial_of(data, 0, 0, 40, "t") is None and item_of(data, 0, "t") is None


def test_a_run_holding_the_reference_key_is_kept_faithfully() -> None:
    run: Any = _tool_run(3)
    turn = run["cases"][0]["scenarios"][0]["results"][1]["transcript"]["turns"][0]
    turn["extra"] = {"\u0000": 0}  # what a table reference looks like: never confused
    _, _, data = pack(run)
    assert digest(unpack(data, "t"))[2] == digest(run)[2]


def _full_run_text(repo: Repo) -> str:
    r = run_cli("run", "--no-note", cwd=repo.path)
    assert r.code in (0, 1), r.err
    (path,) = (repo.path / "evals" / "results").glob("*.json")
    text = path.read_text()
    path.unlink()
    return text


def test_compact_rewrites_whole_runs_as_summaries_losing_nothing(repo: Repo) -> None:
    import subprocess

    from gitevals.run.store import note_line

    first = repo.commit(FILES, "evals")
    old_doc = _full_run_text(repo)  # one indented document, as the first notes were
    repo.git("notes", "--ref", "gitevals", "add", "-F", "-", first, input=old_doc)
    second = repo.commit({"README": "x"}, "docs")
    line = note_line(json.loads(_full_run_text(repo)))  # a JSONL line with every transcript
    repo.git("notes", "--ref", "gitevals", "add", "-F", "-", second,
             input=line + "not a run: kept as it is\n")
    before = {c: note_of(repo.path, c) for c in (first, second)}

    r = run_cli("notes", "compact", cwd=repo.path)
    assert r.out == ("compacted 2 run(s) in the notes of 2 commit(s): the notes hold their "
                     f"summaries, the runs are kept in git refs {RUNS}*\n"), r.err
    for commit, original in ((first, old_doc), (second, line)):
        summary = note_of(repo.path, commit).split("\n")[0]
        doc = json.loads(summary)
        sha = doc["stored"]["sha256"]
        packed = subprocess.run(["git", "cat-file", "blob", RUNS + sha], cwd=repo.path,
                                capture_output=True, check=True).stdout
        back = unpack(packed, "t")
        # byte for byte: the document, or the line, exactly as the note held it
        assert (digest(back)[2] if commit == first else note_line(back)) == original
    assert note_of(repo.path, second).split("\n")[1] == "not a run: kept as it is"
    assert before[first] != note_of(repo.path, first)

    tip = repo.git("rev-parse", "refs/notes/gitevals")
    again = run_cli("notes", "compact", cwd=repo.path)
    assert again.out == "refs/notes/gitevals holds summaries only: nothing to compact\n"
    assert repo.git("rev-parse", "refs/notes/gitevals") == tip  # idempotent
    trial = run_cli("show", "--trial", "geo/steady", cwd=repo.path)
    assert trial.code == 1 and "final answer: Lyon" in trial.out, trial.err
    assert run_cli("show", "HEAD~1", cwd=repo.path).code == 1
