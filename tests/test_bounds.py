"""Issue 25, items 12, 13 and 15: counts bounded, runs that stop cleanly, input that gets
one line instead of a crash. Each test drives the real CLI on a real repository."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest

from tests.conftest import GIT_ENV, Repo, run_cli

HARNESS = (Path(__file__).parent / "data" / "run_harness.py").read_text()
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
CASE = ("defaults: {trials: 2, timeout: 20s}\nscenarios:\n"
        "  - id: ok\n    user: What is the capital of France?\n"
        "    expect: [{final_answer_contains: Paris}]\n")


def _setup(repo: Repo, case: str = CASE) -> str:
    return repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                        "evals/cases/tone.yaml": case})


def _results(repo: Repo) -> list[Path]:
    return sorted((repo.path / "evals" / "results").glob("*.json"))


def _one_line(err: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err


# -- item 13: a tree nested past the recursion limit -----------------------------------


def _deep_branch(repo: Repo, depth: int) -> None:
    """Branch ``deep``: HEAD's tree plus ``deep/d/d/.../f``, ``depth`` directories deep
    (made with pygit2: no work tree could be checked out that deep)."""
    raw = pygit2.Repository(str(repo.path))
    tree = raw.TreeBuilder()
    tree.insert("f", raw.create_blob(b"x"), pygit2.enums.FileMode.BLOB)
    oid = tree.write()
    for _ in range(depth):
        level = raw.TreeBuilder()
        level.insert("d", oid, pygit2.enums.FileMode.TREE)
        oid = level.write()
    head = raw.head.peel(pygit2.Commit)
    top = raw.TreeBuilder(head.tree)
    top.insert("deep", oid, pygit2.enums.FileMode.TREE)
    sig = pygit2.Signature("t", "t@example.invalid")
    commit = raw.create_commit(None, sig, sig, "deep", top.write(), [head.id])
    raw.references.create("refs/heads/deep", commit)


def test_a_tree_1500_levels_deep_is_refused_in_one_line_not_a_recursion_error(
        repo: Repo) -> None:
    _setup(repo)
    _deep_branch(repo, 1500)
    r = run_cli("run", "--rev", "deep", cwd=repo.path)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "levels deep, past the 200 a run writes out" in r.err
    assert "RecursionError" not in r.err and "internal error" not in r.err
    assert len(r.err) < 600  # the path is cut, not printed 3,000 characters long
    lint = run_cli("lint", "--rev", "deep", cwd=repo.path)  # lint walks the same tree
    assert lint.code == 0, lint.err


def test_a_tree_within_the_depth_bound_still_runs(repo: Repo) -> None:
    _setup(repo)
    _deep_branch(repo, 150)
    r = run_cli("run", "--rev", "deep", "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    assert json.loads(r.out)["interrupted"] is False


# -- item 13: a --target-env value that is not UTF-8 -------------------------------------


@pytest.mark.parametrize("flag", [["run", "--target-env", "MODEL=base-\udcff"],
                                  ["experiment", "--lane", "a=HEAD,env:MODEL=x\udcff",
                                   "--lane", "b=HEAD"]],
                         ids=["run", "experiment-lane"])
def test_a_non_utf8_env_value_is_refused_before_anything_runs(
        repo: Repo, flag: list[str]) -> None:
    _setup(repo)
    r = run_cli(*flag, cwd=repo.path)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "MODEL: the value is not valid UTF-8" in r.err
    assert not (repo.path / "evals" / "results").exists()  # refused before any trial


def test_a_run_with_text_utf8_cannot_write_is_kept_with_escapes() -> None:
    from gitevals.run.artifact import dumps
    from gitevals.run.keep import writable

    run: Any = {"run_id": "r", "note": "a\udcffb"}
    said: list[str] = []
    text = writable(dumps(run), run, said.append)
    text.encode("utf-8")  # writable now
    assert json.loads(text) == run  # and the same run, read back
    assert said == ["gitevals: warning: the run holds text that is not valid UTF-8; it is "
                    "kept with JSON escapes (\\u...)"]


# -- item 15: lane names, FIFOs ----------------------------------------------------------


@pytest.mark.parametrize("name", ["a\n", "a\nb", "a/b", "../x"],
                         ids=["trailing-newline", "inner-newline", "slash", "dotdot"])
def test_a_lane_name_outside_the_safe_charset_is_one_line(repo: Repo, name: str) -> None:
    _setup(repo)
    r = run_cli("experiment", "--lane", f"{name}=HEAD", "--lane", "b=HEAD,env:M=1",
                cwd=repo.path)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "must be 1-64 letters, digits" in r.err
    assert not (repo.path / "evals" / "results").exists()  # no `a\n.json` anywhere


def test_a_fifo_given_to_show_is_not_a_regular_file_not_an_unknown_revision(
        repo: Repo) -> None:
    _setup(repo)
    os.mkfifo(repo.path / "pipe")
    r = run_cli("show", "pipe", cwd=repo.path, timeout=30)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "pipe: cannot read: not a regular file" in r.err
    assert "unknown revision" not in r.err


# -- item 12: every count bounded; SIGTERM stops a run as ^C does -------------------------

BIG = "1000000000"


@pytest.mark.parametrize("args", [
    ["run", "--trials", "10001"],
    ["run", "--jobs", "257"],
    ["run", "--against", "HEAD", "--max-trials", BIG],
    ["run", "--against", "HEAD", "--looks", "101"],
    ["experiment", "--lane", "a=HEAD", "--repeat", BIG],
    ["experiment", "--lane", "a=HEAD", "--jobs", "257"],
    ["experiment", "--lane", "a=HEAD", "--max-samples", BIG],
    ["calibrate", "q.g", "--labels", "x.jsonl", "--jobs", "257"],
    ["lint", "--jobs", "257"],
    ["score", "x.json", "--jobs", "257"],
    ["diff", "HEAD", "--limit", BIG],
    ["log", "--limit", BIG],
    ["report", "--limit", BIG],
    ["report", "--static-transcripts", "9" * 5000],
], ids=["run-trials", "run-jobs", "run-max-trials", "run-looks", "experiment-repeat",
        "experiment-jobs", "experiment-max-samples", "calibrate-jobs", "lint-jobs",
        "score-jobs", "diff-limit", "log-limit", "report-limit", "report-static"])
def test_a_count_past_its_bound_is_one_line_and_exit_2(repo: Repo, args: list[str]) -> None:
    _setup(repo)
    started = time.monotonic()
    r = run_cli(*args, cwd=repo.path, timeout=60)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "is past the bound of" in r.err and f"see `gitevals {args[0]} --help`" in r.err
    assert time.monotonic() - started < 30
    assert not (repo.path / "evals" / "results").exists()


def test_a_negative_diff_limit_is_one_line(repo: Repo) -> None:
    _setup(repo)
    r = run_cli("diff", "HEAD", "--limit", "-1", cwd=repo.path)
    assert r.code == 2, r.err
    _one_line(r.err)
    assert "must be 0 or more" in r.err


#: Appends a line to $MARKS for every answer: the test counts the conversations done. A
#: python target (imported once per run, forked per conversation): the test is about
#: SIGTERM during the look, not about command targets, and a command harness started a
#: Python for each of the 100 conversations of the first round.
COUNTING = """\
import os


