"""Benchmark of ``gitevals diff`` (issue 4): goldens part vs git, rules part vs a cold lint.

    python benchmarks/bench_diff.py [--dir DIR] [--repeat 5] [--rows 200000] [--cases 2000]

Builds two repos (deterministic, in DIR or a temp dir), each with two commits A and B:

- goldens: ``evals/goldens.jsonl`` of --rows rows (~215 bytes each, ~43 MB at 200,000);
  B changes 1 % of the rows (0.8 % edited, 0.1 % removed, 0.1 % added). Measured as
  committed (loose objects) and again in a copy after ``git gc`` (packed, one blob a
  delta of the other).
- cases: --cases case files (``make_synthetic.py``'s, 5 scenarios x 6 assertions) and 50
  grader modules; B edits 10 case files.

Every figure is the wall time / peak RSS of a fresh process (``os.wait4``), the two
sides of each ratio interleaved in the same loop; best of --repeat, median in brackets.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
BUCKETS = ["arith", "geo", "code", "chat", "safety", "tools", "long", "refusal"]


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def commit(cwd: Path, msg: str) -> str:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", msg)
    return git(cwd, "rev-parse", "HEAD")


# ---------------------------------------------------------------- repos


def _row(i: int, rng: random.Random, version: int = 0) -> str:
    return json.dumps({
        "id": f"g{i:07d}", "bucket": BUCKETS[i % len(BUCKETS)],
        "input": f"Question {i}: " + " ".join(rng.choice(("alpha", "beta", "gamma", "delta"))
                                             for _ in range(rng.randint(6, 12))),
        "expected": f"answer {i}" + (f" (revised {version})" if version else "")
        + " " + "x" * rng.randint(10, 40),
        "label": "pass" if i % 3 else "fail", "source": "synthetic-v1",
    })


def goldens_repo(dest: Path, rows: int) -> tuple[str, str]:
    rng = random.Random(4)
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    (dest / "evals").mkdir()
    a = [_row(i, rng) for i in range(rows)]
    (dest / "evals/goldens.jsonl").write_text("\n".join(a) + "\n")
    sha_a = commit(dest, "A")
    b: list[str | None] = list(a)
    picked = rng.sample(range(rows), rows // 100)
    for k, i in enumerate(picked):
        if k < len(picked) * 8 // 10:
            b[i] = _row(i, random.Random(i), version=1)
        elif k < len(picked) * 9 // 10:
            b[i] = None
    kept = [r for r in b if r is not None]
    for k in range(len(picked) // 10):
        kept.insert(rng.randint(0, len(kept)), _row(rows + k, rng))
    (dest / "evals/goldens.jsonl").write_text("\n".join(kept) + "\n")
    return sha_a, commit(dest, "B")


def cases_repo(dest: Path, cases: int) -> tuple[str, str]:
    spec = importlib.util.spec_from_file_location("make_synthetic", HERE / "make_synthetic.py")
    assert spec and spec.loader
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    synth.write(dest, cases, 0)
    (dest / "evals/goldens.jsonl").unlink()
    sha_a = commit(dest, "A")
    for c in range(0, cases, cases // 10)[:10]:
        p = dest / f"evals/cases/case-{c:04d}.yaml"
        p.write_text(p.read_text().replace("trials: 3,", "trials: 4,", 1)
                     .replace("count: 1}", "count: 2}", 1))
    return sha_a, commit(dest, "B")


# ---------------------------------------------------------------- measuring


def measure(argv: list[str], cwd: Path, env: dict[str, str] | None = None
            ) -> tuple[float, int, float]:
    """(wall s, peak RSS KiB, CPU s = user + sys) of one fresh process; stdout discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **GIT_ENV, **(env or {})})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


Samples = list[tuple[float, int, float]]


def interleaved(runs: dict[str, tuple[list[str], Path, dict[str, str] | None]],
                repeat: int, before: dict[str, object] | None = None
                ) -> dict[str, Samples]:
    out: dict[str, Samples] = {k: [] for k in runs}
    for _ in range(repeat):
        for name, (argv, cwd, env) in runs.items():
            hook = (before or {}).get(name)
            if callable(hook):
                hook()
            out[name].append(measure(argv, cwd, env))
    return out


def best(samples: Samples) -> float:
    return min(w for w, _, _ in samples)


def median(samples: Samples) -> float:
    return statistics.median(w for w, _, _ in samples)


def cpu(samples: Samples) -> float:
    return min(c for _, _, c in samples)


def rss(samples: Samples) -> int:
    return max(r for _, r, _ in samples)


