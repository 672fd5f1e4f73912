"""Benchmark: `gitevals score` of a 100,000-trial artifact vs a plain json.load of it.

Both run as fresh processes, side by side, in one run (best of --repeat). The bar
(issue 3): score <= 3x json.load. Prints the times and the ratio; exit 1 over the bar.

    .venv/bin/python benchmarks/bench_score.py [--trials 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BAR = 3.0
COMMIT = "c0ffee" + "0" * 34


def _transcript(i: int) -> dict[str, Any]:
    ok = i % 7 != 0
    return {
        "final_answer": ("The capital of France is Paris." if ok else "I could not tell.")
        + " " * (i % 5),
        "tool_calls": [
            {"name": "shell__run", "args": {"cmd": "ls -la", "cwd": "/tmp"},
             "result": {"stdout": "a\nb\nc\n", "code": 0}},
            {"name": "files__read", "args": {"path": f"notes/{i % 13}.md"},
             "result": "# notes\nParis is the capital." if ok else "not found"},
        ],
        "hooks": [{"name": "pre_tool", "decision": "allow"}],
        "error": None,
        "turns": [{"final_answer": "...", "tokens": {"in": 120 + i % 50, "out": 40}}],
        "duration_ms": 120 + i % 90,
    }


EXPECT = [
    {"tool_called": {"name": "shell__run", "args": {"cmd": "ls -la"}}},
    {"tool_order": {"first": "shell__run", "then": "files__read"}},
    {"max_tool_calls": {"name": "shell__run", "count": 3}},
    {"result_contains": {"name": "files__read", "substring": "Paris"}},
    {"final_answer_contains": "Paris"},
    {"final_answer_max_chars": 200},
    {"hook_called": {"name": "pre_tool", "decision": "allow"}},
    {"no_error": True},
    {"grader": {"name": "quality.answers", "pass_below": 0.7}},
]


def _result(trial: int, i: int) -> dict[str, Any]:
    from gitevals.run.scoring import score_trial

    graders = [{"index": 8, "name": "quality.answers", "duration_ms": 3, "error": None,
                "raw": {"pass": True, "score": 0.5 + (i % 5) / 10, "why": "reads well"}}]
    transcript = _transcript(i)
    assertions, passed = score_trial(EXPECT, transcript, graders, None)
    return {"trial": trial, "transcript": transcript, "error": None, "graders": graders,
            "assertions": assertions, "passed": passed}


def make_artifact(trials: int, cases: int = 20, scenarios: int = 10) -> dict[str, Any]:
    """A valid artifact holding ``trials`` trial results spread over cases x scenarios."""
    from gitevals.run.scoring import verdict

    per = max(1, trials // (cases * scenarios))
    out = []
    i = 0
    for c in range(cases):
        scs = []
        for s in range(scenarios):
            results = [_result(t, i + t) for t in range(per)]
            i += per
            scs.append({"id": f"scenario-{s}", "user": ["What is the capital of France?"],
                        "expect": EXPECT, "trials": per, "timeout": 300.0,
                        "results": results, "verdict": verdict(results)})
        out.append({"name": f"case-{c:03d}", "path": f"evals/cases/case-{c:03d}.yaml",
                    "blob": "b" * 40, "scenarios": scs})
    return {"format": "gitevals-run/1", "run_id": f"20261129T220000Z-{COMMIT[:12]}-abcdef",
            "tool_version": "0.1.0", "rev": "HEAD", "commit": COMMIT, "tree": "e" * 40,
            "dirty": False, "dirty_diff": None, "root": "evals", "settings": {},
            "files": {c["path"]: "b" * 40 for c in out},
            "started_at": "2026-11-29T22:00:00Z", "finished_at": "2026-11-29T22:10:00Z",
            "duration_ms": 600000, "interrupted": False,
            "options": {"cases": [], "trials": None, "jobs": 2}, "cases": out}


def _best(argv: list[str], repeat: int, cwd: Path) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - t0)
        if proc.returncode not in (0, 1):
            sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.decode()}")
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        doc = make_artifact(args.trials)
        path.write_text(json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
        size = os.path.getsize(path) / 1e6
        n = sum(len(s["results"]) for c in doc["cases"] for s in c["scenarios"])
        del doc
        py = sys.executable
        load = _best([py, "-c", f"import json; json.load(open({str(path)!r}))"],
                     args.repeat, Path(tmp))
        # gitevals turns the cycle collector off for its one big acyclic tree; the same
        # trick on the baseline shows what is left once that advantage is removed.
        load_nogc = _best([py, "-c", "import gc, json; gc.disable(); "
                           f"json.load(open({str(path)!r}))"], args.repeat, Path(tmp))
        score = _best([py, "-m", "gitevals", "score", str(path), "--format", "json"],
                      args.repeat, Path(tmp))
    ratio = score / load
    print(f"artifact: {n} trials, {size:.1f} MB")
    print(f"json.load (fresh process):               {load:.2f} s")
    print(f"json.load, gc disabled (fresh process):  {load_nogc:.2f} s")
    print(f"gitevals score --format json:            {score:.2f} s")
    print(f"ratio vs json.load: {ratio:.2f}x (bar {BAR:.1f}x) -> "
          f"{'ok' if ratio <= BAR else 'TOO SLOW'}")
    print(f"ratio vs json.load with gc disabled: {score / load_nogc:.2f}x")
    return 0 if ratio <= BAR else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
