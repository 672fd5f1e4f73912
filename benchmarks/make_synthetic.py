"""Generate the synthetic eval repo of issue 2's lint benchmark, committed to git.

    python benchmarks/make_synthetic.py DEST [--cases 2000] [--goldens 200000]

DEST gets ``evals/cases/case-NNNN.yaml`` (5 scenarios x 6 assertions each, every
assertion kind used, one grader reference per scenario), 50 grader modules
``evals/graders/gNN.py`` and ``evals/goldens.jsonl``; all lint-clean. Everything is
committed (``--rev HEAD`` reads the same content from git objects). Deterministic:
the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

GRADER_MODULES = 50
FUNCS_PER_MODULE = 8

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def scenario(case: int, n: int) -> str:
    g = (case * 5 + n) % GRADER_MODULES
    f = (case + n) % FUNCS_PER_MODULE
    return f"""\
  - id: scenario-{n}-of-case-{case}
    user: [Please look up record {case}-{n} and summarise it., Now double-check the total.]
    trials: {2 + n % 3}
    expect:
      - tool_called: {{name: records__get, args: {{id: "{case}-{n}"}}}}
      - min_tool_calls: {{name: records__get, count: 1}}
      - tool_order: {{first: records__get, then: calc__sum}}
      - final_answer_contains: record {case}
      - no_error: true
      - grader: {{name: g{g:02d}.check_{f}, pass_below: 0.{5 + n % 4}}}
"""


def case_file(case: int) -> str:
    head = ("# yaml-language-server: $schema=../../schemas/case.schema.json\n"
            "defaults: {trials: 3, timeout: 120s}\nscenarios:\n")
    return head + "".join(scenario(case, n) for n in range(5))


def grader_module(m: int) -> str:
    parts = [f'"""Synthetic graders, module {m}."""\n\nimport json\n\nLIMIT = {m}\n']
    for f in range(FUNCS_PER_MODULE):
        parts.append(f"""

def check_{f}(t, case, run):
    \"\"\"Grader {f}: a deterministic score from the answer length.\"\"\"
    answer = run.get("final_answer") or ""
    score = min(1.0, len(answer) / (LIMIT + {f} + 1))
    return {{"pass": score >= 0.5, "score": score, "why": json.dumps(case["id"])}}
""")
    return "".join(parts)


def goldens(rows: int) -> str:
    lines = []
    for i in range(rows):
        row = {"id": f"g{i:06d}", "input": f"What is {i} plus {i % 97}?",
               "expected": str(i + i % 97), "label": "pass" if i % 3 else "fail",
               "bucket": f"arith-{i % 12}"}
        lines.append(json.dumps(row, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def write(dest: Path, cases: int, rows: int) -> None:
    (dest / "evals/cases").mkdir(parents=True, exist_ok=True)
    (dest / "evals/graders").mkdir(parents=True, exist_ok=True)
    for c in range(cases):
        (dest / f"evals/cases/case-{c:04d}.yaml").write_text(case_file(c))
    for m in range(GRADER_MODULES):
        (dest / f"evals/graders/g{m:02d}.py").write_text(grader_module(m))
    (dest / "evals/goldens.jsonl").write_text(goldens(rows))


def commit(dest: Path) -> None:
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["commit", "-q", "-m", "synthetic eval tree"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dest", type=Path)
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--goldens", type=int, default=200_000)
    args = p.parse_args()
    if args.dest.exists() and any(args.dest.iterdir()):
        raise SystemExit(f"{args.dest} is not empty: give a new directory")
    args.dest.mkdir(parents=True, exist_ok=True)
    write(args.dest, args.cases, args.goldens)
    commit(args.dest)
    print(f"{args.dest}: {args.cases} cases, {GRADER_MODULES} grader modules, "
          f"{args.goldens} goldens rows, committed")


if __name__ == "__main__":
    main()
