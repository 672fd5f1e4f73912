"""``gitevals doctor``: the seed's six Phase 0 items of a commit, through the real CLI on
a real repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli
from tests.support.doctor import JUDGE_TONE, SETTINGS, complete_tree, goldens


def doctor(repo: Repo, *args: str) -> tuple[int, dict[str, str], str]:
    res = run_cli("doctor", "--format", "json", *args, cwd=repo.path)
    assert res.err == "", res.err
    doc = json.loads(res.out)
    return res.code, {i["name"]: i["status"] for i in doc["items"]}, res.out


def test_an_empty_commit_misses_everything_but_states_judges_na(repo: Repo) -> None:
    repo.commit({"README": "x"})
    res = run_cli("doctor", cwd=repo.path)
    assert res.code == 1
    lines = res.out.splitlines()
    assert [line.split()[0] for line in lines[1:] if not line.lstrip().startswith("fix:")][
        :-1] == ["missing", "missing", "missing", "n/a", "missing", "missing"]
    assert "fix: label >= 100 items in evals/goldens.jsonl and commit it" in res.out
    assert "gitevals baseline ARTIFACT --model NAME" in res.out
    assert lines[-1] == "not Phase 0 complete: 5 of 6 missing"


def test_complete_with_deterministic_graders(repo: Repo) -> None:
    repo.commit(complete_tree())
    code, items, out = doctor(repo)
    assert code == 0, out
    assert items == {"goldens": "ok", "buckets": "ok", "graders": "ok", "judges": "n/a",
                     "drift suite": "ok", "baseline": "ok"}
    assert json.loads(out)["complete"] is True
    assert run_cli("doctor", cwd=repo.path).out.splitlines()[-1] == "Phase 0 complete"


def test_a_judge_needs_a_calibration_and_is_never_imported(repo: Repo) -> None:
    repo.commit(complete_tree(JUDGE_TONE))
    code, items, out = doctor(repo)
    assert code == 1 and items["judges"] == "missing"
    assert "tone.polite" in out and "evals/calibration/tone.polite.json" in out
    # a record is not enough: it must calibrate the judge (test_calibration_everywhere)
    repo.commit({"evals/calibration/tone.polite.json": json.dumps({"grader": "tone.polite"})})
    code, items, out = doctor(repo)
    assert code == 1 and items["judges"] == "missing"
    assert "tone.polite advisory (its calibration record cannot be used" in out


def test_only_committed_files_count(repo: Repo) -> None:
    tree = complete_tree()
    baseline = tree.pop("evals/baseline-base-7b.json")
    repo.commit(tree)
    repo.write({"evals/baseline-base-7b.json": baseline})  # written, not committed
    code, items, _ = doctor(repo)
    assert code == 1 and items["baseline"] == "missing"


@pytest.mark.parametrize(("buckets", "status"), [
    (("format",), "missing"), (("a", "b", "c", "d", "e", "f", "g", "h", "i"), "missing"),
    (("format", "tone", "tools", "facts"), "ok")], ids=["one", "nine", "four"])
def test_bucket_floor(repo: Repo, buckets: tuple[str, ...], status: str) -> None:
    repo.commit({"evals/goldens.jsonl": goldens(100, buckets)})
    assert doctor(repo)[1]["buckets"] == status


def test_single_surface_states_one_or_two_buckets_na(repo: Repo) -> None:
    repo.commit({"evals/goldens.jsonl": goldens(100, ("schema", "fields"))})
    assert doctor(repo)[1]["buckets"] == "missing"
    assert doctor(repo, "--single-surface")[1]["buckets"] == "n/a"


def test_unmapped_bucket_and_unresolved_grader(repo: Repo) -> None:
    tree = complete_tree()
    tree["pyproject.toml"] = SETTINGS.replace('"checks.exact"', '"checks.nope"')
    repo.commit(tree)
    code, items, out = doctor(repo)
    assert code == 1 and items["graders"] == "missing" and "checks.nope" in out
    repo.commit({"evals/goldens.jsonl": goldens(100, ("format", "tone", "tools", "style"))})
    code, items, out = doctor(repo)
    assert code == 1 and items["graders"] == "missing"
    assert "no grader for bucket(s) style" in out


def test_settings_that_do_not_load_are_named(repo: Repo) -> None:
    tree = complete_tree()
    tree["pyproject.toml"] = "[tool.gitevals.goldens]\ngraders = {format = \n"
    repo.commit(tree)
    code, items, out = doctor(repo)
    assert code == 1 and items["graders"] == "missing"
    assert "pyproject.toml:2:" in out and "gitevals lint" in out


def test_rev_checks_an_older_commit(repo: Repo) -> None:
    repo.commit({"evals/goldens.jsonl": goldens(10)})
    repo.commit(complete_tree())
    assert doctor(repo, "--rev", "HEAD~1")[1]["goldens"] == "missing"
    assert doctor(repo)[1]["goldens"] == "ok"


def test_outside_a_repository_is_one_line_exit_2(tmp_path: Path) -> None:
    res = run_cli("doctor", cwd=tmp_path)
    assert res.code == 2 and res.out == "" and res.err.count("\n") == 1
    assert "git init" in res.err


@pytest.mark.parametrize("garbage", ["{}\n", "not json\n", '{"format": "gitevals-run/1"}\n'],
                         ids=["empty-object", "not-json", "a-run"])
def test_a_garbage_baseline_is_not_a_baseline(repo: Repo, garbage: str) -> None:
    """Issue 23 item 9: doctor and lint check baseline-*.json against its schema."""
    repo.commit({**complete_tree(), "evals/baseline-base-7b.json": garbage})
    code, items, out = doctor(repo)
    assert (code, items["baseline"]) == (1, "missing"), out
    assert "evals/baseline-base-7b.json is not a gitevals baseline" in out
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1
    assert "evals/baseline-base-7b.json:1:1: GE640 not a gitevals baseline: " in lint.out
