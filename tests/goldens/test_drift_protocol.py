"""Drift, what the goldens document asks of it (issue 23, item 8), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo, run_cli
from tests.support.drift import trivia
from tests.support.gate import commit, goldens, goldens_run

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


RERUN = """\
drift_budget:
  noise_tolerance_pts: 2
  rerun_seed_variation_pts: [4, 70]
  hard_fail_threshold_pts: 10
"""


def test_a_drop_within_the_rerun_variation_is_noise_and_says_so(repo: Repo) -> None:
    commit(repo, 15, 10, {"evals/drift-suite.yaml": RERUN})
    base = goldens_run(repo, note=True)
    made = run_cli("baseline", str(base), "--model", "base-7b", cwd=repo.path)
    assert made.code == 0, made.err
    repo.commit(msg="baseline")
    commit(repo, 14, 10, {"evals/drift-suite.yaml": RERUN})  # format -5 pts: within 70
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert res.out.startswith("gate: PASSED against baseline base-7b (1 dropped within the "
                              "re-run variation: noise)\n")
    assert ("budget: unchanged within 2 pts, a drop within the re-run variation of 70 pts "
            "(rerun_seed_variation_pts) is noise") in res.out
    row = next(ln for ln in res.out.splitlines() if ln.startswith("bucket format"))
    assert "-5.0" in row and row.endswith("noise (within the re-run variation)")
    # -60 pts: within the variation of 70 but past the hard-fail threshold of 10, which
    # binds regardless (and beyond noise by the exact test)
    commit(repo, 3, 10, {"evals/drift-suite.yaml": RERUN})
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", "--format", "json",
                  cwd=repo.path)
    assert res.code == 1, res.err
    doc = json.loads(res.out)
    assert [(s["name"], s["status"]) for s in doc["slices"]] == [
        ("format", "hard_fail"), ("tone", "unchanged")]
    assert doc["budget"]["rerun_seed_variation_pts"] == [4, 70]


NAMED = """\
frozen_benchmarks:
  - name: trivia
    source: trivia   # a named benchmark: <cache>/trivia.jsonl
    split: test
    n_items: 6   # sized for a 40-point smoke test
    seed: 1
    grader: checks.exact
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 10
"""


def test_a_named_benchmark_is_read_from_the_local_cache_and_pinned_by_content(
        repo: Repo, tmp_path: Path) -> None:
    cache = tmp_path / "benchmarks"
    env = {"GITEVALS_BENCHMARK_CACHE": str(cache)}
    # 4 goldens a bucket, not 20: this test reads the benchmark's slice and pin
    commit(repo, 4, 12, {"evals/drift-suite.yaml": NAMED, "bench/trivia.jsonl": trivia(),
                         "evals/goldens.jsonl": goldens(4)})
    lint = run_cli("lint", cwd=repo.path, env=env)
    assert lint.code == 1 and (
        "GE631 trivia: the named benchmark 'trivia' is not in the local cache: "
        f"{cache}/trivia.jsonl does not exist; put its JSONL file there") in lint.out
    run = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path, env=env)
    assert run.code != 0 and f"{cache}/trivia.jsonl does not exist" in run.err
    assert run.err.splitlines()[-1] == ("gitevals: the goldens do not lint and were not run; "
                                        "fix them (`gitevals lint`)")

    cache.mkdir()
    (cache / "trivia.jsonl").write_text(trivia())
    assert "GE631" not in run_cli("lint", cwd=repo.path, env=env).out
    res = run_cli("run", "--goldens-only", cwd=repo.path, env=env)
    assert res.code in (0, 1) and "benchmark trivia" in res.out, res.err
    (path,) = (repo.path / "evals/results").glob("*.json")
    part = json.loads(path.read_text())["goldens"]
    assert part["files"]["benchmark:trivia"] == repo.git("hash-object", str(cache / "trivia.jsonl"))
    assert ("benchmark", "trivia") in {(s["kind"], s["name"]) for s in part["slices"]}
    made = run_cli("baseline", str(path), "--model", "base-7b", cwd=repo.path, env=env)
    assert made.code == 0, made.err  # its note is evidence: the named pin is not a tree path
    repo.commit(msg="baseline")

    (cache / "trivia.jsonl").write_text(trivia().replace('"b1"', '"changed"'))
    rerun = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path, env=env)
    assert rerun.code in (0, 1), rerun.err
    newest = max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    gate = run_cli("gate", str(newest), "--baseline", "base-7b", cwd=repo.path, env=env)
    assert gate.code == 2 and "benchmark:trivia was " in gate.err, gate.err
