"""Issue 21 end to end: a real random harness, real runs at two commits, the real CLI.

The harness passes scenario s with probability rates.json[s], seeded by seed.txt, so
each commit draws its own trials and every outcome is fixed by the seeds (no flakes).
Scenarios live in several case files: each case is a cluster of the suite interval.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.conftest import Repo, run_cli
from tests.support.diffs import RANDOM_HARNESS as HARNESS
from tests.support.diffs import RANDOM_SETTINGS as SETTINGS

PER_CASE = 5


def _case(ids: list[str], trials: int, cluster: str | None = None) -> str:
    head = f"cluster: {cluster}\n" if cluster else ""
    body = "".join(f"  - id: {i}\n    user: What is the capital of France?\n"
                   f"    expect: [{{final_answer_contains: Paris}}]\n" for i in ids)
    return f"{head}defaults: {{trials: {trials}, timeout: 10s}}\nscenarios:\n{body}"


def _commit_and_run(repo: Repo, rates: dict[str, float], trials: int, seed: str,
                    clusters: dict[int, str] | None = None) -> str:
    ids = sorted(rates)
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                                     "rates.json": json.dumps(rates), "seed.txt": seed}
    for k in range(0, len(ids), PER_CASE):
        cluster = (clusters or {}).get(k // PER_CASE)
        files[f"evals/cases/c{k // PER_CASE:02d}.yaml"] = _case(ids[k:k + PER_CASE], trials,
                                                                cluster)
    sha = repo.commit(files, seed)
    r = run_cli("run", "--jobs", "4", cwd=repo.path, timeout=900)
    assert r.code in (0, 1), r.err
    return sha


def _diff(repo: Repo, a: str, b: str, *args: str) -> tuple[int, dict[str, object], str]:
    doc = run_cli("diff", a, b, "--format", "json", *args, cwd=repo.path, timeout=300)
    text = run_cli("diff", a, b, *args, cwd=repo.path, timeout=300)
    assert doc.code == text.code, (doc.err, text.err)
    return doc.code, json.loads(doc.out), text.out


def _junit(repo: Repo, a: str, b: str) -> ET.Element:
    res = run_cli("diff", a, b, "--format", "junit", cwd=repo.path, timeout=300)
    return ET.fromstring(res.out)


def _failed(root: ET.Element) -> set[tuple[str, str]]:
    return {(suite.get("name", ""), case.get("name", "")) for suite in root
            for case in suite.iter("testcase") if case.find("failure") is not None}


def test_an_unchanged_harness_is_not_flagged(repo: Repo) -> None:
    """The issue's measurement, smaller: 30 scenarios at 0.5/0.7/0.9, 6 trials, nothing
    changed. The seeds are a pair of runs on which the procedure before (``--control
    none``, every row at p < 0.05) calls a scenario regressed: the default does not, and
    the output says why a within-noise result is not "no change"."""
    rates = {f"s{i:02d}": (0.5, 0.7, 0.9)[i % 3] for i in range(30)}
    a = _commit_and_run(repo, rates, 6, "same-a8")
    b = _commit_and_run(repo, rates, 6, "same-b8")
    code, doc, text = _diff(repo, a, b)
    assert code == 0, text
    suite = doc["suite"]
    assert isinstance(suite, dict)
    assert {"estimate_pts", "ci_pts", "p", "change", "beyond_noise", "method", "scenarios",
            "mde_pts"} <= set(suite)
    assert suite["scenarios"] == 30 and suite["clusters"] == 6
    assert suite["beyond_noise"] is False
    lo, hi = suite["ci_pts"]
    assert lo < suite["estimate_pts"] < hi
    assert not any(v["beyond_noise"] for v in doc["verdicts"])
    assert all(v["q"] >= v["p"] for v in doc["verdicts"] if v["p"] is not None)
    lines = text.splitlines()
    assert lines[1].startswith("suite: ") and "within noise (not shown to have changed" in lines[1]
    assert "this suite can detect a " in lines[1] and "-point suite-wide drop" in lines[1]
    assert "Benjamini-Hochberg false discovery rate at 0.025 over 30 scenarios" in lines[2]
    assert "no regression" not in text and "no change" not in text
    # JUnit, as CI reads it: the suite first and passing, no scenario failing
    root = _junit(repo, a, b)
    assert root[0].get("name") == "suite" and root[0][1].get("name") == "suite"
    assert _failed(root) == set() and root.get("failures") == "0"
    props = {p.get("name"): p.get("value") for p in root[0].iter("property")}
    assert props["control"] == "fdr" and props["suite.beyond_noise"] == "False"
    # the procedure before issue 21: the same runs, a false alarm
    old, old_doc, _ = _diff(repo, a, b, "--control", "none")
    assert old == 1
    assert [v["scenario"] for v in old_doc["verdicts"]
            if v["beyond_noise"] and v["change"] == "regressed"] == ["s03"]


def test_a_uniform_drop_is_found_by_the_suite_test_alone(repo: Repo) -> None:
    """30 scenarios each lose 20 points at 6 trials: no scenario can show it under the
    control, the paired suite test does, and diff exits 1 on the suite alone."""
    before = {f"s{i:02d}": (0.95, 0.85, 0.75)[i % 3] for i in range(30)}
    after = {k: round(v - 0.2, 2) for k, v in before.items()}
    a = _commit_and_run(repo, before, 6, "drop-a0")
    b = _commit_and_run(repo, after, 6, "drop-b0")
    code, doc, text = _diff(repo, a, b)
    suite = doc["suite"]
    assert isinstance(suite, dict)
    assert code == 1, text
    assert suite["change"] == "regressed" and suite["beyond_noise"] is True
    assert suite["ci_pts"][1] < 0 and suite["p"] < 0.05
    assert not any(v["beyond_noise"] for v in doc["verdicts"])  # each within noise
    assert doc["counts"]["suite_regressed_beyond_noise"] == 1
    assert text.splitlines()[0].startswith("the suite regressed beyond noise, 0 regressed")
    assert "regressed beyond noise" in text.splitlines()[1]
    md = run_cli("diff", a, b, "--format", "markdown", cwd=repo.path).out.splitlines()
    assert md[0].startswith("**gitevals diff: the suite regressed beyond noise")
    assert md[2].startswith("- suite: ") and "regressed beyond noise" in md[2]
    root = _junit(repo, a, b)
    assert _failed(root) == {("suite", "suite")}
    failure = root[0].find("testcase/failure")
    assert failure is not None and failure.get("message", "").startswith("suite: -")
    # equivalence: a 5-point margin cannot be claimed, a 40-point one can
    assert _diff(repo, a, b, "--equivalence", "5", "--fail-on", "never")[0] == 0
    narrow = run_cli("diff", a, b, "--equivalence", "5", cwd=repo.path, timeout=300)
    assert narrow.code == 1 and "a drop larger than 5 pts is not ruled out" in narrow.out
    wide = json.loads(run_cli("diff", a, b, "--equivalence", "40", "--format", "json",
                              cwd=repo.path, timeout=300).out)["suite"]
    assert wide["no_drop"] is True and wide["p_no_drop"] < 0.05


def test_targeted_drops_are_found_and_named_under_the_control(repo: Repo) -> None:
    """4 of 25 scenarios fall 0.9 -> 0.1 at 8 trials, the rest unchanged: both controls
    call exactly those 4 and the outputs name them; on these runs the procedure before
    also calls an unchanged scenario (s00) regressed."""
    before = {f"s{i:02d}": (0.5, 0.7, 0.9)[i % 3] for i in range(25)}
    dropped = {"s02", "s08", "s14", "s20"}  # rate 0.9 before
    after = {k: (0.1 if k in dropped else v) for k, v in before.items()}
    a = _commit_and_run(repo, before, 8, "five-a95")
    b = _commit_and_run(repo, after, 8, "five-b95")
    for control in ("fdr", "fwer", "none"):
        code, doc, text = _diff(repo, a, b, "--control", control)
        assert code == 1
        called = {v["scenario"] for v in doc["verdicts"]
                  if v["change"] == "regressed" and v["beyond_noise"]}
        assert called == (dropped | {"s00"} if control == "none" else dropped), control
        named = {ln.split()[1] for ln in text.splitlines()
                 if ln.startswith("  c") and " beyond noise " in ln  # durations follow
                 and "within" not in ln}
        assert named == called, (control, text)
    root = _junit(repo, a, b)
    assert {name for suite, name in _failed(root) if suite != "suite"} == dropped


def test_declared_clusters_count_as_one(repo: Repo) -> None:
    """Cases naming one cluster are one cluster of the suite interval (from the runs)."""
    rates = {f"s{i:02d}": 0.7 for i in range(20)}
    shared = {0: "geo", 1: "geo", 2: "geo"}  # 3 of 4 case files share one cluster
    a = _commit_and_run(repo, rates, 4, "cl-a", shared)
    b = _commit_and_run(repo, rates, 4, "cl-b", shared)
    _, doc, _ = _diff(repo, a, b)
    suite = doc["suite"]
    assert isinstance(suite, dict)
    assert suite["scenarios"] == 20 and suite["clusters"] == 2
