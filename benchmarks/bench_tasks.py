"""Sandbox overhead per task verifier call, side by side in one run.

Each row makes the same trivial verifier call -- ``sh -c 'echo 1 > $GITEVALS_LOGS/reward.txt'``
in a fresh logs directory -- and reads its reward back:

- **direct**: that argv with ``subprocess.run`` (the floor: one fork/exec of ``sh``);
- **no-sandbox**: gitevals' path with ``run --no-sandbox``, started when timed;
- **bwrap cold**: gitevals' path under bubblewrap, started when timed (its ``/tests``
  sealed in memory for the call, as a trial does once);
- **bwrap**: as a run makes it: the sandbox is started (``sandbox.prepare``) when the
  target gets its turn, which this benchmark stands in for with ``--turn-ms`` of
  sleep, untimed; the timer runs from the go-ahead to the reward read (from the
  sandbox's own ``/logs/verifier``, by descriptor) -- what a trial
  waits for after the target answered. The sandbox then winds down (``close``) while
  the trial's target shuts down; untimed here;
- **bwrap+close**: the same, timed until ``close`` has seen the sandbox gone: the whole
  cost of a call to the machine, once the sandbox is up.

Rounds are interleaved (one call of each row, then again) so load on a shared machine
falls on every row alike; each row reports its median and p90 per call and the ratio
of medians to **direct**. Target (issue 10): bwrap <= 1.5x direct for a trivial
verifier. Exit 1 when it is missed.

Usage: .venv/bin/python benchmarks/bench_tasks.py [--calls 200] [--turn-ms 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gitevals.tasks import sandbox, verifier
from gitevals.tasks.confine import Sealed, seal_tests

ARGV = ("sh", "-c", 'echo 1 > "$GITEVALS_LOGS/reward.txt"')


def _call(root: Path, n: int) -> tuple[sandbox.Call, sandbox.Mounts]:
    logs = root / f"logs-{n}"
    logs.mkdir()
    return sandbox.Call(ARGV, timeout=30), sandbox.Mounts(str(root / "ws"), str(root / "tests"),
                                                          str(logs))


def _direct(call: sandbox.Call, mounts: sandbox.Mounts) -> None:
    argv, env, cwd = sandbox.direct_call(call, mounts)
    subprocess.run(argv, env=env, cwd=cwd, check=True)


def _cold(bwrap: str | None) -> Callable[[sandbox.Call, sandbox.Mounts], None]:
    def one(call: sandbox.Call, mounts: sandbox.Mounts) -> None:
        with sandbox.prepare(call, mounts, bwrap) as pending:
            out = pending.run()
            assert out.exit_code == 0, out.tail
            if bwrap is not None:
                _pending_reward(pending)
    return one


def _warm(bwrap: str, turn: float, closed: bool, tests: Sealed | None = None
          ) -> Callable[[sandbox.Call, sandbox.Mounts], tuple[float, float]]:
    """Start the sandbox, let the stand-in target turn pass, time the call from go (to the
    reward read, or to ``close`` when ``closed``). ``tests``: sealed once, as a trial
    does (None: sealed per call)."""
    def one(call: sandbox.Call, mounts: sandbox.Mounts) -> tuple[float, float]:
        pending = sandbox.prepare(call, mounts, bwrap, tests)
        time.sleep(turn)
        started = time.perf_counter()
        with pending:
            out = pending.run()
            assert out.exit_code == 0, out.tail
            _pending_reward(pending)
            ended = time.perf_counter()
        return started, time.perf_counter() if closed else ended
    return one


def _pending_reward(pending: sandbox.Pending) -> None:
    """The reward from the call's own logs (the sandbox's, by descriptor), as a run reads it."""
    logs = pending.open_logs()
    try:
        rewards, why = verifier.read_reward(logs, "reward_text")
    finally:
        os.close(logs)
    assert rewards == {"reward": 1.0}, why


def _reward(mounts: sandbox.Mounts) -> None:
    rewards, why = verifier.read_reward(mounts.logs, "reward_text")
    assert rewards == {"reward": 1.0}, why


def _timed(fn: Callable[[sandbox.Call, sandbox.Mounts], None], host_logs: bool = True
           ) -> Callable[[sandbox.Call, sandbox.Mounts], tuple[float, float]]:
    def one(call: sandbox.Call, mounts: sandbox.Mounts) -> tuple[float, float]:
        started = time.perf_counter()
        fn(call, mounts)
        if host_logs:
            _reward(mounts)
        return started, time.perf_counter()
    return one


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per row (200)")
    parser.add_argument("--turn-ms", type=float, default=50,
                        help="the stand-in target turn before a prepared call (50 ms)")
    args = parser.parse_args()
    bwrap = sandbox.find_bwrap()
    if bwrap is None or sandbox.probe(bwrap) is not None:
        print("bench_tasks: no working bwrap here (install bubblewrap)", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as tmp:
        root = Path(tmp)
        root.chmod(0o711)  # as root the sandbox runs as nobody, who must reach the workspace
        (root / "ws").mkdir()
        (root / "tests").mkdir()
        (root / "tests" / "test.sh").write_text(ARGV[2] + "\n")
        tests = seal_tests(str(root / "tests"), sandbox.TESTS_BYTES, sandbox.TESTS_FILES)
        rows: dict[str, Callable[[sandbox.Call, sandbox.Mounts], tuple[float, float]]] = {
            "direct": _timed(_direct), "no-sandbox": _timed(_cold(None)),
            "bwrap cold": _timed(_cold(bwrap), host_logs=False),
            "bwrap": _warm(bwrap, args.turn_ms / 1000, False, tests),
            "bwrap+close": _warm(bwrap, args.turn_ms / 1000, True, tests)}
        times = {name: [] for name in rows}
        n = 0
        for _ in range(args.calls):
            for name, fn in rows.items():
                n += 1
                call, mounts = _call(root, n)
                started, ended = fn(call, mounts)
                times[name].append(ended - started)
        tests.close()
    floor = statistics.median(times["direct"])
    print(f"{'row':<12} {'median ms':>10} {'p90 ms':>8} {'x direct':>9}"
          f"   ({args.calls} calls each)")
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = statistics.quantiles(ts, n=10)[-1]
        print(f"{name:<12} {med * 1000:>10.2f} {p90 * 1000:>8.2f} {med / floor:>9.2f}")
    ratio = statistics.median(times["bwrap"]) / floor
    cold = statistics.median(times["bwrap cold"]) / floor
    full = statistics.median(times["bwrap+close"]) / floor
    print(f"bwrap / direct = {ratio:.2f} (target <= 1.5); to the sandbox gone: {full:.2f};"
          f" started when timed: {cold:.2f}")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
