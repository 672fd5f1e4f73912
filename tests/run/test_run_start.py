"""What a run does while it starts (#27 item 4: the start).

A python target's warm worker boots while the plan is read: the run's supervisor starts
the worker (``pyworker.py --boot``) as soon as the settings say the target is a python
one, before the commit is materialized; the preflight then tells it where the tree is
and what to import. Python's cycle collector is off until the trials start. Each test
drives the real ``gitevals run`` on a real repository; the plan step is wrapped to look
at the run's state by then."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from gitevals import api
from gitevals.git.trees import Tree
from gitevals.run import reaper
from tests.conftest import GIT_ENV, Repo, run_cli

# What the conversation's process sees of where it runs (it is a fork of the worker, so
# its /proc cmdline is the worker's as started).
AGENT = """\
import os, sys

import helper


def respond(messages):
    with open("/proc/self/cmdline", "rb") as f:
        started = f.read().split(b"\\0")
    return {"final_answer": helper.WORD, "cwd": os.getcwd(), "path0": sys.path[0],
            "argv": sys.argv[1:], "booted": b"--boot" in started}
"""
SETTINGS = '[tool.gitevals.target]\npython = "agent:respond"\n'
CASE = "scenarios:\n  - id: s\n    user: hello\n    expect: [{final_answer_contains: ok}]\n"


def _argv(pid: int) -> list[bytes]:
    with suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")
    return []


def _booting() -> set[int]:
    """This process's descendants that are a python worker started ``--boot``."""
    return {pid for pid in reaper.descendants(os.getpid()) if b"--boot" in _argv(pid)}


def _ours() -> set[int]:
    """This process's descendants that are a run's supervisor or a python worker."""
    return {pid for pid in reaper.descendants(os.getpid())
            if _argv(pid)[1:3] == [b"-I", b"-S"] or any(b"pyworker" in a for a in _argv(pid))}


def _watch_the_plan(monkeypatch: pytest.MonkeyPatch, seen: list[set[int]],
                    then: BaseException | None = None, wait: float = 10) -> None:
    """Record the ``--boot`` workers alive when the run reads its plan (waiting up to
    ``wait`` s for one: it starts in the background); raise ``then`` there if given."""
    plans = api.run_plans

    def reading(tree: Tree, selection: api.RunSelection) -> api.RunPlans:
        deadline = time.monotonic() + wait
        while not (found := _booting()) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(found)
        if then is not None:
            raise then
        return plans(tree, selection)

    monkeypatch.setattr(api, "run_plans", reading)


def _reply(out: str) -> dict[str, object]:
    run = json.loads(out)
    turns = run["cases"][0]["scenarios"][0]["results"][0]["transcript"]["turns"]
    reply: dict[str, object] = turns[0]
    return reply


