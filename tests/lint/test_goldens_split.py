"""The ``split`` field of a golden: one of train, dev, test, holdout (GE605 otherwise),
and the fast check stays sound and fast with its ``enum``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.lint.goldens import fast_check, lint_goldens
from gitevals.validation import is_valid
from tests.conftest import Repo, run_cli

P = "evals/goldens.jsonl"


@pytest.mark.parametrize("split", ["train", "dev", "test", "holdout"])
def test_each_split_is_accepted_by_the_fast_check(split: str) -> None:
    assert fast_check()({"id": 1, "split": split})
    assert lint_goldens(f'{{"id": 1, "split": "{split}"}}\n'.encode(), P) == []


@pytest.mark.parametrize("text", ['"Train"', '"validation"', '""', "1", "null", '["test"]'],
                         ids=["case", "other word", "empty", "number", "null", "list"])
def test_anything_else_is_ge605_naming_the_choices(text: str) -> None:
    [f] = lint_goldens(f'{{"id": 1, "split": {text}}}\n'.encode(), P)
    assert (f.line, f.col, f.code) == (1, 11, "GE605")
    assert "holdout" in f.message and "split" in f.message


SPLITS = st.sampled_from(["train", "dev", "test", "holdout", "TEST", "", "x"]) | st.none() \
    | st.integers() | st.booleans() | st.lists(st.text(max_size=2), max_size=2)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"id": st.integers(min_value=0)}, optional={"split": SPLITS}))
def test_fast_check_never_accepts_a_split_the_schema_refuses(row: dict[str, Any]) -> None:
    assert fast_check()(row) == is_valid("golden", row)


def test_lint_cli_reports_a_bad_split(repo: Repo) -> None:
    repo.write({P: '{"id": "a", "split": "holdout"}\n{"id": "b", "split": "eval"}\n'})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert f"{P}:2:13: GE605" in res.out
