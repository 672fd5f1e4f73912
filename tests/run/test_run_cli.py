"""``gitevals run`` end to end: real repos, the real CLI, a harness that misbehaves on request."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitevals.run.archive import digest
from gitevals.run.store import local_runs, parse_note, ranked, run_of_commit
from gitevals.run.summary import pack, summarize
from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support.runs import (
    AGENT_SETTINGS,
    HARNESS,
    SETTINGS,
    TONE,
    artifacts,
    only_artifact,
    scenario_case,
    scenarios,
    setup,
)

#: Most tests here are about what `run` records and prints, not about command targets:
#: they run the example harness as a python target (AGENT_SETTINGS, one Python a run
#: rather than one a conversation). The command harness stays where the test is about
#: it: a passing run's record of each turn, misbehaving targets, crashes, interrupts.

BAD = """\
defaults: {trials: 2, timeout: 20s}
scenarios:
  - id: crash
    user: hi
    expect: [{no_error: true}]
  - id: after-crash
    user: still there?
    expect: [{no_error: true}]
"""


def test_a_passing_run_records_everything_and_exits_0(repo: Repo) -> None:
    commit = setup(repo, {"tone": TONE})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    assert [line.split()[:4] for line in res.out.splitlines()[2:4]] == [
        ["tone", "ok-capital", "pass", "3/3"], ["tone", "ok-files", "pass", "2/2"]]
    art = only_artifact(repo)
    assert art["commit"] == commit and art["rev"] == "HEAD" and not art["interrupted"]
    assert art["options"] == {"cases": [], "trials": None, "jobs": art["options"]["jobs"]}
    files = scenarios(art)["tone/ok-files"]
    assert files["verdict"]["verdict"] == "pass" and len(files["results"]) == 2
    transcript = files["results"][0]["transcript"]
    assert [c["name"] for c in transcript["tool_calls"]] == ["shell__run"]  # turn 1 only
    assert len(transcript["turns"]) == 2 and transcript["turns"][0]["tokens"] == 7
    assert transcript["turns"][1]["echo"] == {"text": "Now count them.", "turn": 1,
                                              "case": "tone", "scenario": "ok-files",
                                              "trial": 0}


def test_misbehaving_targets_break_only_their_own_trials(repo: Repo) -> None:
    # Only the hang waits for its timeout; the others get room for a slow python start.
    cases = {sid: scenario_case(sid, timeout="1s" if sid == "hang" else "20s")
             for sid in ("crash", "hang", "garbage", "half", "silent")}
    cases["tone"] = TONE
    setup(repo, cases)
    started = time.monotonic()
    res = run_cli("run", "--jobs", "4", cwd=repo.path)
    assert time.monotonic() - started < 20
    assert res.code == 1
    by = scenarios(only_artifact(repo))
    expected = {"crash": "target_crash", "hang": "target_timeout", "garbage": "target_protocol",
                "half": "target_protocol", "silent": "target_crash"}
    for sid, kind in expected.items():
        v = by[f"{sid}/{sid}"]["verdict"]
        assert v["verdict"] == "broken" and v["errors"] == {kind: 2}, (sid, v)
        assert [r["error"]["kind"] for r in by[f"{sid}/{sid}"]["results"]] == [kind, kind]
    assert "boom: the harness fell over" in by["crash/crash"]["verdict"]["first_failure"]
    assert by["tone/ok-capital"]["verdict"]["verdict"] == "pass"
    assert by["tone/ok-files"]["verdict"]["verdict"] == "pass"


def test_a_crash_ends_the_conversation_for_the_scenarios_after_it(repo: Repo) -> None:
    setup(repo, {"bad": BAD})
    assert run_cli("run", cwd=repo.path).code == 1
    after = scenarios(only_artifact(repo))["bad/after-crash"]
    assert after["results"][0]["error"]["kind"] == "target_crash"
    assert "conversation ended in scenario 'crash'" in after["results"][0]["error"]["message"]


def test_flaky_fail_and_pass_are_told_apart(repo: Repo) -> None:
    flaky = scenario_case("flaky", trials=4).replace("capital of France", "weather")
    flaky = flaky.replace("final_answer_contains: Paris", "final_answer_contains: answer")
    fail = scenario_case("ok-wrong").replace("Paris", "Berlin")
    setup(repo, {"flaky": flaky, "fail": fail, "tone": TONE}, settings=AGENT_SETTINGS)
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 1
    by = scenarios(json.loads(res.out))
    assert by["flaky/flaky"]["verdict"]["verdict"] == "flaky"
    assert by["flaky/flaky"]["verdict"]["passes"] == 2
    assert by["fail/ok-wrong"]["verdict"]["verdict"] == "fail"
    assert by["tone/ok-capital"]["verdict"]["verdict"] == "pass"
    assert json.loads(res.out) == only_artifact(repo)


GRADERS = '''
import os, time
def good(t, case, run):
    print("printing is harmless")
    return {"pass": run["final_answer"] == "Paris", "score": 0.9, "why": case["id"]}
def raises(t, case, run):
    raise KeyError("rubric")
def yes(t, case, run):
    return "yes"
def string_pass(t, case, run):
    return {"pass": "true"}
def sleeps(t, case, run):
    time.sleep(20)
def exits(t, case, run):
    os._exit(1)
def judged(t, case, run):
    return t.llm("grade this")
'''

GRADED = """\
defaults: {trials: 1, timeout: 5s}
scenarios:
  - id: ok-graded
    user: What is the capital of France?
    expect:
      - grader: {name: q.good, pass_below: 0.5}
      - grader: {name: q.raises}
      - grader: {name: q.yes}
      - grader: {name: q.string_pass}
      - grader: {name: q.sleeps}
      - grader: {name: q.exits}
      - grader: {name: q.judged}
      - grader: {name: q.good}
