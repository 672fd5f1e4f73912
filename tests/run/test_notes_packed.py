"""A note line keeps a summary's trials packed (issue 24, item 1: ``log --limit 200``
within 2 s): each scenario's outcomes, one character a trial, beside the trials' text.
``log`` counts from the outcomes; every other reader gets the trials back, checked
against them; summaries written before packing still read. Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.summary import MAX_CELLS, columns, rows
from tests.conftest import Repo, run_cli
from tests.support.notes import kept, note_of, noted


def _line(cwd: Path, sha: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(note_of(cwd, sha).split("\n")[0])
    return doc


def _set_note(repo: Repo, sha: str, runs: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                   + "\n" for r in runs)
    repo.git("notes", "--ref", "gitevals", "add", "-f", "-F", "-", sha, input=text)


def _steady(run: dict[str, Any]) -> dict[str, Any]:
    (s,) = [s for c in run["cases"] for s in c["scenarios"] if s["id"] == "steady"]
    return s


def _forged(run: dict[str, Any], suffix: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(run))
    out["run_id"] = out["run_id"][:-6] + suffix
    v = _steady(out)["verdict"]
    v.update(verdict="pass", passes=v["trials"], pass_hat_k=True, first_failure=None)
    return out


def _log_run_ids(cwd: Path) -> list[str | None]:
    r = run_cli("log", "--format", "json", cwd=cwd)
    assert r.code == 0, r.err
    return [c["run_id"] for c in json.loads(r.out)["commits"]]


def test_a_forged_verdict_or_outcome_is_refused_by_log_and_by_what_reads_trials(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    # the commit and its one run, made once a test run (noted): this test forges from it
    repo, sha, genuine_id = noted(tmp_path_factory, tmp_path)
    genuine = _line(repo.path, sha)
    steady = _steady(genuine)
    assert steady["results"] == [] and steady["packed"]["outcomes"] == "10"
    columns = json.loads(steady["packed"]["columns"])["o"]
    assert columns["passed"] == {"b": "10"} and columns["trial"] == {"r": 0}

    # the verdict says pass, the outcomes still say 10: log itself refuses it
    verdict_only = _forged(genuine, "f00001")
    _set_note(repo, sha, [genuine, verdict_only])
    assert _log_run_ids(repo.path) == [genuine_id]

    # verdict and outcomes agree, the packed trials do not: whatever reads trials refuses
    both = _forged(genuine, "f00002")
    _steady(both)["packed"]["outcomes"] = "11"
    _set_note(repo, sha, [genuine, both])
    why = {r["run_id"][-6:]: r["problem"] for r in kept(repo.path)}
    assert why["f00002"] == ("refused as evidence of this commit: geo/steady: its packed "
                             "trials are damaged or not what its outcomes say")
    d = run_cli("diff", "HEAD", "HEAD", "--format", "json", cwd=repo.path)
    assert json.loads(d.out)["b"]["run_id"] == genuine_id, d.err
    trial = run_cli("show", "--trial", "geo/steady/1", "--format", "json", cwd=repo.path)
    assert trial.code == 1 and json.loads(trial.out)["final_answer"] == "Lyon", trial.err


def test_a_summary_written_before_packing_reads_and_compact_packs_it(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, run_id = noted(tmp_path_factory, tmp_path)
    packed = note_of(repo.path, sha)
    old = _line(repo.path, sha)
    for case in old["cases"]:
        for s in case["scenarios"]:
            kept = s.pop("packed")
            s["results"] = rows(json.loads(kept["columns"]), len(kept["outcomes"]),
                                [MAX_CELLS])
    _set_note(repo, sha, [old])

    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert shown.code == 1 and json.loads(shown.out)["run_id"] == run_id, shown.err
    assert _log_run_ids(repo.path) == [run_id]
    d = run_cli("diff", "HEAD", "HEAD", "--format", "json", cwd=repo.path)
    assert json.loads(d.out)["b"]["run_id"] == run_id, d.err

    r = run_cli("notes", "compact", cwd=repo.path)
    assert r.code == 0 and r.out.startswith("compacted 1 run(s) in the notes of 1 commit(s)")
    assert note_of(repo.path, sha) == packed  # the line the run wrote, byte for byte
    again = run_cli("notes", "compact", cwd=repo.path)
    assert again.out == "refs/notes/gitevals holds summaries only: nothing to compact\n"


def test_columns_give_back_every_json_value_exactly_and_refuse_a_bomb() -> None:
    import pytest

    values: list[Any] = [
        {"n": 1, "flag": True, "x": 1.0, "l": [1, [2]], "s": "a", "z": None},
        {"n": 2, "flag": 1, "x": 1, "l": [], "s": "a", "z": None},
        {"n": 3, "flag": False, "x": 2.5, "l": [{"k": 1}, "t"], "s": "a", "z": None},
        {"other": "keys"}, [1, 2], "text", 7, None]
    for chunk in (values, values[:3], values[:1], [], [[], []], [{}, {}], [3, 4, 5], [True] * 3,
                  [0, True, 2], [1, 1.0], [5, -3, 10 ** 20],
                  [True, False, 0]):
        text = json.dumps(chunk, sort_keys=True)
        node = json.loads(json.dumps(columns(chunk)))  # as a note line keeps it
        back = rows(node, len(chunk), [MAX_CELLS])
        assert json.dumps(back, sort_keys=True) == text  # 1 stays 1, True stays True
    assert columns([1, 2, 3]) == {"r": 1} and columns(["a", "a"]) == {"c": "a"}
    assert columns([3, -1, 4]) == {"n": "3,-1,4"} and columns([True, False]) == {"b": "10"}
    with pytest.raises(ValueError):  # a constant repeated beyond the budget
        rows({"l": {"c": 10 ** 9}, "v": {"c": 0}}, 5, [MAX_CELLS])
    for bad in ({"a": [1]}, {"c": [1]}, {"q": 1}, {"l": {"a": [-1]}, "v": {"a": []}}, [],
                {"n": "1"}, {"n": "1,x"}, {"b": "12"}, {"b": "1"}):
        with pytest.raises(ValueError):
            rows(bad, 2, [MAX_CELLS])


def test_a_note_line_saved_to_a_file_reads_with_its_trials(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, _ = noted(tmp_path_factory, tmp_path)
    line = _line(repo.path, sha)
    saved = tmp_path / "summary.json"
    saved.write_text(json.dumps(line))
    shown = run_cli("show", str(saved), "--format", "json", cwd=repo.path)
    assert shown.code == 1, shown.err
    of_note = run_cli("show", "--format", "json", cwd=repo.path)
    scenarios = json.loads(shown.out)["scenarios"]
    assert scenarios == json.loads(of_note.out)["scenarios"]  # usage summed from its trials
    assert sum(s["usage"]["trials"] for s in scenarios) == 6  # every trial, not none
    _steady(line)["packed"]["outcomes"] = "11"
    saved.write_text(json.dumps(line))
    bad = run_cli("show", str(saved), cwd=repo.path)
    assert bad.code == 2 and bad.err == (
        f"gitevals: error: {saved}: not a gitevals run artifact: the packed trials of "
        "geo/steady are damaged or not what its outcomes say\n")


def test_a_hostile_line_in_a_note_is_refused_in_one_line_never_a_crash(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    repo, sha, genuine_id = noted(tmp_path_factory, tmp_path)
    genuine = _line(repo.path, sha)
    shapes: list[dict[str, Any]] = []
    for n, broken in enumerate(({"cases": 5}, {"cases": [{"scenarios": [7]}]},
                                {"packed": "x"}, {"packed": {"outcomes": 3}},
                                {"packed": {"outcomes": "10", "columns": {"o": {}}}})):
        line = _forged(genuine, f"b0000{n}")
        if "cases" in broken:
            line.update(broken)
        else:
            _steady(line).update(broken)
        shapes.append(line)
    _set_note(repo, sha, [genuine, *shapes])
    for argv in (["show", "--format", "json"], ["log", "--format", "json"],
                 ["diff", "HEAD", "HEAD", "--format", "json"], ["show", "--all"]):
        r = run_cli(*argv, cwd=repo.path)
        assert r.code in (0, 1) and "internal error" not in r.err, (argv, r.err)
        assert genuine_id in r.out
    assert run_cli("notes", "compact", cwd=repo.path).code == 0
