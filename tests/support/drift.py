"""A drift suite (``evals/drift-suite.yaml``) with a frozen benchmark and tagged goldens."""

from __future__ import annotations

import json

SUITE = """\
frozen_benchmarks:
  - name: trivia
    source: bench/trivia.jsonl
    split: test
    n_items: 6
    seed: 1
    grader: checks.exact
domain_adjacent:
  path: evals/goldens.jsonl
  filter: "tag == 'drift-suite'"
  n_items_range: [3, 5]
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""


def trivia() -> str:
    # f-prefixed ids so the harness answers the first 4 "ok"
    rows = [{"id": f"f{i:02d}", "split": "test" if i < 10 else "dev", "input": f"b{i}",
             "expected": "ok"} for i in range(14)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def tagged_goldens() -> str:
    rows = [{"id": f"t{i:02d}", "bucket": "tone", "input": f"q{i}", "expected": "ok",
             **({"tag": "drift-suite"} if i % 2 else {})} for i in range(12)]
    rows += [{"id": f"f{i:02d}", "bucket": "format", "input": f"q{i}", "expected": "ok"}
             for i in range(4)]
    return "".join(json.dumps(r) + "\n" for r in rows)