"""


def test_each_grader_failure_is_recorded_as_its_own_error(repo: Repo) -> None:
    setup(repo, {"graded": GRADED}, {"q": GRADERS})
    # --no-preflight: the preflight would refuse q.judged without a judge (exit 2)
    res = run_cli("run", "--no-preflight", cwd=repo.path, env={"GITEVALS_GRADER_TIMEOUT": "1"})
    assert res.code == 1, res.err
    (result,) = scenarios(only_artifact(repo))["graded/ok-graded"]["results"]
    graders = {g["index"]: g for g in result["graders"]}
    assert graders[0]["raw"] == {"pass": True, "score": 0.9, "why": "ok-graded"}
    assert graders[1]["error"]["kind"] == "grader_error"
    assert "KeyError" in graders[1]["error"]["message"]
    assert graders[2]["raw"] == "yes" and graders[3]["raw"] == {"pass": "true"}
    assert graders[4]["error"]["kind"] == "grader_timeout"
    assert graders[5]["error"]["message"] == "grader q.exits: worker exited with code 1"
    assert graders[6]["error"]["kind"] == "judge_error"
    assert "no judge configured: set [tool.gitevals.judge]" in graders[6]["error"]["message"]
    assert graders[7]["raw"]["pass"] is True  # the restarted worker answers again
    kinds = [a["error"]["kind"] if a["error"] else a["passed"] for a in result["assertions"]]
    assert kinds == [True, "grader_error", "grader_malformed", "grader_malformed",
                     "grader_timeout", "grader_error", "judge_error", True]


def test_unknown_case_is_a_usage_error_listing_the_cases(repo: Repo) -> None:
    setup(repo, {"tone": TONE, "bad": BAD})
    res = run_cli("run", "nope", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        "gitevals: error: unknown case 'nope': available cases are bad, tone"]
    assert not (repo.path / "evals" / "results").exists()


def test_named_cases_only_and_trials_override(repo: Repo) -> None:
    setup(repo, {"tone": TONE, "bad": BAD}, settings=AGENT_SETTINGS)
    assert run_cli("run", "tone", "--trials", "1", "--no-note", cwd=repo.path).code == 0
    art = only_artifact(repo)
    assert [c["name"] for c in art["cases"]] == ["tone"]
    assert art["options"]["cases"] == ["tone"] and art["options"]["trials"] == 1
    assert all(len(s["results"]) == 1 for s in art["cases"][0]["scenarios"])


def test_a_case_that_does_not_lint_is_not_run_but_the_others_are(repo: Repo) -> None:
    broken = "scenarios:\n  - id: x\n    user: hi\n    agent: claude\n"
    setup(repo, {"tone": TONE, "broken": broken}, settings=AGENT_SETTINGS)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 1
    assert "evals/cases/broken.yaml:4:5:" in res.err
    assert "case 'broken' does not lint and was not run" in res.err
    art = only_artifact(repo)
    assert [c["name"] for c in art["cases"]] == ["tone"]


def test_no_target_configured_is_a_usage_error(repo: Repo) -> None:
    setup(repo, {"tone": TONE}, settings="[tool.gitevals]\nroot = 'evals'\n")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2 and "no target configured" in res.err


def test_a_python_target_runs_from_the_tree(repo: Repo) -> None:
    agent = ("def respond(messages):\n    text = messages[-1]['content']\n"
             "    return {'final_answer': 'Paris' if 'France' in text else text}\n")
    repo.write({"agent.py": agent})
    setup(repo, {"capital": scenario_case("ok")},
           settings='[tool.gitevals.target]\npython = "agent:respond"\n')
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert scenarios(json.loads(res.out))["capital/ok"]["verdict"]["passes"] == 2


def test_junit_output_loads_in_a_junit_parser(repo: Repo, tmp_path: Path) -> None:
    from junitparser import JUnitXml

    setup(repo, {"tone": TONE, "bad": BAD})
    res = run_cli("run", "--format", "junit", cwd=repo.path)
    assert res.code == 1
    (tmp_path / "junit.xml").write_text(res.out)
    suites = {s.name: s for s in JUnitXml.fromfile(str(tmp_path / "junit.xml"))}
    assert suites["tone"].tests == 2 and suites["tone"].failures == 0
    assert suites["bad"].tests == 2 and suites["bad"].errors + suites["bad"].failures == 2


def test_piped_output_has_no_progress_noise(repo: Repo) -> None:
    setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.err == ""
    json.loads(res.out)


def test_notes_hold_the_artifact_and_other_notes_refs_are_untouched(repo: Repo) -> None:
    commit = setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    repo.git("notes", "add", "-m", "a human note", commit)
    before = repo.git("rev-parse", "refs/notes/commits")
    assert run_cli("run", cwd=repo.path).code == 0
    note = json.loads(repo.git("notes", "--ref", "gitevals", "show", commit))
    artifact = only_artifact(repo)
    sha, size, _ = digest(artifact)  # the note holds the summary; the artifact its address
    assert note == pack(summarize(artifact, sha, size))  # trials packed in columns
    assert repo.git("for-each-ref", "--format=%(refname)", "refs/gitevals/runs/") == \
        f"refs/gitevals/runs/{sha}"
    assert repo.git("rev-parse", "refs/notes/commits") == before
    assert repo.git("notes", "show", commit) == "a human note"


def test_no_note_writes_no_note(repo: Repo) -> None:
    commit = setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    assert run_cli("run", "--no-note", cwd=repo.path).code == 0
    assert repo.git("notes", "--ref", "gitevals", "list", check=False) == ""
    found = run_of_commit(None, repo.path, "evals/results", commit)
    assert found is not None and found.run == only_artifact(repo)


def test_run_of_commit_reads_results_then_the_note(repo: Repo) -> None:
    from gitevals.git.repo import require_repo

    commit = setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    for _ in range(2):
        assert run_cli("run", "--trials", "1", cwd=repo.path).code == 0
    runs = [run for run, _ in local_runs(repo.path, "evals/results", commit)]
    assert len(runs) == 2
    git_repo = require_repo(repo.path)
    newest = run_of_commit(git_repo, repo.path, "evals/results", commit)
    assert newest is not None and newest.source == "results"
    assert newest.run["run_id"] == runs[-1]["run_id"]
    for p in (repo.path / "evals" / "results").glob("*.json"):
        p.unlink()
    from_note = run_of_commit(git_repo, repo.path, "evals/results", commit)
    assert from_note is not None and from_note.source == "note"
    assert from_note.run["run_id"] == runs[-1]["run_id"]
    assert run_of_commit(None, repo.path, "evals/results", commit) is None


def _spawn(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    import os

    return subprocess.Popen([sys.executable, "-m", "gitevals", *args], cwd=repo.path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **GIT_ENV, **(env or {})})


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_writes_a_complete_artifact_and_exits_130(
        repo: Repo, signum: int, tmp_path: Path) -> None:
    setup(repo, {"tone": TONE, "hang": scenario_case("hang", trials=4, timeout="60s")})
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _spawn(repo, "run", "--jobs", "2", env={"RUN_HARNESS_MARKS": str(marks)})
    # Work goes hang#0, tone#0, hang#1, ...: two hanging conversations mean tone#0 is done.
    deadline = time.monotonic() + 60
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == 130, err
    art = only_artifact(repo)  # validated against the result schema
    assert art["interrupted"] is True
    by = scenarios(art)
    assert by["tone/ok-capital"]["verdict"]["verdict"] == "pass"
    assert by["hang/hang"]["results"] == [] and by["hang/hang"]["verdict"]["verdict"] == "not_run"
    assert "interrupted" in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("at", ["_artifact", "_keep_run"])
def test_a_signal_after_the_trials_keeps_the_finished_run_and_exits_130(
        repo: Repo, monkeypatch: pytest.MonkeyPatch, signum: int, at: str) -> None:
    """^C or SIGTERM once every trial has finished, while the run is built or written
    (a second ^C, a CI job cancelled then): the run, paid for, is kept whole, with its
    note, and the command then stops as interrupted. The signal is sent to the process
    at that moment, the real handlers take it."""
    import os

    from gitevals import api

    commit = setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    real = getattr(api, at)

    def signalled(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, at, signalled)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 130, res.err
    assert res.err == "gitevals: interrupted\n"
    art = only_artifact(repo)
    assert art["commit"] == commit and art["interrupted"] is False
    assert [len(s["results"]) for s in scenarios(art).values()] == [3, 2]
    assert repo.git("notes", "--ref=refs/notes/gitevals", "list", commit)  # the note too


def test_two_runs_at_once_write_two_intact_artifacts(repo: Repo) -> None:
    setup(repo, {"tone": TONE})
    procs = [_spawn(repo, "run", "--jobs", "2") for _ in range(2)]
    codes = [p.wait(timeout=60) for p in procs]
    for p in procs:
        p.communicate()
    assert codes == [0, 0]
    arts = artifacts(repo)
    assert len(arts) == 2 and arts[0]["run_id"] != arts[1]["run_id"]
    assert not list((repo.path / "evals" / "results").glob(".*"))  # no temp files left


@pytest.mark.parametrize("args", [["--trials", "0"], ["--jobs", "x"], ["--format", "xml"]],
                         ids=["zero-trials", "jobs-not-a-number", "unknown-format"])
def test_bad_flags_are_usage_errors(repo: Repo, args: list[str]) -> None:
    setup(repo, {"tone": TONE})
    res = run_cli("run", *args, cwd=repo.path)
    assert res.code == 2
    assert res.err.count("\n") == 1 and res.err.startswith("gitevals run: error: argument ")
    assert res.err.endswith("; see `gitevals run --help`\n")


def test_a_terminal_gets_a_progress_bar_on_stderr_and_stdout_stays_clean(repo: Repo) -> None:
    import os
    import pty

    setup(repo, {"tone": TONE})
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run", "--format", "json"],
                            cwd=repo.path, stdout=subprocess.PIPE, stderr=follower,
                            env={**os.environ, **GIT_ENV, "TERM": "xterm", "COLUMNS": "100"})
    os.close(follower)
    chunks: list[bytes] = []

    def drain() -> None:  # read while it runs: a full pty would block the run
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO once the last writer is gone
                return
            if not chunk:
                return
            chunks.append(chunk)

    import threading

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=60)
    reader.join(timeout=10)
    os.close(leader)
    err = b"".join(chunks)
    assert proc.returncode == 0
    assert b"1 case" in err and b"5/5" in err and b"0 failed" in err
    assert json.loads(out)["format"] == "gitevals-run/1"


def test_run_ids_sort_by_time_and_are_unique_within_a_second() -> None:
    import re

    from gitevals.run.artifact import new_run_id

    ids = {new_run_id("0123456789abcdef" * 2, 1_800_000_000) for _ in range(200)}
    assert len(ids) == 200
    for run_id in ids:
        assert re.fullmatch(r"20270115T080000Z-0123456789ab-[0-9a-f]{6}", run_id)


def test_artifact_text_is_byte_stable_and_writes_are_atomic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from gitevals.files import write_atomic
    from gitevals.run.artifact import dumps
    from gitevals.run.store import save

    art = {"run_id": "r1", "root": "evals", "b": [1, {"z": 1, "a": "é"}], "a": None}
    assert dumps(art) == dumps(dict(reversed(list(art.items()))))
    assert dumps(art).endswith("}\n") and '"a": null' in dumps(art) and "é" in dumps(art)
    path = save(tmp_path, art)
    assert path == tmp_path / "evals" / "results" / "r1.json"
    assert json.loads(path.read_text()) == art

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        write_atomic(path, "half")
    assert json.loads(path.read_text()) == art  # the old file is intact
    assert [p.name for p in path.parent.iterdir()] == ["r1.json"]  # no temp file left


def test_a_commit_without_cases_is_a_usage_error(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "no cases in evals/cases/ of HEAD" in res.err and len(res.err.splitlines()) == 1


def test_piped_text_output_is_only_the_table(repo: Repo) -> None:
    setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0 and res.err == ""
    run_id = only_artifact(repo)["run_id"]
    assert res.out.splitlines()[0].startswith(f"run {run_id} of HEAD")


def test_markdown_output_for_a_pr_comment(repo: Repo) -> None:
    setup(repo, {"tone": TONE}, settings=AGENT_SETTINGS)
    res = run_cli("run", "--format", "markdown", cwd=repo.path)
    assert res.code == 0
    # the duration cell is measured: any "N ms" / "N.N s"
    assert re.search(r"^\| tone \| ok-capital \| ✅ pass \| 3/3 \| \d+(\.\d)? m?s \|  \|$",
                     res.out, re.MULTILINE), res.out


CONVERSATION = """\
defaults: {trials: 2, timeout: 5s}
scenarios:
  - id: first
    user: one
    expect: [{no_error: true}]
  - id: only-once
    user: [two, three]
    trials: 1
    expect: [{no_error: true}]
  - id: last
    user: four
    expect: [{no_error: true}]
