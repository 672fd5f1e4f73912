"""Baseline, gate, diff per bucket and publish-check --require-gate: the real CLI on real
repositories, with a harness whose pass count per bucket is set in the commit."""

from __future__ import annotations

import json
from pathlib import Path

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, run_cli
from tests.support.gate import (
    GRADERS,
    SETTINGS,
    TARGET,
    based,
    commit,
    goldens,
    goldens_run,
    rerun,
)

__all__ = ["based", "rerun"]  # the fixtures, imported for pytest


def test_baseline_records_commit_target_rates_and_blobs(based: tuple[Repo, Path]) -> None:
    repo, artifact = based
    doc = json.loads((repo.path / "evals/baseline-base-7b.json").read_text())
    run = load_artifact(artifact)
    assert doc["commit"] == run["commit"] and doc["run_id"] == run["run_id"]
    assert doc["target"] == TARGET
    assert doc["target_env"] is None  # this run recorded no target environment
    assert [(s["name"], s["passed"], s["total"], s["rate"]) for s in doc["slices"]] == [
        ("format", 15, 20, 0.75), ("tone", 10, 20, 0.5)]
    blob = repo.git("rev-parse", f"{run['commit']}:evals/goldens.jsonl")
    assert doc["files"]["evals/goldens.jsonl"] == blob
    assert set(doc["files"]) == {"evals/goldens.jsonl", "evals/drift-suite.yaml",
                                 "evals/graders/checks.py"}
    again = run_cli("baseline", str(artifact), "--model", "base-7b", cwd=repo.path)
    assert again.code == 2 and "--force" in again.err
    assert run_cli("baseline", str(artifact), "--model", "../x", cwd=repo.path).code == 2


def test_gate_improved(based: tuple[Repo, Path]) -> None:
    repo, _ = based
    commit(repo, 19, 15)
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert res.out.startswith("gate: PASSED against baseline base-7b\n")
    rows = {ln.split()[1]: ln for ln in res.out.splitlines() if ln.startswith("bucket ")}
    assert "+20.0" in rows["format"] and rows["format"].rstrip().endswith("improved")
    assert "+25.0" in rows["tone"] and rows["tone"].rstrip().endswith("improved")


def test_gate_within_noise_is_unchanged(rerun: tuple[Repo, Path]) -> None:
    repo, artifact = rerun  # the same counts committed again and run; noise tolerance 2 pts
    res = run_cli("gate", str(artifact), "--baseline", "base-7b", "--format", "json",
                  cwd=repo.path)
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["passed"] is True
    assert [(s["name"], s["status"], s["delta_pts"]) for s in doc["slices"]] == [
        ("format", "unchanged", 0.0), ("tone", "unchanged", 0.0)]
    low, high = doc["slices"][0]["interval_pts"]
    assert low < 0 < high
    assert doc["budget"]["noise_tolerance_pts"] == 2 and doc["budget"]["source"] == "run"


def test_gate_hard_fail_in_one_bucket_while_another_improves(based: tuple[Repo, Path]) -> None:
    repo, _ = based
    commit(repo, 12, 20)  # format -15 pts (beyond 10 but within noise at 20 goldens)
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 0, res.out
    assert "beyond the threshold, within noise: not shown to have dropped" in res.out
    commit(repo, 3, 20)  # format -60 pts (beyond 10 and beyond noise), tone +50 pts
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", "--format",
                  "markdown", cwd=repo.path)
    assert res.code == 1, res.err
    assert res.out.startswith("**gate: FAILED against baseline base-7b: bucket format -60.0 "
                              "pts (a drop beyond 10 pts in any slice fails")
    rows = {r.split(" | ")[0]: r for r in res.out.splitlines() if r.startswith("| bucket")}
    assert rows["| bucket format"].endswith("| hard fail |")
    assert rows["| bucket tone"].startswith("| bucket tone | 10/20 50.0% | 20/20 100.0% | "
                                            "\\+50.0 |")
    assert rows["| bucket tone"].endswith("| improved |")


