"""Benchmark: what goldens as the regression suite costs lint, and drift sampling.

Side by side, in one run (best of --repeat, fresh processes for lint):

- lint warm, buckets mapped vs not: ``gitevals lint`` of the same tree (``--rows``
  goldens in 6 buckets) with ``[tool.gitevals.goldens] graders`` set and a drift suite
  sampling a ``--rows`` benchmark file, and without either. The suite lint reads a
  summary of goldens.jsonl and the drift findings cached by blob SHA; bar: <= 1.5x.
- lint cold, mapped vs not: the same with an empty cache (the summary is computed).
- drift sample vs json.loads loop: ``gitevals.goldens.drift.sample`` of ``--source``
  rows (n_items 500) against a plain loop that splits and ``json.loads`` the same
  bytes; bar: <= 2x.

    .venv/bin/python benchmarks/bench_goldens.py [--rows 100000] [--source 1000000]

Exit 1 when a bar is missed. The machine may be shared: the ratios are what matters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINT_BAR = 1.5
SAMPLE_BAR = 2.0
BUCKETS = ("format", "tone", "tools", "refusal", "facts", "length")
GRADERS = "def exact(t, case, run):\n    return run['final_answer'] == case['expected']\n"
CASE = "scenarios:\n  - id: a\n    user: hi\n    expect: [{no_error: true}]\n"


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _repo(dest: Path, rows: int, mapped: bool) -> Path:
    dest.mkdir(parents=True)
    (dest / "evals/cases").mkdir(parents=True)
    (dest / "evals/graders").mkdir()
    (dest / "evals/cases/basics.yaml").write_text(CASE)
    (dest / "evals/graders/checks.py").write_text(GRADERS)
    with (dest / "evals/goldens.jsonl").open("w") as f:
        for i in range(rows):
            f.write(json.dumps({"id": f"g{i}", "bucket": BUCKETS[i % 6], "input": f"q {i}",
                                "expected": f"a {i}", "notes": "x" * (i % 40)}) + "\n")
    if mapped:  # and a drift suite sampling a benchmark file as large as the goldens
        (dest / "bench").mkdir()
        with (dest / "bench/source.jsonl").open("w") as f:
            for i in range(rows):
                f.write(json.dumps({"id": f"s{i}", "split": "test", "input": f"q {i}",
                                    "expected": "A"}) + "\n")
        (dest / "evals/drift-suite.yaml").write_text(
            "frozen_benchmarks:\n  - {name: src, source: bench/source.jsonl, split: test, "
            "n_items: 2000, seed: 1, grader: checks.exact}\n"
            "drift_budget: {noise_tolerance_pts: 1, hard_fail_threshold_pts: 5}\n")
    mapping = ", ".join(f'{b} = "checks.exact"' for b in BUCKETS)
    (dest / "pyproject.toml").write_text(
        '[tool.gitevals.target]\ncommand = ["true"]\n'
        + (f"\n[tool.gitevals.goldens]\ngraders = {{{mapping}}}\n" if mapped else ""))
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "bench")
    return dest


def _lint(repo: Path, cache: Path, cold: bool) -> float:
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gitevals", "lint"], cwd=repo, env=env,
                   capture_output=True, check=False)
    return time.perf_counter() - start


def _best(fn: object, repeat: int) -> float:
    assert callable(fn)
    return min(fn() for _ in range(repeat))


def lint_rows(tmp: Path, rows: int, repeat: int) -> float:
    plain, mapped = _repo(tmp / "plain", rows, False), _repo(tmp / "mapped", rows, True)
    out = {}
    for name, repo in (("plain", plain), ("mapped", mapped)):
        cache = tmp / f"cache-{name}"
        out[name, "cold"] = _best(lambda r=repo, c=cache: _lint(r, c, True), repeat)
        _lint(repo, cache, True)
        out[name, "warm"] = _best(lambda r=repo, c=cache: _lint(r, c, False), repeat)
    for kind in ("cold", "warm"):
        ratio = out["mapped", kind] / out["plain", kind]
        print(f"lint {kind:<4}  mapped {out['mapped', kind]:7.3f} s   not mapped "
              f"{out['plain', kind]:7.3f} s   ratio {ratio:5.2f}x")
    return out["mapped", "warm"] / out["plain", "warm"]


def sample_rows(n: int, repeat: int) -> float:
    from gitevals.goldens.drift import Slice, sample

    data = "".join(json.dumps({"id": f"s{i}", "split": "test" if i % 5 else "dev",
                               "input": f"question {i}", "expected": "A"}) + "\n"
                   for i in range(n)).encode()
    s = Slice("benchmark", "bench", "bench.jsonl", 500, 42, "checks.exact", "test")

    def plain() -> float:
        start = time.perf_counter()
        for line in data.split(b"\n"):
            if line:
                json.loads(line)
        return time.perf_counter() - start

    def ours() -> float:
        start = time.perf_counter()
        picked = sample(s, data)
        assert len(picked) == 500
        return time.perf_counter() - start

    a, b = _best(ours, repeat), _best(plain, repeat)
    print(f"sample    {n:,} rows: drift.sample {a:7.3f} s   json.loads loop {b:7.3f} s   "
          f"ratio {a / b:5.2f}x")
    return a / b


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--source", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    str(Path(__file__).resolve().parents[1] / "gitevals")], check=False)
    with tempfile.TemporaryDirectory(prefix="gitevals-bench-goldens-") as tmp:
        lint_ratio = lint_rows(Path(tmp), args.rows, args.repeat)
    sample_ratio = sample_rows(args.source, args.repeat)
    ok = lint_ratio <= LINT_BAR and sample_ratio <= SAMPLE_BAR
    print(f"bars: warm lint mapped <= {LINT_BAR}x ({'ok' if lint_ratio <= LINT_BAR else 'MISSED'}),"
          f" sample <= {SAMPLE_BAR}x ({'ok' if sample_ratio <= SAMPLE_BAR else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