"""


def test_trial_i_is_one_conversation_through_the_scenarios_in_order(repo: Repo) -> None:
    agent = ("def respond(messages):\n"
             "    said = [m['content'] for m in messages if m['role'] == 'user']\n"
             "    return {'final_answer': ' '.join(said)}\n")
    repo.write({"agent.py": agent})
    setup(repo, {"conv": CONVERSATION},
           settings='[tool.gitevals.target]\npython = "agent:respond"\n')
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    by = scenarios(json.loads(res.out))
    answers = {sid: [r["transcript"]["final_answer"] for r in by[f"conv/{sid}"]["results"]]
               for sid in ("first", "only-once", "last")}
    assert answers == {"first": ["one", "one"], "only-once": ["one two three"],
                       "last": ["one two three four", "one four"]}
    assert [t["final_answer"] for t in by["conv/only-once"]["results"][0]["transcript"]["turns"]] \
        == ["one two", "one two three"]


def test_conversations_run_in_parallel_up_to_jobs(repo: Repo) -> None:
    slow = "defaults: {trials: 4, timeout: 5s}\nscenarios:\n  - id: slow\n    user: hi\n" \
           "    expect: [{no_error: true}]\n"
    setup(repo, {"a": slow, "b": slow}, settings=AGENT_SETTINGS)
    res = run_cli("run", "--jobs", "4", "--format", "json", cwd=repo.path)
    assert res.code == 0
    art = json.loads(res.out)
    busy = sum(r["transcript"]["duration_ms"] for c in art["cases"]
               for s in c["scenarios"] for r in s["results"])
    assert busy >= 8 * 300
    assert art["duration_ms"] < 0.8 * busy  # 8 conversations of 0.3 s overlapped


def test_a_partial_run_never_hides_the_complete_run(repo: Repo) -> None:
    commit = setup(repo, {"one": scenario_case("first"), "two": scenario_case("second")},
                   settings=AGENT_SETTINGS)
    full = run_cli("run", "--jobs", "2", cwd=repo.path)
    assert full.code == 0, full.err
    partial = run_cli("run", "one", "--jobs", "2", cwd=repo.path)
    assert partial.code == 0, partial.err
    assert "`show` and `diff` still read the complete run of this commit" in partial.err
    assert len(artifacts(repo)) == 2
    # show, diff and the note all still answer with the run of every case
    chosen = run_of_commit(None, repo.path, "evals/results", commit)
    assert chosen is not None and chosen.run["options"]["cases"] == []
    note = parse_note(repo.git("notes", "--ref", "gitevals", "show", commit))  # JSONL: both
    assert [r["options"]["cases"] for r in note] == [[], ["one"]]  # in the order added
    assert [r["options"]["cases"] for r in ranked(note)] == [["one"], []]  # complete counts
    shown = run_cli("show", cwd=repo.path)
    assert "one" in shown.out and "two" in shown.out


def test_a_case_can_be_named_by_its_path(repo: Repo) -> None:
    setup(repo, {"one": scenario_case("first"), "two": scenario_case("second")},
          settings=AGENT_SETTINGS)
    res = run_cli("run", "evals/cases/one.yaml", "--no-note", cwd=repo.path)
    assert res.code == 0, res.err
    assert [c["name"] for c in only_artifact(repo)["cases"]] == ["one"]
    assert only_artifact(repo)["options"]["cases"] == ["one"]