def row(label: str, s: Samples) -> str:
    return (f"  {label:<44} {best(s):7.3f} s  [{median(s):.3f}]  cpu {cpu(s):.3f} s  "
            f"peak RSS {rss(s) / 1024:6.1f} MiB")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", type=Path, help="build the repos here (default: a temp dir)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.build:
        goldens_repo(args.build / "goldens", args.rows)
        cases_repo(args.build / "cases", args.cases)
        return
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-diff-"))
    gitevals = [sys.executable, "-m", "gitevals"]

    g = base / "goldens"
    c = base / "cases"
    if not (g.exists() and c.exists()):
        # Built by a child process: a child forked from a big parent would report the
        # parent's pages in its own peak RSS.
        print(f"building {g} ({args.rows} rows) and {c} ({args.cases} cases) ...", flush=True)
        subprocess.run([sys.executable, __file__, "--build", str(base), "--rows", str(args.rows),
                        "--cases", str(args.cases)], check=True)
    ga, gb = git(g, "rev-parse", "HEAD~1"), git(g, "rev-parse", "HEAD")
    blob_bytes = sum(int(git(g, "cat-file", "-s", f"{c}:evals/goldens.jsonl")) for c in (ga, gb))
    numstat = git(g, "diff", "--numstat", ga, gb, "--", "evals/goldens.jsonl")

    ca, cb = git(c, "rev-parse", "HEAD~1"), git(c, "rev-parse", "HEAD")
    cache = base / "xdg-cache"

    def cold() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    gl = interleaved({
        "git": (["git", "diff", "--numstat", ga, gb, "--", "evals/goldens.jsonl"], g, None),
        "diff": ([*gitevals, "diff", ga, gb, "--only", "goldens"], g, None),
        "json": ([*gitevals, "diff", ga, gb, "--only", "goldens", "--format", "json"], g, None),
    }, args.repeat)
    rl = interleaved({
        "lint": ([*gitevals, "lint", "--rev", cb], c, {"XDG_CACHE_HOME": str(cache)}),
        "diff": ([*gitevals, "diff", ca, cb, "--only", "rules"], c, None),
        "floor": ([sys.executable, "-c", "import gitevals.cli"], c, None),
    }, args.repeat, before={"lint": cold})

    # The same two commits after `git gc`: B is stored whole and A as a delta of it.
    gp = base / "goldens-packed"
    if not gp.exists():
        shutil.copytree(g, gp)
        git(gp, "gc", "-q")
    gpl = interleaved({
        "git": (["git", "diff", "--numstat", ga, gb, "--", "evals/goldens.jsonl"], gp, None),
        "diff": ([*gitevals, "diff", ga, gb, "--only", "goldens"], gp, None),
    }, args.repeat)

    g_ratio = best(gl["diff"]) / best(gl["git"])
    g_ratio_med = median(gl["diff"]) / median(gl["git"])
    rss_ratio = rss(gl["diff"]) * 1024 / blob_bytes
    r_ratio = best(rl["diff"]) / best(rl["lint"])
    print(f"\ngoldens: {args.rows} rows, blobs A+B = {blob_bytes / 1e6:.1f} MB, "
          f"numstat {numstat.split()[:2]} (+/- lines)")
    print(row("git diff --numstat A B -- evals/goldens.jsonl", gl["git"]))
    print(row("gitevals diff A B --only goldens", gl["diff"]))
    print(row("  the same, --format json (all 2,000 items)", gl["json"]))
    print(f"  ratio {g_ratio:.2f}x best [{g_ratio_med:.2f}x median] (target <= 1.5x), "
          f"cpu {cpu(gl['diff']) / cpu(gl['git']):.2f}x; "
          f"peak RSS {rss_ratio:.2f}x the two blobs (target <= 4x)")
    print("\ngoldens, packed (after git gc: one blob is a delta of the other)")
    print(row("git diff --numstat A B -- evals/goldens.jsonl", gpl["git"]))
    print(row("gitevals diff A B --only goldens", gpl["diff"]))
    print(f"  ratio {best(gpl['diff']) / best(gpl['git']):.2f}x best "
          f"[{median(gpl['diff']) / median(gpl['git']):.2f}x median], "
          f"cpu {cpu(gpl['diff']) / cpu(gpl['git']):.2f}x")
    print(f"\nrules: {args.cases} case files, 10 changed")
    print(row("gitevals lint --rev B (cold cache)", rl["lint"]))
    print(row("gitevals diff A B --only rules", rl["diff"]))
    print(row("floor: python -c 'import gitevals.cli'", rl["floor"]))
    print(f"  ratio {r_ratio:.2f}x a full cold lint (target <= 1x); cpu "
          f"{cpu(rl['diff']) / cpu(rl['lint']):.2f}x (lint's workers not counted)")
    print(f"\nrepos in {base}; machine load {os.getloadavg()[0]:.1f} "
          f"(self rusage {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)")


if __name__ == "__main__":
    main()
