"""The grader worker: raw answers recorded, every failure an error of that call only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.grading import GraderPool, GraderWorker, split_name

GRADERS = '''
import os, sys, time

def ok(t, case, run):
    print("graders may print", run["final_answer"])
    sys.stdout.write("and write\\n")
    os.write(1, b"even to fd 1\\n")
    return {"pass": True, "score": 0.75, "why": "fine"}

def echo(t, case, run):
    return {"case": case, "run": run}

def says_yes(t, case, run):
    return "yes"

def string_pass(t, case, run):
    return {"pass": "true"}

def raises(t, case, run):
    helper()

def helper():
    raise ValueError("the rubric is empty")

def sleeps(t, case, run):
    time.sleep(30)

def exits(t, case, run):
    os._exit(4)

def not_json(t, case, run):
    return {1, 2}

def pair(t, case, run):
    return {"pair": (1, 2.0), 3: "three", "turns": case["user"]}

def lone_surrogate(t, case, run):
    return {"why": "\\ud800"}

def nan_score(t, case, run):
    return {"pass": True, "score": float("nan")}

def asks_judge(t, case, run):
    return t.llm("is it good?")

def pid(t, case, run):
    return os.getpid()

def meet(t, case, run):
    # waits (up to 10 s) until two calls are in at once, each in its own worker
    open(os.path.join(case["dir"], str(os.getpid())), "w").close()
    deadline = time.monotonic() + 10
    while len(os.listdir(case["dir"])) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.getpid()

NOT_A_FUNCTION = 3
'''

CASE = {"id": "s", "user": ["hi"], "expect": [{"grader": {"name": "q.ok"}}]}
RUN = {"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None,
       "turns": [{"final_answer": "Paris"}], "duration_ms": 5}


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[GraderWorker]:
    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "q.py").write_text(GRADERS)
    (graders / "broken.py").write_text("import nosuchthing_xyz\n\n\ndef fn(t, case, run):\n"
                                       "    return True\n")
    w = GraderWorker(str(tmp_path), "evals", None, timeout=1.0)
    yield w
    w.stop()


def _call(w: GraderWorker, name: str) -> dict[str, Any]:
    return w.call(name, CASE, RUN)


def test_a_grader_gets_case_and_run_and_its_answer_is_recorded_raw(worker: GraderWorker) -> None:
    got = _call(worker, "q.echo")
    assert got["error"] is None
    assert got["raw"] == {"case": CASE, "run": RUN}
    assert got["name"] == "q.echo" and isinstance(got["duration_ms"], int)


def test_printing_corrupts_nothing(worker: GraderWorker) -> None:
    assert _call(worker, "q.ok")["raw"] == {"pass": True, "score": 0.75, "why": "fine"}
    assert _call(worker, "q.ok")["error"] is None


ANSWERS = [
    ("q.says_yes", "yes", None, ""),
    ("q.string_pass", {"pass": "true"}, None, ""),
    ("q.raises", None, "grader_error",
     "raised ValueError: the rubric is empty (evals/graders/q.py:"),
    ("q.not_json", "{1, 2}", "grader_malformed", "not JSON"),
    ("q.pair", {"pair": [1, 2.0], "3": "three", "turns": ["hi"]}, None, ""),
    ("q.lone_surrogate", None, "grader_error", "worker exited"),
    ("q.nan_score", "{'pass': True, 'score': nan}", "grader_malformed", "not JSON"),
    ("q.asks_judge", None, "judge_error", "no judge configured: set [tool.gitevals.judge]"),
    ("q.nope", None, "grader_missing", "has no function 'nope'"),
    ("q.NOT_A_FUNCTION", None, "grader_missing", "has no function"),
    ("missing.fn", None, "grader_missing", "no grader file evals/graders/missing.py"),
    ("broken.fn", None, "grader_error", "ModuleNotFoundError"),
]


@pytest.mark.parametrize(("name", "raw", "kind", "says"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_each_answer_is_recorded_as_it_was(worker: GraderWorker, name: str, raw: Any,
                                           kind: str | None, says: str) -> None:
    got = _call(worker, name)
    assert got["raw"] == raw
    if kind is None:
        assert got["error"] is None
    else:
        assert got["error"]["kind"] == kind
        assert says in got["error"]["message"]


def test_the_worker_is_long_lived(worker: GraderWorker) -> None:
    pids = {_call(worker, "q.pid")["raw"] for _ in range(5)}
    assert len(pids) == 1


def test_a_grader_past_the_timeout_kills_the_worker_and_the_next_call_gets_a_fresh_one(
        worker: GraderWorker) -> None:
    before = _call(worker, "q.pid")["raw"]
    got = _call(worker, "q.sleeps")
    assert got["error"]["kind"] == "grader_timeout"
    assert "ran past 1 s" in got["error"]["message"]
    assert got["duration_ms"] < 3000
    after = _call(worker, "q.pid")
    assert after["error"] is None and after["raw"] != before


def test_os_exit_in_a_grader_is_an_error_and_the_worker_restarts(worker: GraderWorker) -> None:
    got = _call(worker, "q.exits")
    assert got["error"] == {"kind": "grader_error",
                            "message": "grader q.exits: worker exited with code 4"}
    assert _call(worker, "q.ok")["error"] is None


def test_a_pool_shares_idle_workers_and_starts_one_only_when_all_are_busy(
        tmp_path: Path) -> None:
    import threading

    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "q.py").write_text(GRADERS)

    def on_threads(pool: GraderPool, n: int, name: str, case: dict[str, Any],
                   together: bool) -> list[Any]:
        seen: list[Any] = []
        threads = [threading.Thread(target=lambda: seen.append(pool.call(name, case, RUN)))
                   for _ in range(n)]
        for t in threads:
            t.start()
            if not together:
                t.join()
        for t in threads:
            t.join()
        return [a["raw"] for a in seen]

    pool = GraderPool(str(tmp_path), "evals", None, at_once=2)
    try:
        # four job slots, one after another: the one warm worker serves them all
        serial = on_threads(pool, 4, "q.pid", CASE, together=False)
        assert len(serial) == 4 and len(set(serial)) == 1
        # two calls at once that cannot end apart: once the second has waited a
        # start's time, it starts a worker of its own
        meet = tmp_path / "meet"
        meet.mkdir()
        both = on_threads(pool, 2, "q.meet", {**CASE, "dir": str(meet)}, together=True)
        assert len(set(both)) == 2 and serial[0] in both
        assert len(list(meet.iterdir())) == 2
    finally:
        pool.close()
    # quick calls asking at once of a fresh pool, two starts allowed at a time: the
    # first worker, once started, serves them (each of two slots started one before);
    # of sixteen, a call may wait past a start's time on a loaded machine, and start one
    for slots, most in ((2, 1), (16, 3)):
        pool = GraderPool(str(tmp_path), "evals", None, at_once=2)
        try:
            burst = on_threads(pool, slots, "q.pid", CASE, together=True)
            assert len(burst) == slots and len(set(burst)) <= most, (slots, burst)
        finally:
            pool.close()


@pytest.mark.parametrize(("name", "parts"), [("quality.answers", ("quality", "answers")),
                                             ("a.b.c", ("a", "b.c"))], ids=["plain", "dots"])
def test_names_are_read_to_the_first_dot(name: str, parts: tuple[str, str]) -> None:
    assert split_name(name) == parts


def test_a_grader_file_is_read_once_and_a_new_worker_runs_the_bytes_resolved(
        worker: GraderWorker, tmp_path: Path) -> None:
    first = _call(worker, "q.pid")
    assert first["error"] is None
    (tmp_path / "evals" / "graders" / "q.py").write_text(
        "def pid(t, case, run):\n    return 'rewritten'\n")
    worker.stop()  # what a grader past its time gets: the next call starts a new worker
    again = _call(worker, "q.pid")
    assert again["error"] is None and again["raw"] != first["raw"]
    assert isinstance(again["raw"], int)  # the first bytes' pid(), not the file's new one


def test_a_name_the_file_does_not_define_is_answered_without_a_worker(
        worker: GraderWorker) -> None:
    for name in ("q.nope", "missing.fn", "q.NOT_A_FUNCTION"):
        assert _call(worker, name)["error"]["kind"] == "grader_missing"
    assert worker.proc is None


def test_the_worker_starts_without_typing_json_re_enum_or_ast() -> None:
    """What the worker's start imports (``grading._BOOT``'s module) is a part of every
    run that grades: ~79 ms of CPU with these, ~40 without."""
    import subprocess
    import sys

    import gitevals

    line = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import gitevals.run.graderworker; print(' '.join(sorted(sys.modules)))")
    parent = str(Path(gitevals.__file__).parents[1])
    out = subprocess.run([sys.executable, "-c", line, parent], capture_output=True,
                         text=True, check=True).stdout.split()
    assert "gitevals.run.graderworker" in out
    assert not {"typing", "json", "re", "enum", "ast", "signal", "gitevals.run.judge",
                "gitevals.graderfile", "importlib.util"} & set(out)
