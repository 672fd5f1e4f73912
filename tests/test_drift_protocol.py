"""Drift, what the goldens document asks of it (issue 23, item 8), through the real CLI."""

from __future__ import annotations

import json

from .conftest import Repo, run_cli
from .test_drift_suite import trivia
from .test_goldens_gate import commit

SIZED = """\
frozen_benchmarks:
  - name: trivia
    source: bench/trivia.jsonl
    split: test
    n_items: 6   # sized for a 40-point hard-fail threshold: a smoke test, not a gate
    seed: 1
    grader: checks.exact
  - name: unsized
    source: bench/trivia.jsonl
    split: test
    n_items: 5
    seed: 2
    grader: checks.exact
# sized for a 40-point threshold as well
domain_adjacent:
  path: evals/goldens.jsonl
  filter: "tag == 'drift-suite'"
  n_items_range: [3, 5]
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""


def test_a_comment_saying_what_budget_a_count_was_sized_for_silences_ge634(
        repo: Repo) -> None:
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SIZED, "bench/trivia.jsonl": trivia()})
    lint = run_cli("lint", "--format", "json", cwd=repo.path)
    found = [f for f in json.loads(lint.out)["findings"] if f["code"] == "GE634"]
    assert [(f["line"], f["message"].split(":")[0]) for f in found] == [(8, "unsized")]
