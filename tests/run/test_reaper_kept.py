"""A job slot that keeps its holder (``reaper._kept_holder``): when a run has no more
slots than CPUs, each slot's conversations run one after another beneath one holder
forked once, not a holder forked and exec'd per conversation. The holder's promises
stay: a subreaper per conversation (one conversation at a time beneath it), everything
the target left killed when its conversation ends, nothing left when the supervisor or
gitevals goes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitevals.run import reaper
from gitevals.run.targets import KEPT_HOLDERS, keeps_holders
from tests.conftest import Repo, run_cli
from tests.support.supervised import gone, kill_if_ours, start, start_leaving


@pytest.fixture
def slot() -> Iterator[reaper.Supervisor]:
    sup = reaper.Supervisor.start()
    assert sup is not None, "a supervisor starts on Linux"
    sup.keep = True
    try:
        yield sup
    finally:
        sup.close()


def _parent(pid: int) -> int:
    data = Path(f"/proc/{pid}/stat").read_text()
    return int(data[data.rindex(")") + 2:].split()[1])


def _conversation(sup: reaper.Supervisor, tmp_path: Path, name: str,
                  code: int) -> tuple[int, int, int | None]:
    """One conversation whose target leaves a process in a session of its own: (the
    target's holder, the leftover's pid, the exit code ``end`` reports)."""
    target, stdin, left, pidfile = start_leaving(sup, tmp_path, name, code)
    try:
        holder = _parent(target)
        assert left in reaper.descendants(holder)
        os.close(stdin)
        assert sup.status(10) == code
        return holder, left, sup.end()
    finally:
        kill_if_ours(left, pidfile)


def test_a_slot_runs_its_conversations_beneath_one_kept_holder(
        slot: reaper.Supervisor, tmp_path: Path) -> None:
    first, left_first, code_first = _conversation(slot, tmp_path, "a", 0)
    assert code_first == 0 and gone(left_first, grace=0)  # swept when its conversation ended
    second, left_second, code_second = _conversation(slot, tmp_path, "b", 3)
    assert code_second == 3 and gone(left_second, grace=0)
    assert first == second  # one holder, forked once for the slot
    assert _parent(first) == slot.channel.proc.pid  # the supervisor's child
    assert not reaper.descendants(first)  # nothing beneath it between conversations


def test_a_kept_holder_its_target_killed_is_replaced_and_its_leftover_swept_at_the_end(
        slot: reaper.Supervisor, tmp_path: Path) -> None:
    target, stdin, left, pidfile = start_leaving(slot, tmp_path, "a")
    try:
        holder = _parent(target)
        os.kill(holder, signal.SIGKILL)  # as a target that kills its parent
        os.close(stdin)
        assert slot.status(10) == 0  # read from /proc: the target is the supervisor's now
        assert slot.end() == 0  # which ended the dead holder in the slot's stead
        assert gone(holder, 5.0, 0.02)
        fresh, left_b, code = _conversation(slot, tmp_path, "b", 0)
        assert fresh != holder and code == 0 and gone(left_b, grace=0)
        slot.close()  # the run ends: what the dead holder left goes with the supervisor
        assert gone(left, 5.0, 0.02)
    finally:
        kill_if_ours(left, pidfile)


def test_a_kept_holder_its_target_stopped_is_ended_by_the_supervisor_after_the_limit(
        slot: reaper.Supervisor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaper, "ANSWER_LIMIT", 0.5)  # how long the slot waits for it
    monkeypatch.setattr(reaper, "SWEEP_LIMIT", 1.0)  # (beyond its sweep)
    target, stdin, left, pidfile = start_leaving(slot, tmp_path, "a")
    try:
        holder = _parent(target)
        os.kill(holder, signal.SIGSTOP)  # as a target that stops its parent
        os.close(stdin)
        started = time.monotonic()
        assert slot.end() is not None  # the group killed, the code read from /proc
        assert time.monotonic() - started < 0.5 + 1.0 + 5
        assert gone(left, 5.0, 0.02) and gone(holder, 5.0, 0.02)  # what was beneath it too
        fresh, left_b, code = _conversation(slot, tmp_path, "b", 0)
        assert fresh != holder and code == 0 and gone(left_b, grace=0)
    finally:
        kill_if_ours(left, pidfile)


def test_a_kept_holder_goes_with_its_supervisor_and_what_is_beneath_it(
        slot: reaper.Supervisor, tmp_path: Path) -> None:
    target, stdin, left, pidfile = start_leaving(slot, tmp_path, "a")
    try:
        holder = _parent(target)
        slot.close()  # no `end`: as if gitevals had been killed
        assert gone(left, 5.0, 0.02) and gone(target, 5.0, 0.02) and gone(holder, 5.0, 0.02)
    finally:
        os.close(stdin)
        kill_if_ours(left, pidfile)


def test_a_kept_holder_says_why_a_command_cannot_start_and_serves_on(
        slot: reaper.Supervisor, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        start(slot, tmp_path, ["no-such-harness-xyz"])
    (tmp_path / "not-executable").write_text("")
    with pytest.raises(PermissionError):
        start(slot, tmp_path, ["./not-executable"])
    pid, stdin = start(slot, tmp_path, ["cat"])  # found on PATH
    holder = _parent(pid)
    assert _parent(holder) == slot.channel.proc.pid  # still a kept holder, not ``cat``
    assert Path(f"/proc/{holder}/comm").read_text().strip() != "cat"
    os.close(stdin)
    assert slot.status(10) == 0 and slot.end() == 0


def test_a_supervisor_that_cannot_fork_a_kept_holder_says_so_and_serves_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    holders = reaper._Holders()

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert holders.serve({"op": "keep"}, []) == {"errno": 11,
                                                 "error": "Resource temporarily unavailable"}
    assert not holders.kept and not holders.handed


def test_a_slot_without_a_kept_holder_gives_each_conversation_a_holder_of_its_own(
        slot: reaper.Supervisor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slot.channel, "keep", lambda: None)  # as when the fork failed
    pid, stdin = start(slot, tmp_path, ["cat"])
    assert Path(f"/proc/{_parent(pid)}/comm").read_text().strip() == "cat"
    assert not slot.keep  # not asked again
    os.close(stdin)
    assert slot.status(10) == 0 and slot.end() == 0


def test_a_kept_holder_whose_sweep_left_a_process_retires(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A process in uninterruptible sleep outlives every SIGKILL for a while: it must not be
    # beneath the holder of the next conversation (the holder exits; it goes up).
    kept = reaper._Kept()
    monkeypatch.setattr(reaper, "sweep", lambda *a, **k: [])
    assert kept.turn({"op": "end"}, []) == {"ended": True, "code": None}
    assert not kept.stuck
    monkeypatch.setattr(reaper, "sweep", lambda *a, **k: [4242])
    assert kept.turn({"op": "end"}, []) == {"ended": True, "code": None}
    assert kept.stuck


def test_slots_keep_holders_only_when_there_are_no_more_of_them_than_cpus() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert keeps_holders(1)
    assert keeps_holders(min(cpus, KEPT_HOLDERS))
    assert not keeps_holders(cpus + 1)
    assert not keeps_holders(KEPT_HOLDERS + 1)


# --- through the CLI -------------------------------------------------------------------

LINEAGE = '''\
import json, os, sys

def stat(pid):
    data = open("/proc/%d/stat" % pid).read()
    return data[data.index("(") + 1:data.rindex(")")], int(data[data.rindex(")") + 2:].split()[1])

for line in sys.stdin:
    name, grandparent = stat(os.getppid())
    seen = {"holder": os.getppid(), "name": name, "supervisor": grandparent}
    print(json.dumps({"final_answer": json.dumps(seen)}), flush=True)
'''


def test_a_run_with_one_slot_keeps_one_holder_for_all_its_conversations(repo: Repo) -> None:
    case = ("defaults: {trials: 3, timeout: 30s}\nscenarios:\n"
            "  - id: s\n    user: hi\n    expect: [{no_error: true}]\n")
    repo.commit({"harness.py": LINEAGE, "evals/cases/a.yaml": case,
                 "pyproject.toml": f'[tool.gitevals.target]\ncommand = ["{sys.executable}",'
                                   ' "harness.py"]\n'})
    res = run_cli("run", "--jobs", "1", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    seen = [json.loads(r["transcript"]["final_answer"])
            for r in json.loads(res.out)["cases"][0]["scenarios"][0]["results"]]
    assert len(seen) == 3 and len({s["holder"] for s in seen}) == 1
    assert "cat" not in {s["name"] for s in seen}  # the supervisor's copy
    assert len({s["supervisor"] for s in seen}) == 1
    assert gone(seen[0]["holder"], 5.0, 0.02)  # gone with the run
