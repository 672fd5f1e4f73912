"""Leak-check benchmark of issue 12, measured side by side in one run.

    python benchmarks/bench_leak.py [--rows 1000000] [--big 4000000] [--goldens 100000]
                                    [--repeat 3] [--dir DIR]

Writes, in a temp dir (or ``--dir``), ``evals/goldens.jsonl`` with ``--goldens`` rows
and two training files of ``--rows`` and ``--big`` rows (one in 10,000 a leak: half by
id, half by an input that differs from the golden's only in case, spacing and
punctuation). Then times fresh processes, best of ``--repeat``:

- the floor: a plain Python loop that reads the training file and ``json.loads`` each
  line (nothing else);
- ``gitevals goldens leak-check TRAIN --format json`` on the same file.

Prints wall and CPU (user + system) seconds, the ratio (target: leak-check <= 2x the
loop at 1 M rows), and the peak RSS of each process at both sizes (target: leak-check's
does not grow with the training file). Exits 1 when a target is missed. The ratios use
CPU time: on a machine shared with other work (2 cores, many processes) wall time
measures the neighbours; both are printed. The two commands alternate, best of each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOP = """\
import json, sys
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
"""
LEAK_EVERY = 10_000


def write_goldens(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buckets = ("format", "tone", "tools", "refusal", "facts")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"g-{i}", "input": f"Golden question {i}: what is {i}?",
                                "expected": f"answer {i}", "bucket": buckets[i % 5],
                                "split": "holdout" if i % 10 == 0 else "test"}) + "\n")


def write_training(path: Path, n: int, goldens: int) -> int:
    """``n`` rows, a leak every ``LEAK_EVERY``; returns the number of leaks written."""
    leaks = 0
    with open(path, "w") as f:
        for i in range(n):
            g = (i * 7919) % goldens
            if i % LEAK_EVERY == 0:
                leaks += 1
                row = ({"id": f"g-{g}", "input": "anything", "output": "x"} if i % 20_000 == 0
                       else {"id": f"t-{i}", "input": f"  GOLDEN question {g} -- what is {g}",
                             "output": "x"})
            else:
                row = {"id": f"t-{i}", "input": f"Training prompt {i} about topic {g}?",
                       "output": f"A reply of moderate length for row {i}."}
            f.write(json.dumps(row) + "\n")
    return leaks


def measure(argv: list[str], cwd: Path, ok: tuple[int, ...]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (KiB) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    if proc.stderr:
        proc.stderr.close()
    return elapsed, usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss)


def alternate(n: int, commands: list[tuple[list[str], tuple[int, ...]]], cwd: Path
              ) -> list[tuple[float, float, int]]:
    """Each command ``n`` times, taking turns: best wall, best CPU, highest peak RSS."""
    runs: list[list[tuple[float, float, int]]] = [[] for _ in commands]
    for _ in range(n):
        for k, (argv, ok) in enumerate(commands):
            runs[k].append(measure(argv, cwd, ok))
    return [(min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs))
            for rs in runs]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--big", type=int, default=4_000_000)
    p.add_argument("--goldens", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", type=Path, help="write the data here (kept); default: a temp dir")
    args = p.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="gitevals-bench-leak-"))
    try:
        return run(work, args)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, args: argparse.Namespace) -> int:
    work.mkdir(parents=True, exist_ok=True)
    write_goldens(work / "evals" / "goldens.jsonl", args.goldens)
    sizes = {"small": args.rows, "big": args.big}
    files = {k: work / f"train-{n}.jsonl" for k, n in sizes.items()}
    for k, path in files.items():
        if not path.exists():
            write_training(path, sizes[k], args.goldens)
    loop = [sys.executable, "-c", LOOP]
    check = [sys.executable, "-m", "gitevals", "goldens", "leak-check", "--format", "json"]
    t: dict[str, tuple[float, float, int]] = {}
    for k, path in files.items():
        pair = alternate(args.repeat, [([*loop, str(path)], (0,)), ([*check, str(path)], (1,))],
                         work)
        t[f"json.loads loop, {sizes[k]:,} rows"], t[f"leak-check, {sizes[k]:,} rows"] = pair
    print(f"\n{args.goldens:,} goldens; best of {args.repeat}: wall s, CPU s; peak RSS\n")
    for name, (wall, cpu, rss) in t.items():
        print(f"  {name:34s} {wall:8.3f} s  {cpu:8.3f} s  {rss / 1024:8.1f} MiB")
    small, big = f"{args.rows:,} rows", f"{args.big:,} rows"

    def ratio(rows: str, i: int) -> float:
        return t[f"leak-check, {rows}"][i] / t[f"json.loads loop, {rows}"][i]

    growth = t[f"leak-check, {big}"][2] / t[f"leak-check, {small}"][2]
    checks = [(f"leak-check / loop at {small}, CPU", ratio(small, 1), 2.0),
              (f"leak-check / loop at {big}, CPU", ratio(big, 1), 2.0),
              (f"leak-check peak RSS {big} / {small}", growth, 1.1)]
    print(f"\n  (wall-time ratios: {ratio(small, 0):.3f}x at {small}, "
          f"{ratio(big, 0):.3f}x at {big})")
    print("\n  ratio                                            measured  target")
    for name, value, target in checks:
        print(f"  {name:48s} {value:7.3f}x  <= {target}x  "
              f"{'ok' if value <= target else 'OVER'}")
    return 0 if all(v <= target for _, v, target in checks) else 1


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.exit(main())