def test_no_baseline_no_comparison(repo: Repo) -> None:
    commit(repo, 15, 10, {"evals/goldens.jsonl": goldens(4)})  # no count is compared
    artifact = goldens_run(repo)
    res = run_cli("gate", str(artifact), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 2
    assert res.err.startswith("gitevals: error: no baseline, no comparison: "
                              "evals/baseline-base-7b.json does not exist")
    assert len(res.err.strip().splitlines()) == 1
    baseline = repo.path / "evals/baseline-base-7b.json"
    for text, what in (("{oops", "evals/baseline-base-7b.json: not JSON"),
                       ('{"format": "gitevals-baseline/1"}',
                        "evals/baseline-base-7b.json: not a gitevals baseline: at $: ")):
        baseline.write_text(text)
        res = run_cli("gate", str(artifact), "--baseline", "base-7b", cwd=repo.path)
        assert res.code == 2 and res.err.startswith(f"gitevals: error: {what}"), res.err
        assert len(res.err.strip().splitlines()) == 1


def test_a_baseline_of_other_goldens_is_another_measuring_stick(based: tuple[Repo, Path]
                                                                ) -> None:
    repo, _ = based
    # 4 goldens a bucket where the baseline measured 20: another file, whatever its size
    commit(repo, 15, 10, {"evals/goldens.jsonl": goldens(4)})
    res = run_cli("gate", str(goldens_run(repo)), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 2
    assert "measured with a different measuring stick: evals/goldens.jsonl was " in res.err
    assert res.out == ""


def test_diff_shows_a_bucket_that_dropped_while_another_rose(repo: Repo) -> None:
    commit(repo, 20, 0)
    repo.git("tag", "v1")
    commit(repo, 0, 20)
    repo.git("tag", "v2")
    for rev in ("v1", "v2"):
        assert run_cli("run", "--goldens-only", "--rev", rev, cwd=repo.path).code == 1
    res = run_cli("diff", "v1", "v2", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    assert res.out.startswith("1 goldens slice regressed beyond noise")
    rows = [ln.split() for ln in res.out.splitlines() if ln.startswith("  bucket ")]
    # p, then q (the slices are a family under the control), then the call
    assert [r[:10] for r in rows] == [
        ["bucket", "format", "20/20", "100.0%", "0/20", "0.0%", "regressed", rows[0][7],
         rows[0][8], "beyond"],
        ["bucket", "tone", "0/20", "0.0%", "20/20", "100.0%", "improved", rows[1][7],
         rows[1][8], "beyond"]]
    assert float(rows[0][8]) >= float(rows[0][7])
    doc = json.loads(run_cli("diff", "v1", "v2", "--format", "json", cwd=repo.path).out)
    assert [(s["name"], s["change"], s["beyond_noise"]) for s in doc["slices"]] == [
        ("format", "regressed", True), ("tone", "improved", True)]
    assert doc["slices"][0]["p"] < 1e-6


def test_show_and_score_rules_give_the_bucket_table(based: tuple[Repo, Path]) -> None:
    repo, artifact = based
    show = run_cli("show", str(artifact), cwd=repo.path)
    assert show.code == 1
    assert "bucket format  checks.exact  15/20   75.0%" in show.out
    # REV grades tone with another grader: the stored answers cannot decide it
    repo.commit({"pyproject.toml": SETTINGS.replace('tone = "checks.exact"',
                                                    'tone = "checks.other"'),
                 "evals/graders/checks.py": GRADERS + "\n\ndef other(t, case, run):\n"
                                                      "    return True\n"})
    res = run_cli("score", str(artifact), "--rules", "HEAD", "--format", "json", cwd=repo.path)
    assert res.code == 1, res.err
    slices = {s["name"]: s for s in json.loads(res.out)["goldens"]["slices"]}
    assert (slices["format"]["passed"], slices["format"]["rate"]) == (15, 0.75)
    assert (slices["tone"]["passed"], slices["tone"]["errors"]) == (0, 20)
    assert slices["tone"]["grader"] == "checks.other"
    # --regrade runs REV's graders on the stored transcripts: checks.other passes all
    res = run_cli("score", str(artifact), "--rules", "HEAD", "--regrade", "--format", "json",
                  cwd=repo.path)
    slices = {s["name"]: s for s in json.loads(res.out)["goldens"]["slices"]}
    assert [(slices[b]["passed"], slices[b]["errors"]) for b in ("format", "tone")] == [
        (15, 0), (20, 0)]


def test_publish_check_require_gate(based: tuple[Repo, Path]) -> None:
    repo, _ = based
    ok = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert ok.code == 1  # HEAD (the baseline commit) has no run pinned to it yet
    assert "GE639 --require-gate base-7b: no goldens run pinned to" in ok.out
    assert run_cli("run", "--goldens-only", cwd=repo.path).code == 1
    assert run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path).code == 0
    commit(repo, 5, 10)
    assert run_cli("run", "--goldens-only", cwd=repo.path).code == 1
    bad = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert bad.code == 1
    assert ("evals/baseline-base-7b.json:1:1: GE639 --require-gate base-7b: gate: FAILED "
            "against baseline base-7b: bucket format -50.0 pts") in bad.out
    assert run_cli("publish-check", cwd=repo.path).code == 0