def respond(messages):
    with open(os.environ["MARKS"], "a") as f:
        f.write("x\\n")
    return {"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None}
"""
COUNTING_SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'


def test_sigterm_during_a_sequential_look_keeps_the_trials_and_exits_130(
        repo: Repo, tmp_path: Path) -> None:
    """The first look of ``--max-trials 500`` computes the design's exact bounds, minutes
    on a busy machine, in the main thread: SIGTERM stops it at once, as ^C would, and
    the first round's 100 trials are in the artifact, marked interrupted."""
    base = repo.commit({"harness.py": COUNTING, "pyproject.toml": COUNTING_SETTINGS,
                        "evals/cases/tone.yaml": CASE})
    marks = tmp_path / "marks"
    env = {**os.environ, **GIT_ENV, "MARKS": str(marks)}
    first = run_cli("run", "--no-note", cwd=repo.path, env={"MARKS": str(marks)})
    assert first.code == 0, first.err
    marks.unlink()
    repo.commit({"README": "b"})  # B: the same harness, one commit later
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitevals", "run", "--against", base, "--max-trials", "500",
         "--jobs", "8", "--no-note"], cwd=repo.path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and (
            not marks.exists() or marks.read_text().count("\n") < 100):
        time.sleep(0.1)
    time.sleep(1.0)  # the round is over: the look has begun
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert time.monotonic() - signalled < 20, err
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    (path,) = [p for p in _results(repo) if json.loads(p.read_text())["commit"] != base]
    run = json.loads(path.read_text())
    assert run["interrupted"] is True
    (scenario,) = run["cases"][0]["scenarios"]
    assert len(scenario["results"]) == 100  # the first round (ceil(500 / 5)), all kept
    assert scenario["sequential"]["stopped"] == "interrupted"


def test_a_judge_timeout_past_an_hour_is_a_lint_error_not_an_overflow(repo: Repo) -> None:
    judge = ('\n[tool.gitevals.judge]\nbase_url = "http://127.0.0.1:9/v1"\n'
             'model = "m-2026-01-01"\ntimeout = 1e300\n')
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS + judge,
                 "evals/cases/tone.yaml": CASE})
    r = run_cli("lint", cwd=repo.path)
    assert r.code == 1, r.err
    assert "GE701 bad setting judge.timeout: judge.timeout is 1e+300, must be at most 3600" \
        in r.out


def test_sigterm_outside_the_trials_is_an_interrupt_too(repo: Repo) -> None:
    """SIGTERM while ``run`` waits on the judge's preflight (a server that accepts and
    never answers): ``gitevals: interrupted`` and exit 130, as on ^C, not a silent death
    by the signal."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    judge = (f'\n[tool.gitevals.judge]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
             'model = "m-2026-01-01"\n')
    grader = "def judged(t, case, run):\n    return t.llm('ok?') == 'yes'\n"
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS + judge,
                 "evals/graders/q.py": grader, "evals/cases/tone.yaml": CASE.replace(
                     "[{final_answer_contains: Paris}]", "[{grader: {name: q.judged}}]")})
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run"], cwd=repo.path,
                            env={**os.environ, **GIT_ENV}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        server.settimeout(60)
        conn, _ = server.accept()  # the preflight is waiting for an answer
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
        conn.close()
    finally:
        server.close()
        proc.kill()
    assert proc.returncode == 130, err
    assert err.endswith("gitevals: interrupted\n") and "Traceback" not in err
