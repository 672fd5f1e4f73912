"""Issue #23 item 5: the sealed test split is spent per judge grader name once ``--final``
ran, whatever later edits (a new grader blob, another judge model, the record removed):
a new final needs a new labelled set, and the record lists the items each final consumed.
Real CLI, real repositories, a fake judge on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gitevals.calibration.metrics import split_of
from tests.conftest import Repo, git, run_cli
from tests.support import judges
from tests.support.calibration import FAIR, JUDGED, ONE_JOB, answer, judge_settings, setup
from tests.support.judges import FakeJudge

# one judge server a module (its repositories are built once), fresh for each test
module_judge = judges.module_judge
judge = judges.module_judge_fresh

RECORD = "evals/calibration/q.fair.json"


def _final(repo: Repo, labels: str = "labels.jsonl") -> Any:
    return run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", labels, "--final",
                   cwd=repo.path)


@pytest.fixture(scope="module")
def finaled_once(module_judge: FakeJudge, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repo of ``setup`` after its first ``--final`` (the judge answering PASS), the
    record written and not committed: made once a module, both tests start from it."""
    path = tmp_path_factory.mktemp("finaled") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    setup(repo, module_judge)
    answer(module_judge, "PASS")
    res = _final(repo)
    assert res.code == 0, res.out + res.err
    return path


@pytest.fixture
def finaled(finaled_once: Path, tmp_path: Path) -> Repo:
    """The test's own copy of the repo after its first final (``finaled_once``)."""
    shutil.copytree(finaled_once, tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo")


def _rows(ids: list[str], question: str = "question") -> str:
    """Labelled rows like ``test_calibrate._labels``: row ``i`` asks ``question i``."""
    out = []
    for i, item in enumerate(ids):
        ok = i < 180
        out.append({"id": item, "input": f"{question} {i}", "output": "good" if ok else "bad",
                    "label": "pass" if ok else "fail"})
    return "".join(json.dumps(r) + "\n" for r in out)


def _tested(ids: list[str]) -> list[str]:
    return sorted(i for i in ids if split_of(i) == "test")


def _record(repo: Repo) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((repo.path / RECORD).read_text())
    return doc


ORIGINAL = [f"item-{i}" for i in range(200)]  # the ids of test_calibrate's labels.jsonl


def test_a_final_records_which_items_it_consumed(finaled: Repo) -> None:
    repo = finaled
    [use] = _record(repo)["sealed"]
    assert [c["id"] for c in use["consumed"]] == _tested(ORIGINAL)
    assert all(len(c["content"]) == 16 for c in use["consumed"])
    data = (repo.path / "labels.jsonl").read_bytes()
    assert use["labels_sha256"] == hashlib.sha256(data).hexdigest()
    assert use["judge_model"] == "judge-2026-01-15"


def test_the_split_stays_spent_whatever_later_edits_until_a_new_labelled_set(
        finaled: Repo, judge: FakeJudge) -> None:
    repo = finaled
    answer(judge, "PASS")
    repo.commit(msg="calibrated")
    # a new grader blob, another judge model, and the record removed from the tree
    repo.commit({"evals/graders/q.py": JUDGED + "\n\n" + FAIR + "\n# reworded\n",
                 "pyproject.toml": judge_settings(judge, model="judge-2026-02-01")})
    repo.git("rm", "-q", RECORD)
    repo.commit(msg="forget the record")
    calls = len(judge.requests)
    again = _final(repo)
    n = len(_tested(ORIGINAL))
    assert again.code == 2 and len(again.err.strip().splitlines()) == 1, again.err
    assert "the sealed test split was already measured for q.fair" in again.err
    assert f"consumed {n} of the {n} test items of labels.jsonl" in again.err
    assert "does not unspend it" in again.err
    assert "a new final needs a new labelled set" in again.err
    assert len(judge.requests) == calls and not (repo.path / RECORD).exists()

    # the same items under new ids are the same items: refused by their content
    copies = [f"copy-{i}" for i in range(200)]
    overlap = [c for c, o in zip(copies, ORIGINAL, strict=True)
               if split_of(c) == "test" and split_of(o) == "test"]
    assert overlap  # some copies land in the test split their originals were in
    (repo.path / "copies.jsonl").write_text(_rows(copies))
    refused = _final(repo, "copies.jsonl")
    assert refused.code == 2, refused.out + refused.err
    assert (f"consumed {len(overlap)} of the {len(_tested(copies))} test items of "
            f"copies.jsonl (the first: {sorted(overlap)[0]!r})") in refused.err
    assert len(judge.requests) == calls

    # a new labelled set is measured; the record lists both finals' consumed items
    fresh = [f"new-{i}" for i in range(200)]
    (repo.path / "fresh.jsonl").write_text(_rows(fresh, "another question"))
    measured = _final(repo, "fresh.jsonl")
    assert measured.code == 0, measured.out + measured.err
    uses = _record(repo)["sealed"]
    assert [u["judge_model"] for u in uses] == ["judge-2026-01-15", "judge-2026-02-01"]
    assert [[c["id"] for c in u["consumed"]] for u in uses] == [_tested(ORIGINAL),
                                                               _tested(fresh)]
    # and the new set is spent in turn
    assert "already measured" in _final(repo, "fresh.jsonl").err
