"""The CPU of one start of a run's supervisor (issue 22: every ``gitevals run`` starts one,
the test suite about 1,400), beside a bare ``python -I -S -c pass``.

Each sample is a fresh process that imports ``gitevals.run.reaper`` from a checkout, then
starts a supervisor (``Channel.start``: the interpreter, its imports, its first answer)
and closes it (its sweep and exit); the sample is the CPU (user + system) of that
supervisor process alone (``RUSAGE_CHILDREN`` around it), so the measuring process's own
imports are left out. ``--against DIR`` measures another checkout's supervisor too (the
code before a change: ``git worktree add /tmp/old main``), the samples of each side
interleaved so that a loaded machine weighs on both alike.

Usage: .venv/bin/python benchmarks/bench_supervisor.py [--starts 30] [--against DIR]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: Run in a fresh process with the checkout's directory in argv[1]: one start's CPU in ms.
ONE = """\
import resource, sys
sys.path.insert(0, sys.argv[1])
from gitevals.run.reaper import Channel

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

before = cpu()
channel = Channel.start()
assert channel is not None, "no supervisor here"
channel.close()
print((cpu() - before) * 1000)
"""
BARE = """\
import resource, subprocess, sys
subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print((r.ru_utime + r.ru_stime) * 1000)
"""


def _sample(code: str, *args: str) -> float:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--against", type=Path, help="another checkout to measure beside")
    args = parser.parse_args()
    sides = {"python -I -S -c pass": (BARE,), f"supervisor ({HERE.name})": (ONE, str(HERE))}
    if args.against:
        sides[f"supervisor ({args.against})"] = (ONE, str(args.against.resolve()))
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.starts):
        for name, call in sides.items():
            samples[name].append(_sample(*call))
    bare = statistics.median(samples["python -I -S -c pass"])
    print(f"CPU per start, median of {args.starts} (ms), and its ratio to a bare start:")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"  {name:50s} {median:6.1f}  {median / bare:5.2f}x")


if __name__ == "__main__":
    main()
