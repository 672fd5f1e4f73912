"""drift-suite.yaml: schema, lint, the filter language, deterministic samples, a run."""

from __future__ import annotations

import json

import pytest

from gitevals.goldens import drift, filters
from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli
from tests.support.drift import SUITE, tagged_goldens, trivia
from tests.support.gate import commit
from tests.support.paths import PROJECT

SEED_EXAMPLE = b"""\
# eval/drift-suite.yaml
frozen_benchmarks:
  - name: mmlu-subset
    source: mmlu
    split: test
    n_items: 500
    seed: 42
  - name: gsm8k-subset
    source: gsm8k
    split: test
    n_items: 250
    seed: 42
  - name: ifeval
    source: ifeval
    split: test
    n_items: 300
    seed: 42

domain_adjacent:
  path: eval/goldens.jsonl
  filter: "tag == 'drift-suite'"
  n_items_range: [200, 500]

drift_budget:
  noise_tolerance_pts: 1
  rerun_seed_variation_pts: [2, 5]
  hard_fail_threshold_pts: 5   # >5pt drop is a hard fail regardless of task-metric gains
"""


def test_the_seed_example_parses_and_is_warned_about_its_sizes() -> None:
    suite, found = drift.load_suite(SEED_EXAMPLE, "evals/drift-suite.yaml")
    assert suite is not None
    assert [(s.kind, s.name, s.n, s.seed) for s in suite.slices] == [
        ("benchmark", "mmlu-subset", 500, 42), ("benchmark", "gsm8k-subset", 250, 42),
        ("benchmark", "ifeval", 300, 42), ("domain", "domain_adjacent", 500, 0)]
    assert suite.budget == drift.Budget(1.0, 5.0, (2.0, 5.0))
    assert [f.code for f in found] == ["GE634"] * 4
    assert str(found[0]) == (
        "evals/drift-suite.yaml:3:5: GE634 (warning) mmlu-subset: n_items 500 gives a 95 % "
        "interval of ±4.4 pts, not under half the hard-fail threshold (2.5 pts); 1537 items "
        "would suffice (or say in a comment what budget this smaller suite was sized for)")


@pytest.mark.parametrize(("hard", "n"), [(5, 1537), (10, 385), (20, 97), (2, 9604)],
                         ids=["5pts", "10pts", "20pts", "2pts"])
def test_enough_items_is_the_least_n_under_half_the_threshold(hard: float, n: int) -> None:
    assert drift.enough_items(hard) == n
    assert drift.half_width(n) < hard / 2 <= drift.half_width(n - 1)


@pytest.mark.parametrize(("text", "row", "expected"), [
    ("tag == 'drift-suite'", {"tag": "drift-suite"}, True),
    ("tag == 'drift-suite'", {"tag": ["a", "drift-suite"]}, True),
    ("tag == 'drift-suite'", {"tag": "other"}, False),
    ("tag == 'drift-suite'", {}, False),
    ("tag != 'x' and level == 3", {"tag": "y", "level": 3}, True),
    ("not (a or b)", {"a": 0, "b": ""}, True),
    ("'ok' in notes", {"notes": "it is ok"}, True),
    ("'ok' not in tags", {"tags": ["ok"]}, False),
    ("meta.src == \"web\"", {"meta": {"src": "web"}}, True),
    ("x == null", {}, True),
], ids=["eq", "eq-list", "ne-value", "missing", "and", "not-or", "substring", "not-in",
        "nested", "null"])
def test_filter_language(text: str, row: dict[str, object], expected: bool) -> None:
    assert filters.matches(filters.parse(text), row) is expected


@pytest.mark.parametrize(("text", "col"), [
    ("tag = 'x'", 5), ("tag ==", 7), ("(tag", 5), ("tag 'x'", 5), ("__import__('os')", 11),
], ids=["single-eq", "dangling", "paren", "juxtaposed", "call"])
def test_a_bad_filter_says_where(text: str, col: int) -> None:
    with pytest.raises(filters.FilterError) as info:
        filters.parse(text)
    assert info.value.col == col


