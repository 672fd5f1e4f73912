"""The artifact's goldens part (pure): typed like its schema, slices counted by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitevals.goldens.gate import Baseline
from gitevals.run.goldens import Goldens, SliceRate, SuiteItem, rescore, slices
from gitevals.validation import schema_path

RESULT = json.loads(schema_path("result").read_text())
BASELINE = json.loads(schema_path("baseline").read_text())


@pytest.mark.parametrize(("model", "schema"), [
    (Goldens, RESULT["$defs"]["goldens"]), (SuiteItem, RESULT["$defs"]["suite_item"]),
    (SliceRate, RESULT["$defs"]["slice"]), (Baseline, BASELINE),
], ids=["goldens", "item", "slice", "baseline"])
def test_typed_like_the_schema(model: Any, schema: dict[str, Any]) -> None:
    assert model.__required_keys__ == frozenset(schema["required"])
    assert model.__required_keys__ <= set(schema["properties"])
    assert model.__optional_keys__ <= set(schema["properties"])


def _item(kind: str, name: str, raw: object, error: bool = False,
          grader: str = "g.f") -> SuiteItem:
    answer: Any = {"index": 0, "name": grader, "raw": raw, "error": None, "duration_ms": 1}
    return {"kind": kind, "slice": name, "id": "x", "path": "p", "line": 1, "row": {},
            "grader": grader, "transcript": {"final_answer": None, "tool_calls": [],
                                             "hooks": [], "error": None, "turns": [],
                                             "duration_ms": 0},
            "error": {"kind": "target_crash", "message": "boom"} if error else None,
            "answer": None if error else answer, "outcome": None, "passed": False}


def test_slices_count_each_bucket_on_its_own() -> None:
    items = [_item("bucket", "b", True), _item("bucket", "b", False),
             _item("bucket", "b", {"pass": True, "score": 1}), _item("bucket", "b", "?"),
             _item("bucket", "a", True, error=True), _item("benchmark", "m", True),
             _item("benchmark", "m", True, grader="h.g")]
    part: Goldens = {"graders": {"a": "g.f", "b": "g.f"}, "buckets": None, "budget": None,
                     "files": {}, "items": items, "slices": []}
    scored = rescore(part)
    assert [(s["kind"], s["name"], s["grader"], s["passed"], s["total"], s["errors"])
            for s in scored["slices"]] == [
        ("bucket", "a", "g.f", 0, 1, 1),          # lost to a crash: not passed, an error
        ("bucket", "b", "g.f", 2, 4, 1),          # "?" is malformed: an error, not a decision
        ("benchmark", "m", None, 2, 2, 0)]        # graded per row by two graders
    assert slices([]) == []
    regraded = rescore(part, {"a": "g.f", "b": "g.other"})
    b = next(s for s in regraded["slices"] if s["name"] == "b")
    assert (b["grader"], b["passed"], b["errors"]) == ("g.other", 0, 4)
