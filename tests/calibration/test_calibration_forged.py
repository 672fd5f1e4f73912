"""Issue 25 (items 6, 12, 15): calibration records are checked against what they claim,
the sealed split stays spent when its record is removed, and the labels file is read
only when it is a regular file. Real CLI, real repositories, a fake judge on 127.0.0.1."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from gitevals.calibration.metrics import split_of
from gitevals.calibration.record import items_digest
from tests.conftest import Repo, run_cli
from tests.support.calibration import ONE_JOB, answer, labels, setup
from tests.support.calibration_records import LABELS, record
from tests.support.judges import FakeJudge


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"], ids=["device", "fifo"])
def test_labels_that_are_not_a_regular_file_are_one_line(
        repo: Repo, judge: FakeJudge, path: str) -> None:
    setup(repo, judge)
    if path == "fifo":
        os.mkfifo(repo.path / "fifo")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", path, cwd=repo.path, timeout=30)
    assert res.code == 2 and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert "not a regular file" in res.err
    assert not judge.requests


def test_a_nan_label_is_called_nan_not_a_number_too_large(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    rows = labels(120).splitlines()
    (repo.path / "bad.jsonl").write_text("\n".join([*rows, '{"id": "z", "label": NaN}']) + "\n")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "bad.jsonl", cwd=repo.path)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert "bad.jsonl:121:1:" in res.err and "NaN" in res.err
    assert "too large" not in res.err


# -- item 6: a record is checked against what it claims ---------------------------------

RECORD = "evals/calibration/q.tone.json"
MODEL = "judge-2026-01-15"


def _nan_tpr(doc: dict[str, Any]) -> None:
    doc["tpr"]["value"] = float("nan")


def _zero_of_zero(doc: dict[str, Any]) -> None:
    doc["items"], doc["labels"]["items_sha256"] = [], items_digest([])
    for key in ("tpr", "tnr"):
        doc[key] = {"value": None, "hits": 0, "of": 0, "low": None, "high": None}
    doc["splits"] = {"train": 0, "dev": 0, "test": 0}


def _from_the_future(doc: dict[str, Any]) -> None:
    doc["date"] = "2999-01-01T00:00:00Z"


def _better_rates(doc: dict[str, Any]) -> None:
    doc["tnr"].update(value=1.0, hits=doc["tnr"]["of"])


def _relabelled(doc: dict[str, Any]) -> None:
    for row in doc["items"]:
        row["said"] = row["label"]  # every item now judged right, the hash left as it was
    doc["tnr"].update(value=1.0, hits=doc["tnr"]["of"])


@pytest.mark.parametrize(("forge", "said"), [
    (_nan_tpr, "its TPR is not what its items give"),
    (_zero_of_zero, "it claims fewer than 100 labelled items"),
    (_from_the_future, "it is dated 2999-01-01T00:00:00Z, in the future"),
    (_better_rates, "its TNR is not what its items give"),
    (_relabelled, "the content hash of its items is not theirs"),
], ids=["nan-tpr", "0-of-0", "dated-2999", "edited-tnr", "edited-items"])
def test_a_forged_record_leaves_the_grader_advisory_in_lint_and_run(
        repo: Repo, judge: FakeJudge, forge: Any, said: str) -> None:
    setup(repo, judge)
    doc = record(repo, "q.tone", MODEL, fail_judged_pass=0.5)  # genuine, below the bar
    forge(doc)
    repo.commit({RECORD: json.dumps(doc, indent=1)}, msg="forged record")
    lint = run_cli("lint", cwd=repo.path)
    assert "GE511" in lint.out and said in lint.out, lint.out + lint.err
    answer(judge, "PASS")
    res = run_cli("run", *ONE_JOB, "--no-note", "--format", "json", cwd=repo.path)
    status = json.loads(res.out)["judge_calibration"]["q.tone"]
    assert (status["status"], status["code"]) == ("advisory", "GE511"), res.err


def test_a_genuine_record_still_calibrates(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    repo.commit({RECORD: json.dumps(record(repo, "q.tone", MODEL))}, msg="record")
    lint = run_cli("lint", cwd=repo.path)
    assert "GE51" not in lint.out, lint.out


def test_removing_the_record_does_not_unspend_the_sealed_split(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    first = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                    cwd=repo.path)
    assert first.code == 0, first.out + first.err
    repo.commit(msg="calibrated")
    repo.git("rm", "-q", "evals/calibration/q.fair.json")
    repo.commit(msg="forget it")
    again = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                    cwd=repo.path)
    assert again.code == 2 and len(again.err.strip().splitlines()) == 1, again.err
    assert "already measured" in again.err and "does not unspend it" in again.err
    assert not (repo.path / "evals/calibration/q.fair.json").exists()


def test_an_edited_helper_the_grader_imports_uncalibrates_it(
        repo: Repo, judge: FakeJudge) -> None:
    grader = ("from helper import ask\n\n\ndef tone(t, case, run):\n"
              "    return ask(t, run['final_answer'])\n")
    setup(repo, judge, {"q": grader})
    repo.commit({"helper.py": "def ask(t, text):\n    return t.judge('polite? ' + text)\n"})
    repo.commit({RECORD: json.dumps(record(repo, "q.tone", MODEL))}, msg="record")
    assert "GE51" not in run_cli("lint", cwd=repo.path).out
    repo.commit({"helper.py": "def ask(t, text):\n    return True\n"}, msg="helper edited")
    lint = run_cli("lint", cwd=repo.path)
    assert "GE513" in lint.out, lint.out


# -- the record against the committed labels (second pass) -------------------------------


def _fewer_labels(repo: Repo) -> None:
    rows = (repo.path / LABELS).read_text().splitlines()[:120]
    repo.commit({LABELS: "\n".join(rows) + "\n"}, msg="labels cut to 120")


def _renamed_item(repo: Repo, doc: dict[str, Any]) -> None:
    listed = doc["items"][0]["id"]
    # a new id of the same split: the counts still agree, the item is not there
    new = next(f"renamed-{n}" for n in range(1000) if split_of(f"renamed-{n}")
               == split_of(listed))
    text = (repo.path / LABELS).read_text().replace(f'"{listed}"', f'"{new}"')
    repo.commit({LABELS: text}, msg="a listed item renamed")


def _flipped_label(repo: Repo, doc: dict[str, Any]) -> None:
    row = doc["items"][0]
    flipped = "fail" if row["label"] == "pass" else "pass"
    lines = []
    for line in (repo.path / LABELS).read_text().splitlines():
        item = json.loads(line)
        if item["id"] == row["id"]:
            item["label"] = flipped
        lines.append(json.dumps(item))
    repo.commit({LABELS: "\n".join(lines) + "\n"}, msg="a listed item relabelled")


def _removed_labels(repo: Repo) -> None:
    repo.git("rm", "-q", LABELS)
    repo.commit(msg="labels removed")


@pytest.mark.parametrize(("forge", "said"), [
    (lambda repo, doc: _fewer_labels(repo),
     f"{RECORD} counts 200 labelled items (train 37, dev 79, test 84), {LABELS} holds 120 ("),
    (_renamed_item, f"{RECORD} lists item 'item-"),
    (_flipped_label, f"{RECORD} has item 'item-"),
    (lambda repo, doc: _removed_labels(repo),
     f"{RECORD} was measured on {LABELS}, which is not in the tree"),
], ids=["claims-more-items", "unknown-item", "other-label", "labels-gone"])
def test_a_record_that_the_committed_labels_do_not_bear_out_is_refused(
        repo: Repo, judge: FakeJudge, forge: Any, said: str) -> None:
    setup(repo, judge)
    doc = record(repo, "q.tone", MODEL)  # genuine: it calibrates (test above)
    repo.commit({RECORD: json.dumps(doc, indent=1)}, msg="record")
    forge(repo, doc)
    lint = run_cli("lint", cwd=repo.path)
    found = [ln for ln in lint.out.splitlines() if "GE511" in ln]
    assert found and all(said in ln and "commit the labels file it was measured on, or "
                         "calibrate again" in ln for ln in found), lint.out + lint.err
    check = run_cli("publish-check", cwd=repo.path)
    assert "Traceback" not in check.err
    assert any("GE511" in ln and said in ln for ln in check.out.splitlines()), check.out
    answer(judge, "PASS")
    res = run_cli("run", *ONE_JOB, "--no-note", "--format", "json", cwd=repo.path)
    status = json.loads(res.out)["judge_calibration"]["q.tone"]
    assert (status["status"], status["code"]) == ("advisory", "GE511"), res.err
    assert said in status["reason"]


def test_calibrate_records_the_labels_path_from_the_repository_root(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "PASS")
    (repo.path / "sub").mkdir()
    res = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "../labels.jsonl",
                  cwd=repo.path / "sub")
    assert res.code in (0, 1), res.out + res.err
    doc = json.loads((repo.path / "evals/calibration/q.fair.json").read_text())
    assert doc["labels"]["path"] == "labels.jsonl"
    assert "is not committed as measured" not in res.err
