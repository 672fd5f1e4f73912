"""Issue 25 (items 7, 8, 13, 15): the goldens gate and its baseline cannot be forged by
editing a file. A baseline is checked against the run it copies; a run is read through
the commit it is pinned to; what does not lint is not gated; a grader's imported helper
is pinned. Real CLI, real repositories, the harness of test_goldens_gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli
from tests.support.gate import SUITE, based, commit, goldens, goldens_run, rerun

__all__ = ["based", "rerun"]  # the fixtures, imported for pytest

BASELINE = "evals/baseline-base-7b.json"


def _forge(repo: Repo, change: object) -> None:
    path = repo.path / BASELINE
    doc = json.loads(path.read_text())
    change(doc)  # type: ignore[operator]
    repo.commit({BASELINE: json.dumps(doc, indent=1)}, msg="forged baseline")


def _gate(repo: Repo, artifact: Path | str) -> tuple[int, str, str]:
    res = run_cli("gate", str(artifact), "--baseline", "base-7b", cwd=repo.path)
    return res.code, res.out, res.err


def _no_slices(doc: dict) -> None:  # type: ignore[type-arg]
    doc["slices"] = []


def _all_zero(doc: dict) -> None:  # type: ignore[type-arg]
    for s in doc["slices"]:
        s["passed"], s["rate"] = 0, 0.0


def _drop_format(doc: dict) -> None:  # type: ignore[type-arg]
    doc["slices"] = [s for s in doc["slices"] if s["name"] != "format"]


def _over_total(doc: dict) -> None:  # type: ignore[type-arg]
    doc["slices"][0]["passed"] = 25


@pytest.mark.parametrize(("forge", "said"), [
    (_no_slices, "it has no slice"),
    (_all_zero, "not what its run measured: its slices are not the ones run"),
    (_drop_format, "not what its run measured: its slices are not the ones run"),
    (_over_total, "has passed 25 and errors 0 of total 20: neither can exceed the total"),
], ids=["no-slices", "all-zero", "regressed-slice-removed", "passed-over-total"])
def test_a_forged_baseline_is_refused_by_gate_and_publish_check(
        based: tuple[Repo, Path], forge: object, said: str) -> None:
    repo, _ = based
    _forge(repo, forge)
    commit(repo, 5, 10)  # format drops 50 points
    artifact = goldens_run(repo, note=True)
    code, out, err = _gate(repo, artifact)
    assert code == 2 and out == "", out + err
    assert len(err.strip().splitlines()) == 1 and said in err, err
    res = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert res.code == 1 and "GE639" in res.out and said in res.out, res.out + res.err


def test_a_run_slice_the_baseline_does_not_cover_fails(rerun: tuple[Repo, Path]) -> None:
    repo, artifact = rerun  # the baseline's counts committed again and run
    from gitevals.goldens.gate import gate

    baseline = json.loads((repo.path / BASELINE).read_text())
    run = json.loads(artifact.read_text())
    baseline["slices"] = [s for s in baseline["slices"] if s["name"] != "format"]
    result = gate(baseline, run, BASELINE)
    assert not result.passed
    assert [(s.name, s.status) for s in result.failing] == [("format", "uncovered")]


def test_a_forged_artifact_in_results_does_not_get_a_release_through(
        based: tuple[Repo, Path]) -> None:
    repo, _ = based
    commit(repo, 5, 10)
    artifact = goldens_run(repo, note=True)  # the genuine run: format -50 pts, in the note
    refused = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert refused.code == 1 and "gate: FAILED" in refused.out
    doc = json.loads(artifact.read_text())  # forged: the format slice passes 15 of 20
    for s in doc["goldens"]["slices"]:
        if s["name"] == "format":
            s["passed"] = 15
    doc["finished_at"] = "2999-01-01T00:00:00Z"
    artifact.with_name(artifact.name.replace(".json", "-x.json")).write_text(json.dumps(doc))
    res = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert res.code == 1 and "gate: FAILED" in res.out, res.out + res.err


def test_an_artifact_whose_pins_are_not_its_commits_is_refused(
        based: tuple[Repo, Path]) -> None:
    repo, _ = based
    commit(repo, 15, 10, {"evals/graders/checks.py":
                          'def exact(t, case, run):\n    return True\n'})
    artifact = goldens_run(repo)
    doc = json.loads(artifact.read_text())
    head = json.loads((repo.path / BASELINE).read_text())
    doc["goldens"]["files"] = head["files"]  # claims the baseline's grader blob
    forged = repo.path / "forged.json"
    forged.write_text(json.dumps(doc))
    code, _, err = _gate(repo, forged)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "pins evals/graders/checks.py at" in err and "not a run of that commit" in err


def test_an_edited_helper_a_grader_imports_is_another_measuring_stick(repo: Repo) -> None:
    helper = "def same(a, b):\n    return a == b\n"
    grader = ("from helper import same\n\n\ndef exact(t, case, run):\n"
              "    return same(run['final_answer'], case['expected'])\n")
    # 4 goldens a bucket, not 20: the gate refuses on the helper's pin, not on a count
    few = goldens(4)
    commit(repo, 15, 10, {"helper.py": helper, "evals/graders/checks.py": grader,
                          "evals/goldens.jsonl": few})
    artifact = goldens_run(repo, note=True)
    assert run_cli("baseline", str(artifact), "--model", "base-7b", cwd=repo.path).code == 0
    doc = json.loads((repo.path / BASELINE).read_text())
    assert doc["files"]["helper.py"] == repo.git("rev-parse", "HEAD:helper.py")
    repo.commit(msg="baseline")
    # Every answer "wrong" now passes: the helper says yes to anything.
    commit(repo, 0, 0, {"helper.py": "def same(a, b):\n    return True\n",
                        "evals/graders/checks.py": grader, "evals/goldens.jsonl": few})
    code, out, err = _gate(repo, goldens_run(repo))
    assert code == 2 and out == ""
    assert "different measuring stick: helper.py was" in err, err


@pytest.mark.parametrize("value", [".inf", ".nan", "1000"], ids=["inf", "nan", "over-100"])
def test_a_drift_budget_that_is_not_a_finite_number_does_not_lint_nor_run(
        repo: Repo, value: str) -> None:
    commit(repo, 15, 10, {"evals/drift-suite.yaml":
                          SUITE.replace("hard_fail_threshold_pts: 10",
                                        f"hard_fail_threshold_pts: {value}")})
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1
    assert "GE630 hard_fail_threshold_pts is not a finite number of points" in lint.out
    res = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path)
    assert res.code != 0
    for path in (repo.path / "evals/results").glob("*.json"):
        json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c))


def test_goldens_with_a_duplicate_id_are_not_run_nor_baselined(
        based: tuple[Repo, Path]) -> None:
    repo, artifact = based
    rows = goldens().splitlines()
    commit(repo, 15, 10, {"evals/goldens.jsonl": "\n".join([*rows, rows[0]]) + "\n"})
    res = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path)
    assert res.code != 0 and "GE606" in res.out + res.err
    # A run of it made before (here: an artifact whose commit is moved onto it) is refused.
    doc = json.loads(artifact.read_text())
    doc["commit"] = repo.git("rev-parse", "HEAD")
    doc["tree"] = repo.git("rev-parse", "HEAD^{tree}")
    doc["goldens"]["files"]["evals/goldens.jsonl"] = repo.git(
        "rev-parse", "HEAD:evals/goldens.jsonl")
    moved = repo.path / "moved.json"
    moved.write_text(json.dumps(doc))
    base = run_cli("baseline", str(moved), "--model", "dup", cwd=repo.path)
    assert base.code == 2 and "does not lint" in base.err and "GE606" in base.err, base.err
    assert not (repo.path / "evals/baseline-dup.json").exists()


def test_a_drift_source_inside_dot_git_is_refused(repo: Repo) -> None:
    suite = SUITE + ("frozen_benchmarks:\n  - {name: cfg, source: .git/config, split: test, "
                     "n_items: 1, seed: 1}\n")
    commit(repo, 15, 10, {"evals/drift-suite.yaml": suite})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert "GE631 cfg: source '.git/config' is inside .git" in res.out, res.out


def test_an_experiment_sees_an_edited_helper_a_grader_imports(repo: Repo) -> None:
    from tests.support.experiments import GEO, HARNESS, SETTINGS

    grader = ("from helper import same\n\n\ndef exact(t, case, run):\n"
              "    return same(run['final_answer'], 'Paris')\n")
    case = GEO + "      - grader: {name: checks.exact}\n"
    c1 = repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                      "evals/cases/geo.yaml": case, "evals/graders/checks.py": grader,
                      "helper.py": "def same(a, b):\n    return a == b\n"})
    repo.commit({"helper.py": "def same(a, b):\n    return True\n"})
    res = run_cli("experiment", "--lane", f"a={c1}", "--lane", "b=HEAD", "--repeat", "1",
                  "--format", "json", cwd=repo.path)
    doc = json.loads(res.out) if res.out.startswith("{") else {}
    assert res.code != 0, res.out + res.err
    assert doc.get("controls_held") is not True
    assert "helper.py" in res.out + res.err
