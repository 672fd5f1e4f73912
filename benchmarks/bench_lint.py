"""Lint benchmark of issue 2, measured side by side in one run.

    python benchmarks/bench_lint.py [--repo DIR] [--repeat 3] [--skip-check-jsonschema]

Builds (or reuses, with ``--repo``) the synthetic repo of ``make_synthetic.py``
(2,000 cases x 5 scenarios x 6 assertions, 50 grader modules, 200,000 goldens
rows, committed) and times fresh processes, best of ``--repeat``:

- check-jsonschema over the 2,000 case files (schema only; run once: it is slow);
- the parsing floor: a fresh python that only ``yaml.compose``s them (CSafeLoader);
- ``gitevals lint`` cold (empty cache dir), warm (unchanged tree), ``--rev HEAD``
  (cold and warm), and the pre-commit path ``--staged <one changed case>``.

Prints each time and the ratios against the targets of issue 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA = HERE.parent / "schemas" / "case.schema.json"
BIN = Path(sys.executable).parent
COMPOSE = """\
import glob, yaml
for p in sorted(glob.glob('evals/cases/*.yaml')):
    with open(p, 'rb') as f:
        yaml.compose(f.read().decode('utf-8'), Loader=yaml.CSafeLoader)
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,),
          before: Callable[[], None] | None = None) -> float:
    if before:
        before()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-2000:]}"
                         f"{proc.stderr[-2000:]}")
    return elapsed


def best(n: int, fn: Callable[[], float]) -> tuple[float, float]:
    times = [fn() for _ in range(n)]
    return min(times), statistics.median(times)


def gitevals(*args: str) -> list[str]:
    exe = BIN / "gitevals"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "gitevals", *args]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", type=Path, help="reuse this synthetic repo (made if missing)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-check-jsonschema", action="store_true",
                   help="skip the ~20 s check-jsonschema run (its ratios are then not shown)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitevals-bench-"))
    repo = args.repo or work / "repo"
    if not (repo / "evals").exists():
        subprocess.run([sys.executable, str(HERE / "make_synthetic.py"), str(repo)], check=True)
    # Byte-compile the package as `pip install` does (this sandbox sets
    # PYTHONDONTWRITEBYTECODE, so an editable install would recompile every module in
    # every process); the baselines' libraries are already compiled in site-packages.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "gitevals")],
                   check=True)
    try:
        run(repo, work, args.repeat, not args.skip_check_jsonschema)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(repo: Path, work: Path, n: int, with_cjs: bool) -> None:
    cache = work / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    cases = sorted(str(p.relative_to(repo)) for p in (repo / "evals/cases").glob("*.yaml"))

    def clear() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    t: dict[str, tuple[float, float]] = {}
    t["compose floor"] = best(n, lambda: timed([sys.executable, "-c", COMPOSE], repo, env))
    t["lint cold"] = best(n, lambda: timed(gitevals("lint"), repo, env, before=clear))
    t["lint warm"] = best(n, lambda: timed(gitevals("lint"), repo, env))
    t["lint --rev HEAD cold"] = best(
        n, lambda: timed(gitevals("lint", "--rev", "HEAD"), repo, env, before=clear))
    t["lint --rev HEAD warm"] = best(n, lambda: timed(gitevals("lint", "--rev", "HEAD"), repo,
                                                      env))
    t["lint (working tree) warm"] = best(n, lambda: timed(gitevals("lint"), repo, env))
    staged = hook_setup(repo)
    try:
        timed(gitevals("lint"), repo, env, before=clear)  # the usual state: tree linted before
        t["hook --staged 1 file"] = best(
            n, lambda: timed(gitevals("lint", "--staged", staged), repo, env))
        t["hook --staged 1 file, empty cache"] = best(
            n, lambda: timed(gitevals("lint", "--staged", staged), repo, env, before=clear))
    finally:
        hook_teardown(repo, staged)
    if with_cjs:
        cjs = str(BIN / "check-jsonschema")
        t["check-jsonschema"] = best(1, lambda: timed([cjs, "--schemafile", str(SCHEMA), *cases],
                                                      repo, env))
    report(t, len(cases))


def hook_setup(repo: Path) -> str:
    """Change one case (a new blob, never linted before) and stage it."""
    path = "evals/cases/case-0007.yaml"
    target = repo / path
    target.write_text(target.read_text() + f"# edited {time.time()}\n")
    subprocess.run(["git", "add", path], cwd=repo, check=True)
    return path


def hook_teardown(repo: Path, path: str) -> None:
    subprocess.run(["git", "reset", "-q", "HEAD", "--", path], cwd=repo, check=True)
    subprocess.run(["git", "checkout", "-q", "--", path], cwd=repo, check=True)


def report(t: dict[str, tuple[float, float]], files: int) -> None:
    print(f"\n{files} case files; wall seconds, best (median) of the repeats\n")
    for name, (lo, med) in t.items():
        print(f"  {name:36s} {lo:8.3f}  ({med:.3f})")
    cold, warm = t["lint cold"][0], t["lint warm"][0]
    checks: list[tuple[str, float, float]] = [
        ("cold lint / compose floor", cold / t["compose floor"][0], 2.5),
        ("lint --rev HEAD / working-tree lint (cold)", t["lint --rev HEAD cold"][0] / cold, 1.2),
        ("lint --rev HEAD / working-tree lint (warm)",
         t["lint --rev HEAD warm"][0] / t["lint (working tree) warm"][0], 1.2),
        ("hook --staged 1 file / cold full lint", t["hook --staged 1 file"][0] / cold, 0.15),
        ("hook (empty cache) / cold full lint",
         t["hook --staged 1 file, empty cache"][0] / cold, 0.15),
    ]
    if "check-jsonschema" in t:
        cjs = t["check-jsonschema"][0]
        checks[:0] = [("cold lint / check-jsonschema", cold / cjs, 0.1),
                      ("warm lint / check-jsonschema", warm / cjs, 0.02)]
    print("\n  ratio                                              measured  target")
    for name, ratio, target in checks:
        verdict = "ok" if ratio <= target else "OVER"
        print(f"  {name:50s} {ratio:7.3f}x  <= {target}x  {verdict}")


if __name__ == "__main__":
    main()