def test_samples_are_deterministic_and_stable_under_appends() -> None:
    rows = [{"id": f"q{i}", "split": "test" if i % 4 else "train", "input": "x"}
            for i in range(200)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    s = drift.Slice("benchmark", "b", "src.jsonl", 20, 7, "g.f", "test")
    first = drift.sample(s, data)
    assert len(first) == 20 and all(r["split"] == "test" for _, r in first)
    assert drift.sample(s, data) == first
    assert drift.sample(drift.Slice("benchmark", "b", "src.jsonl", 20, 8, "g.f", "test"),
                        data) != first
    more = data + b"".join(json.dumps({"id": f"n{i}", "input": "y"}).encode() + b"\n"
                           for i in range(5))
    kept = {r["id"] for _, r in drift.sample(s, more)} & {r["id"] for _, r in first}
    assert len(kept) >= 15  # appends displace at most one pick each


def test_a_run_sends_the_drift_slices_and_rates_each(repo: Repo) -> None:
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE, "bench/trivia.jsonl": trivia(),
                         "evals/goldens.jsonl": tagged_goldens()})
    lint = run_cli("lint", cwd=repo.path)
    assert "GE634" in lint.out and "385 items would suffice" in lint.out
    res = run_cli("run", "--no-note", "--goldens-only", cwd=repo.path)
    assert res.code == 1, res.err
    (path,) = (repo.path / "evals/results").glob("*.json")
    part = load_artifact(path)["goldens"]
    by = {(s["kind"], s["name"]): (s["passed"], s["total"]) for s in part["slices"]}
    trivia_ids = sorted(it["id"] for it in part["items"] if it["kind"] == "benchmark")
    assert len(trivia_ids) == 6 and all(int(i[1:]) < 10 for i in trivia_ids)  # split test
    assert by[("benchmark", "trivia")] == (sum(int(i[1:]) < 4 for i in trivia_ids), 6)
    assert by[("domain", "domain_adjacent")] == (5, 5)  # 6 tagged, at most 5, tone all pass
    assert by[("bucket", "tone")] == (12, 12) and by[("bucket", "format")] == (4, 4)
    assert part["budget"] == {"noise_tolerance_pts": 2, "hard_fail_threshold_pts": 10,
                              "rerun_seed_variation_pts": []}
    assert "bench/trivia.jsonl" in part["files"]
    assert "benchmark trivia" in res.out


@pytest.mark.parametrize(("suite", "code", "where"), [
    (SUITE.replace("tag == 'drift-suite'", "tag = 'drift-suite'"), "GE633", "10:11"),
    (SUITE.replace("bench/trivia.jsonl", "bench/nope.jsonl"), "GE631", "2:5"),
    (SUITE.replace("n_items: 6", "n_items: 60"), "GE632", "2:5"),
    (SUITE.replace("    grader: checks.exact\n", ""), "GE635", "2:5"),
    (SUITE.replace("hard_fail_threshold_pts: 10", "hard_fail_threshold_pts: 1"), "GE638",
     "14:28"),
    (SUITE.replace("seed: 1", "seed: one"), "GE630", "6:11"),
    (SUITE.replace("checks.exact", "checks.nope"), "GE504", "2:5"),
    (SUITE.replace("domain_adjacent:", "  - {name: trivia, source: bench/trivia.jsonl, "
                   "split: dev, n_items: 2, seed: 3, grader: checks.exact}\ndomain_adjacent:"),
     "GE636", "8:12"),
], ids=["filter", "missing-source", "too-few", "no-grader", "budget", "schema", "grader",
        "twice"])
def test_drift_suite_lint(repo: Repo, suite: str, code: str, where: str) -> None:
    commit(repo, 4, 12, {"evals/drift-suite.yaml": suite, "bench/trivia.jsonl": trivia(),
                         "evals/goldens.jsonl": tagged_goldens()})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert f"evals/drift-suite.yaml:{where}: {code} " in res.out, res.out


def test_a_source_line_that_is_not_an_object_is_reported_with_its_number(repo: Repo) -> None:
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE,
                         "bench/trivia.jsonl": trivia() + "[1, 2]\n{oops\n",
                         "evals/goldens.jsonl": tagged_goldens()})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert ("bench/trivia.jsonl:15:1: GE637 not a JSON object (and 1 more lines); the drift "
            "slice trivia reads one JSON object a line") in res.out


def test_a_sampled_row_that_cannot_be_sent_is_reported_at_its_line(repo: Repo) -> None:
    rows = trivia().splitlines()
    rows[2] = json.dumps({"id": "f02", "split": "test", "input": {"not": "text"}})
    rows[7] = json.dumps({"id": "f07", "split": "test", "input": []})
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE.replace("n_items: 6", "n_items: 10"),
                         "bench/trivia.jsonl": "\n".join(rows) + "\n",
                         "evals/goldens.jsonl": tagged_goldens()})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert ("bench/trivia.jsonl:3:1: GE613 \"input\" of this row of drift slice trivia (and 1 "
            "more) is not a string") in res.out


def test_the_documented_codes_are_the_ones_tests_exercise() -> None:
    import re

    root = PROJECT
    doc = (root / "docs" / "lint-codes.md").read_text()
    documented = set(re.findall(r"^\| (GE6[13]\d) \|", doc, re.M))
    # every test module (this check's own text aside): a code is exercised where any test
    # names it, in whichever folder the module lives
    tests = "".join(p.read_text().split("def test_the_documented")[0]
                    for p in sorted((root / "tests").rglob("test_*.py")))
    exercised = set(re.findall(r"GE6[13]\d", tests))
    assert documented == exercised, documented ^ exercised


def test_a_source_over_one_mib_is_read_in_the_working_tree(repo: Repo) -> None:
    big = "".join(json.dumps({"id": f"f{i:05d}", "split": "test", "input": "x" * 100,
                              "expected": "ok"}) + "\n" for i in range(12000))
    assert len(big) > 1 << 20
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE, "bench/trivia.jsonl": big,
                         "evals/goldens.jsonl": tagged_goldens()})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out
    assert "GE631" not in res.out and "GE104" not in res.out
