"""Benchmark of ``gitevals report`` (issue 14): a 100,000-trial history vs ``show --format json``.

    python benchmarks/bench_report.py [--dir DIR] [--commits 20] [--trials 5000] [--repeat 3]

Builds a repository (deterministic, in DIR or a temp dir) of --commits commits on one
line, each with a run artifact of --trials trials in ``evals/results/``
(``bench_score.make_artifact``'s trials: 20 cases x 10 scenarios; pass counts drift
from commit to commit, so the history has regressions to test and mark). Then, side by
side in one loop, best of --repeat, each a fresh process:

- ``gitevals report -o report.html --limit N``: every run of the history read, the
  tip's transcripts rendered (kept compressed: the run has more than 1,000 trials);
- ``gitevals show REV --format json`` for each commit, summed: the same runs, read the
  way ``show`` reads them (the bar: report <= 3x this);
- for reference, one process that loads every run as ``show`` does and renders its JSON.

Finally the page is opened in headless Chromium (from file://, network blocked) and
DOMContentLoaded is read from the navigation timing, best of --repeat + 1 openings
(bar: under 2 s; the first opening and a one-line page are printed beside it). Also prints the
page's size, and the size of a report on one 1,000-trial run.
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

HERE = Path(__file__).resolve().parent
BAR, OPEN_BAR_MS = 3.0, 2000.0
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
CASE = "scenarios:\n  - id: a\n    user: hi\n    expect:\n      - no_error: true\n"


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def _drift(doc: dict[str, Any], k: int) -> None:
    """Fail a few more trials of some scenarios at commit ``k`` (rescored verdicts)."""
    from gitevals.run.scoring import verdict

    for c, case in enumerate(doc["cases"]):
        for s, scenario in enumerate(case["scenarios"]):
            fails = (k * 7 + c * 3 + s) % 21 if (c + s + k) % 4 == 0 else 0
            for r in scenario["results"][:fails]:
                r["passed"] = False
            scenario["verdict"] = verdict(scenario["results"])


def build(dest: Path, commits: int, trials: int) -> list[str]:
    """The repository: ``commits`` commits, each with a run of ``trials`` trials."""
    from bench_score import make_artifact as make  # a sibling script: its dir is on sys.path

    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    (dest / "evals/cases").mkdir(parents=True)
    (dest / "evals/cases/case-000.yaml").write_text(CASE)
    (dest / ".gitignore").write_text("evals/results/\n")
    shas = []
    for k in range(commits):
        (dest / "version.txt").write_text(f"{k}\n")
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "-m", f"change {k}")
        if k % 5 == 0:
            git(dest, "tag", f"v0.{k // 5}")
        sha = git(dest, "rev-parse", "HEAD")
        doc = make(trials)
        doc.update(commit=sha, run_id=f"20261130T2200{k:02d}Z-{sha[:12]}-abcdef",
                   finished_at=f"2026-11-30T22:{k:02d}:00Z")
        _drift(doc, k)
        path = dest / "evals/results" / f"{doc['run_id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
        shas.append(sha)
    return shas


def _time(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.decode()}")
    return took


ONE_PROCESS = """
import gc, sys
gc.disable()
from gitevals.git.repo import require_repo
from gitevals.report.runs import as_json
from gitevals.run.store import run_of_commit
repo = require_repo()
for sha in sys.argv[1:]:
    as_json(run_of_commit(repo, repo.work_root, "evals/results", sha).run)
"""


def measure(repo: Path, shas: list[str], repeat: int) -> dict[str, float]:
    py = [sys.executable, "-m", "gitevals"]
    best: dict[str, float] = {}
    for _ in range(repeat):
        times = {
            "report": _time([*py, "report", "-o", "report.html", "--limit", str(len(shas))],
                            repo),
            "show": sum(_time([*py, "show", sha, "--format", "json"], repo) for sha in shas),
            "one": _time([sys.executable, "-c", ONE_PROCESS, *shas], repo),
        }
        best = {k: min(v, best.get(k, v)) for k, v in times.items()}
    return best


NAVIGATION = ("const n = performance.getEntriesByType('navigation')[0];"
              "return [n.domContentLoadedEventEnd, n.loadEventEnd];")


def dom_content_loaded(page: Path, profile: Path, repeat: int) -> dict[str, float]:
    """DOMContentLoaded in ms of the page's first opening and the best of ``repeat``, its
    load event, the requests beyond the page, and (for the machine's state) the
    DOMContentLoaded of a one-line page, all in one Chromium."""
    sys.path.insert(0, str(HERE.parent))
    from tests.support.browser import chromium, requests

    tiny = profile.parent / "tiny.html"
    tiny.write_text("<!doctype html><title>tiny</title><p>one line")
    with chromium(profile) as driver:
        times = []
        for _ in range(repeat):
            driver.get(page.as_uri())
            times.append(driver.execute_script(NAVIGATION))
        extra = [url for url in requests(driver) if url != page.as_uri()]
        if extra:
            print("requests beyond the page:", *extra, sep="\n  ")
        driver.get(tiny.as_uri())
        reference = driver.execute_script(NAVIGATION)[0]
    return {"first": float(times[0][0]), "best": min(float(t[0]) for t in times),
            "load": float(times[0][1]), "extra": len(extra), "tiny": float(reference)}


def small_report_size(tmp: Path) -> int:
    """Bytes of the report on one commit with one 1,000-trial run."""
    repo = tmp / "small"
    if not repo.exists():
        build(repo, 1, 1000)
    subprocess.run([sys.executable, "-m", "gitevals", "report", "-o", "report.html"], cwd=repo,
                   check=True, capture_output=True)
    return (repo / "report.html").stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, help="build the repositories here (kept)")
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.dir or Path(scratch)
        repo = tmp / "history"
        shas = build(repo, args.commits, args.trials) if not repo.exists() else \
            git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").split()
        best = measure(repo, shas, args.repeat)
        page = repo / "report.html"
        size = page.stat().st_size
        dcl = dom_content_loaded(page, tmp / "profile", args.repeat + 1)
        small = small_report_size(tmp)
    ratio, opened = best["report"] / best["show"], dcl["best"] < OPEN_BAR_MS
    print(f"history: {len(shas)} commits x {args.trials:,} trials = "
          f"{len(shas) * args.trials:,} trials; report {size / 1e6:.1f} MB")
    print(f"gitevals report (fresh process):                 {best['report']:.2f} s")
    print(f"gitevals show --format json, {len(shas)} processes, sum: {best['show']:.2f} s")
    print(f"show's reads and JSON for all runs, one process:  {best['one']:.2f} s")
    print(f"ratio report / show: {ratio:.2f}x (bar {BAR:.1f}x) -> "
          f"{'ok' if ratio <= BAR else 'TOO SLOW'}")
    print(f"ratio report / one process of show's work: {best['report'] / best['one']:.2f}x")
    print(f"Chromium: DOMContentLoaded {dcl['best']:.0f} ms best of {args.repeat + 1} (bar "
          f"{OPEN_BAR_MS:.0f} ms) -> {'ok' if opened else 'TOO SLOW'}; first opening "
          f"{dcl['first']:.0f} ms, its load event {dcl['load']:.0f} ms; a one-line page "
          f"{dcl['tiny']:.0f} ms; requests beyond the page: {dcl['extra']:.0f}")
    print(f"report of one 1,000-trial run: {small / 1024:,.0f} KiB")
    return 0 if ratio <= BAR and opened and not dcl["extra"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