def test_the_worker_boots_while_the_plan_is_read_and_serves_from_the_tree(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit({"agent.py": AGENT, "helper.py": "WORD = 'ok from the tree'\n",
                 "pyproject.toml": SETTINGS, "evals/cases/c.yaml": CASE})
    seen: list[set[int]] = []
    _watch_the_plan(monkeypatch, seen)
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert len(seen) == 1 and len(seen[0]) == 1  # booted before the plan was read
    reply = _reply(res.out)
    assert reply["booted"] is True  # the conversation is a fork of that worker
    # ... which stands where a worker started in the materialized tree would
    assert reply["final_answer"] == "ok from the tree"
    cwd = str(reply["cwd"])
    assert cwd.endswith("/tree") and cwd != str(repo.path)
    assert reply["path0"] == cwd
    assert reply["argv"] == ["--zygote", "agent:respond"]
    assert not _ours()  # stopped with the run


def test_a_module_that_does_not_import_in_the_booted_worker_is_one_line(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit({"agent.py": "import not_installed_anywhere\n", "pyproject.toml": SETTINGS,
                 "evals/cases/c.yaml": CASE})
    seen: list[set[int]] = []
    _watch_the_plan(monkeypatch, seen)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 2
    assert len(seen) == 1 and len(seen[0]) == 1
    assert res.err.strip().splitlines() == [
        "gitevals: error: python target agent:respond does not load in the commit: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere' (in "
        f"{sys.executable}); install what it needs into that interpreter, or "
        "name another with [target] interpreter; or pass --no-preflight to run anyway"]
    # without the preflight, each trial is one target_start line
    res = run_cli("run", "--no-note", "--no-preflight", "--format", "json", cwd=repo.path)
    assert res.code == 1
    error = json.loads(res.out)["cases"][0]["scenarios"][0]["results"][0]["error"]
    assert error["kind"] == "target_start" and "\n" not in error["message"]
    assert "No module named 'not_installed_anywhere'" in error["message"]
    assert not _ours()


def test_a_relative_pythonpath_entry_is_still_the_commits_directory(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python resolves a relative PYTHONPATH entry against where it starts: a worker booted
    # before the tree exists would look elsewhere, so none is booted; the target finds lib/.
    repo.commit({"agent.py": AGENT, "lib/helper.py": "WORD = 'ok from lib'\n",
                 "pyproject.toml": SETTINGS, "evals/cases/c.yaml": CASE})
    seen: list[set[int]] = []
    _watch_the_plan(monkeypatch, seen, wait=1)
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path,
                  env={"PYTHONPATH": "lib"})
    assert res.code == 0, res.err
    assert seen == [set()]
    reply = _reply(res.out)
    assert reply["final_answer"] == "ok from lib" and reply["booted"] is False


def test_a_run_interrupted_while_its_worker_boots_leaves_no_process(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit_agent(repo)
    seen: list[set[int]] = []
    _watch_the_plan(monkeypatch, seen, then=KeyboardInterrupt())  # ^C while it boots
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 130 and res.err.strip() == "gitevals: interrupted"
    (booted,) = seen
    assert len(booted) == 1
    deadline = time.monotonic() + 10
    while _ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _ours()
    assert not (repo.path / "evals" / "results").exists()


@pytest.fixture
def collecting() -> Iterator[None]:
    """The collector on, as in a fresh process (an in-process ``report`` or ``log`` of an
    earlier test leaves it off); as it was afterwards."""
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was:
            gc.disable()


def _commit_agent(repo: Repo) -> None:
    """The python target, its helper module and one case, committed."""
    repo.commit({"agent.py": AGENT, "helper.py": "WORD = 'ok'\n", "pyproject.toml": SETTINGS,
                 "evals/cases/c.yaml": CASE})


def _gc_seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[bool, int]]:
    """What the collector was (on, objects frozen) when the run read its plan and when
    its trials began."""
    from contextlib import AbstractContextManager

    from gitevals.report import progress as progress_module
    from gitevals.report.progress import Update

    seen: dict[str, tuple[bool, int]] = {}
    plans, progress = api.run_plans, progress_module.progress

    def reading(tree: Tree, selection: api.RunSelection) -> api.RunPlans:
        seen["plan"] = (gc.isenabled(), gc.get_freeze_count())
        return plans(tree, selection)

    def trials(label: str, total: int, unit: str = "trials",
               groups: tuple[str, int] | None = None) -> AbstractContextManager[Update]:
        seen["trials"] = (gc.isenabled(), gc.get_freeze_count())
        return progress(label, total, unit, groups)

    monkeypatch.setattr(api, "run_plans", reading)
    monkeypatch.setattr(progress_module, "progress", trials)
    return seen


@pytest.mark.usefixtures("collecting")
def test_the_collector_pauses_while_the_run_starts_and_runs_for_its_trials(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit_agent(repo)
    seen = _gc_seen(monkeypatch)
    before = gc.get_freeze_count()  # (the test session froze what collection made)
    counted = 0
    count = gc.get_freeze_count

    def counting() -> int:  # it walks every frozen object: the run never asks
        nonlocal counted
        counted += 1
        return count()

    assert gc.isenabled()
    monkeypatch.setattr(gc, "get_freeze_count", counting)
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert counted == 2  # this test's own two looks, in _gc_seen
    assert seen["plan"] == (False, before)  # off while the start reads the plan
    assert seen["trials"] == (True, before)  # on for the trials; in-process, nothing frozen
    assert gc.isenabled() and count() == before


@pytest.mark.usefixtures("collecting")
def test_the_program_freezes_what_the_start_made_for_the_trials(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitevals import commands

    _commit_agent(repo)
    seen = _gc_seen(monkeypatch)
    monkeypatch.setattr(commands, "PROGRAM", True)  # as `cli.entry` sets it
    before = gc.get_freeze_count()
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert seen["plan"] == (False, before)
    enabled, frozen = seen["trials"]
    assert enabled and frozen > before  # what the start made is out of the trials' walks
    assert gc.isenabled()


@pytest.mark.usefixtures("collecting")
def test_a_caller_without_frozen_objects_gets_the_runs_back_to_collect(repo: Repo) -> None:
    _commit_agent(repo)
    gc.unfreeze()
    try:
        res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
        assert res.code == 0, res.err
        assert gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.freeze()  # as the test session had it


# A module whose import takes a minute; it says when it has begun.
SLOW_IMPORT = """\
import os, time

open(os.environ["IMPORT_BEGUN"], "w").close()
time.sleep(60)


def respond(messages):
    return {"final_answer": "ok"}
"""


def _gone(pids: set[int], grace: float = 5.0) -> bool:
    deadline = time.monotonic() + grace
    while any(os.path.exists(f"/proc/{pid}") for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_run_interrupted_while_its_target_imports_stops_at_once_leaving_nothing(
        repo: Repo, tmp_path: Path) -> None:
    # The supervisor waits for the import (up to 20 s) and also watches gitevals: once
    # gitevals lets go of it, the wait ends, and the worker with everything else.
    begun = tmp_path / "begun"
    repo.commit({"agent.py": SLOW_IMPORT, "pyproject.toml": SETTINGS,
                 "evals/cases/c.yaml": CASE})
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run", "--no-note"],
                            cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **GIT_ENV, "IMPORT_BEGUN": str(begun)})
    try:
        deadline = time.monotonic() + 60
        while not begun.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert begun.exists()
        beneath = set(reaper.descendants(proc.pid))
        assert any(b"pyworker" in a for pid in beneath for a in _argv(pid))
        asked = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip() == "gitevals: interrupted"
        assert time.monotonic() - asked < 10  # not the import's 20 s limit waited out
        assert _gone(beneath)
    finally:
        proc.kill()
        proc.communicate()


def test_an_import_over_the_preflights_limit_is_a_warning_and_the_run_goes_on(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitevals.run import preflight

    monkeypatch.setattr(preflight, "IMPORT_TIMEOUT", 1.0)
    # the import sleeps past the 1 s limit, counted from before it starts: always over
    agent = ("import time\ntime.sleep(1.3)\n\n\ndef respond(messages):\n"
             "    return {'final_answer': 'ok'}\n")
    repo.commit({"agent.py": agent, "pyproject.toml": SETTINGS, "evals/cases/c.yaml": CASE})
    res = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.err.strip().splitlines() == [
        "gitevals: warning: python target agent:respond took over 1 s to import; running "
        "anyway"]
    assert _reply(res.out)["final_answer"] == "ok"
    assert not _ours()
