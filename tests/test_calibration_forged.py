"""Issue 25 (items 6, 12, 15): calibration records are checked against what they claim,
the sealed split stays spent when its record is removed, and the labels file is read
only when it is a regular file. Real CLI, real repositories, a fake judge on 127.0.0.1."""

from __future__ import annotations

import os

import pytest

from . import test_judge
from .conftest import Repo, run_cli
from .test_calibrate import _labels, _setup
from .test_judge import FakeJudge

judge = test_judge.judge


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"], ids=["device", "fifo"])
def test_labels_that_are_not_a_regular_file_are_one_line(
        repo: Repo, judge: FakeJudge, path: str) -> None:
    _setup(repo, judge)
    if path == "fifo":
        os.mkfifo(repo.path / "fifo")
    res = run_cli("calibrate", "q.tone", "--labels", path, cwd=repo.path, timeout=30)
    assert res.code == 2 and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert "not a regular file" in res.err
    assert not judge.requests


def test_a_nan_label_is_called_nan_not_a_number_too_large(repo: Repo, judge: FakeJudge) -> None:
    _setup(repo, judge)
    rows = _labels(120).splitlines()
    (repo.path / "bad.jsonl").write_text("\n".join([*rows, '{"id": "z", "label": NaN}']) + "\n")
    res = run_cli("calibrate", "q.tone", "--labels", "bad.jsonl", cwd=repo.path)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert "bad.jsonl:121:1:" in res.err and "NaN" in res.err
    assert "too large" not in res.err
