"""``gitevals.validation``: compiled checks, narrowed schemas, and jsonschema's explanation."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitevals import validation
from gitevals.validation import Violation, best_error, is_valid, json_path
from tests.support.artifacts import BAD, sample

#: The run artifact with its (many) trial records left opaque, as scoring checks it.
SKELETON = {"result": {"type": "object"}}


def _artifact_problem(doc: Any) -> str | None:
    """scoring.validate_artifact's schema part, built on this module's API alone."""
    if not is_valid("result", doc, defs=SKELETON):
        return _phrase(best_error("result", doc, defs=SKELETON), "$")
    for ci, case in enumerate(doc["cases"]):
        for si, scenario in enumerate(case["scenarios"]):
            for ri, record in enumerate(scenario["results"]):
                if not is_valid("result", record, definition="result"):
                    where = f"$.cases[{ci}].scenarios[{si}].results[{ri}]"
                    return _phrase(best_error("result", record, definition="result"), where)
    return None


def _phrase(v: Violation | None, where: str) -> str:
    assert v is not None
    return f"at {json_path(v.path, where)}: {v.message}; see schemas/result.schema.json"


SCHEMA_ROWS = [b for b in BAD if b[2].startswith("at $")]


@pytest.mark.parametrize(("data", "message"), [b[1:] for b in SCHEMA_ROWS],
                         ids=[b[0] for b in SCHEMA_ROWS])
def test_the_artifact_check_can_be_built_on_it(data: bytes, message: str) -> None:
    assert _artifact_problem(json.loads(data)) == message


def test_a_valid_artifact_passes_every_variant() -> None:
    doc = sample()
    assert _artifact_problem(doc) is None
    assert is_valid("result", doc) and best_error("result", doc) is None


def test_overridden_defs_leave_records_to_the_caller() -> None:
    doc = sample()
    record = doc["cases"][0]["scenarios"][0]["results"][0]
    record["passed"] = "yes"
    assert not is_valid("result", doc)
    assert is_valid("result", doc, defs=SKELETON)
    assert best_error("result", record, definition="result") == Violation(
        ("passed",), "type", "'yes' is not of type 'boolean'")


RECORD_EDITS: list[tuple[str, Any]] = [
    ("valid", lambda r: None),
    ("no-trial", lambda r: r.pop("trial")),
    ("negative-trial", lambda r: r.update(trial=-1)),
    ("bool-trial", lambda r: r.update(trial=True)),
    ("transcript-list", lambda r: r.update(transcript=[])),
    ("assertion-score-text", lambda r: r["assertions"][0].update(score="1")),
    ("error-kind", lambda r: r.update(error={"kind": "Bad", "message": "m"})),
]


@pytest.mark.parametrize("edit", [e[1] for e in RECORD_EDITS], ids=[e[0] for e in RECORD_EDITS])
def test_a_definition_validates_like_jsonschema_on_the_full_schema(edit: Any) -> None:
    record = copy.deepcopy(sample()["cases"][0]["scenarios"][0]["results"][0])
    edit(record)
    sub = {"$defs": validation.load("result")["$defs"], "$ref": "#/$defs/result"}
    expected = jsonschema.Draft202012Validator(sub).is_valid(record)
    assert is_valid("result", record, definition="result") is expected
    assert (best_error("result", record, definition="result") is None) is expected


def test_variants_are_cached_side_by_side(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "gitevals" / "schemas"
    validation._compiled("result", None, "")
    validation._compiled("result", "result", "")
    validation._compiled("result", None, json.dumps(SKELETON))
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 6  # source and bytecode of each: no variant prunes another
    validation._compiled("result", "result", "")  # loaded from the cache, not rebuilt
    assert sorted(p.name for p in folder.iterdir()) == names


def test_unwritable_cache_still_validates(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    check = validation._compiled("golden", None, "")
    with pytest.raises(ValueError):
        check({})


def test_document_narrows_and_overrides() -> None:
    full = validation.load("result")
    assert validation.document("result") is full
    narrowed = validation.document("result", definition="result", defs=SKELETON)
    assert narrowed == {"$defs": {**full["$defs"], **SKELETON}, "$ref": "#/$defs/result"}
    assert full["$defs"]["result"] != SKELETON["result"]  # the loaded schema is untouched


@pytest.mark.parametrize(("path", "root", "text"), [
    ((), "$", "$"),
    (("cases", 0, "scenarios", 12, "id"), "$", "$.cases[0].scenarios[12].id"),
    (("passed",), "$.cases[1]", "$.cases[1].passed"),
], ids=["root", "nested", "below-a-root"])
def test_json_path(path: tuple[str | int, ...], root: str, text: str) -> None:
    assert json_path(path, root) == text


def test_quick_check_is_the_compiled_one_for_other_shapes() -> None:
    assert validation.quick_check("case") is validation.validator("case")
    assert validation.quick_check("golden") is not validation.validator("golden")


@pytest.mark.parametrize(("doc", "ok"), [({"id": "a"}, True), ({"id": ""}, False),
                                         ({"id": [1]}, False), ("row", False)],
                         ids=["valid", "empty-id", "list-id", "not-an-object"])
def test_errors_and_is_valid_agree(doc: Any, ok: bool) -> None:
    assert is_valid("golden", doc) is ok
    assert (validation.errors("golden", doc) == []) is ok
