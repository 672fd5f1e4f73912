"""What the calibration warnings (GE510-GE516) add to a lint, measured side by side.

    python benchmarks/bench_calibration.py [--repo DIR] [--cases 2000] [--repeat 3]

Builds the synthetic repo of ``make_synthetic.py`` (2,000 cases, one grader reference
per scenario: 10,000 references to 400 graders in 50 modules) and times, in one process,
best of ``--repeat``:

- ``lint_tree`` of the working tree, no cache (the whole cold lint, warnings included);
- ``advisory_findings`` alone over the same references, twice: as generated (no grader
  asks the judge) and with every module rewritten to call ``t.llm`` (each grader then
  looks for its record and gets GE510).

Prints each time and the share of the cold lint the check costs. Target: under 5 %
in both cases.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gitevals.git.trees import WorkingTree  # noqa: E402
from gitevals.lint import lint_tree  # noqa: E402
from gitevals.lint.calibration import advisory_findings  # noqa: E402
from gitevals.lint.cases import lint_case_bytes  # noqa: E402
from gitevals.settings import load_settings  # noqa: E402


def best(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def refs_of(repo: Path) -> list[Any]:
    out: list[Any] = []
    for path in sorted((repo / "evals/cases").glob("*.yaml")):
        rel = path.relative_to(repo).as_posix()
        _, refs = lint_case_bytes(path.read_bytes(), rel, {})
        out.extend(refs)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", type=Path, help="build the synthetic repo here (default: temp)")
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    repo = args.repo or Path(tempfile.mkdtemp(prefix="bench-calibration-")) / "synth"
    if not (repo / "evals").exists():
        subprocess.run([sys.executable, str(HERE / "make_synthetic.py"), str(repo),
                        "--cases", str(args.cases), "--goldens", "1000"], check=True,
                       capture_output=True)
    tree = WorkingTree(repo)
    settings, _ = load_settings(tree)
    refs = refs_of(repo)
    lint = best(args.repeat, lambda: lint_tree(tree, cache=False, jobs=1))
    plain = best(args.repeat, lambda: advisory_findings(tree, settings, refs))
    # Every module rewritten to ask the judge, and put back after: a --repo built once
    # and reused must measure the generated graders again next time.
    sources = {m: m.read_text() for m in (repo / "evals/graders").glob("*.py")}
    try:
        for module, text in sources.items():
            module.write_text(text.replace('    answer = run.get("final_answer") or ""',
                                           '    answer = run.get("final_answer") or ""\n'
                                           '    t.llm("unused")'))
        judged_tree = WorkingTree(repo)
        found = advisory_findings(judged_tree, settings, refs)
        judged = best(args.repeat, lambda: advisory_findings(judged_tree, settings, refs))
    finally:
        for module, text in sources.items():
            module.write_text(text)
    print(f"references: {len(refs)}; GE510 found when every grader asks: {len(found)}")
    print(f"{'lint, cold, 1 job':42s} {lint:8.3f} s")
    print(f"{'calibration check, no judge graders':42s} {plain:8.3f} s   "
          f"{plain / lint:6.1%} of the cold lint")
    print(f"{'calibration check, every grader a judge':42s} {judged:8.3f} s   "
          f"{judged / lint:6.1%} of the cold lint")
    ok = plain / lint < 0.05 and judged / lint < 0.05
    print("target (< 5 % each):", "met" if ok else "NOT met")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
