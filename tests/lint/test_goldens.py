"""goldens.jsonl: each bad line -> code, line, col; the fast check never accepts a bad row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.lint.goldens import fast_check, lint_goldens
from gitevals.validation import compile_simple, is_valid, schema_path

P = "evals/goldens.jsonl"
GOOD = '{"id": "a", "input": "x", "label": "pass"}\n{"id": 2, "bucket": "b"}\n'

TABLE = [
    ("clean", GOOD, []),
    ("blank lines allowed", '\n{"id": 1}\n   \n{"id": 2}\n\n', []),
    ("bad json", '{"id": 1}\n{"id": 2,, "x": 1}\n', [(2, 10, "GE602")]),
    ("truncated", '{"id": 1}\n{"id": "b"\n', [(2, 11, "GE602")]),
    ("extra data", '{"id": 1} {"id": 2}\n', [(1, 11, "GE602")]),
    ("NaN refused", '{"id": 1, "score": NaN}\n', [(1, 20, "GE602")]),
    ("list", '[1, 2]\n', [(1, 1, "GE603")]),
    ("string", '  "just text"\n', [(1, 3, "GE603")]),
    ("null", 'null\n', [(1, 1, "GE603")]),
    ("missing id", '{"input": "x"}\n', [(1, 1, "GE604")]),
    ("id wrong type", '{"input": "x", "id": [1]}\n', [(1, 16, "GE605")]),
    ("id bool", '{"id": true}\n', [(1, 2, "GE605")]),
    ("id empty", '{"id": ""}\n', [(1, 2, "GE605")]),
    ("label number", '{"id": 1, "label": 3}\n', [(1, 11, "GE605")]),
    ("duplicate", '{"id": "a"}\n{"id": "b"}\n{"x": 1, "id": "a"}\n',
     [(3, 10, "GE606")]),
    ("duplicate across types", '{"id": 7}\n{"id": "7"}\n', [(2, 2, "GE606")]),
    ("duplicate int", '{"id": 7}\n{"id": 7}\n', [(2, 2, "GE606")]),
    ("not utf-8", b'{"id": 1}\n{"id": "\xff"}\n', [(2, 9, "GE601")]),
]


@pytest.mark.parametrize(("text", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_findings(text: str | bytes, expected: list[tuple[int, int, str]]) -> None:
    data = text if isinstance(text, bytes) else text.encode()
    findings = lint_goldens(data, P)
    assert [(f.line, f.col, f.code) for f in findings] == expected
    assert all(f.path == P and f.severity == "error" for f in findings)


def test_duplicate_names_both_lines() -> None:
    [f] = lint_goldens(b'{"id": "a"}\n{"id": "b"}\n{"id": "a"}\n', P)
    assert "also on line 1" in f.message and "line 3" in f.message


def test_schema_message_names_the_field() -> None:
    [f] = lint_goldens(b'{"id": 1, "label": 3}\n', P)
    assert "label" in f.message


def test_fast_check_is_built_from_the_shipped_schema() -> None:
    assert fast_check() is not is_valid  # the flat-schema check, not the compiled one
    assert compile_simple(json.loads(schema_path("golden").read_bytes())) is not None


def test_unknown_schema_shape_has_no_fast_check() -> None:
    assert compile_simple({"type": "object", "properties": {"id": {"pattern": "x"}}}) is None
    assert compile_simple({"type": "object", "additionalProperties": False}) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids,
                                                              max_size=3),
    max_leaves=6)
ROWS = st.dictionaries(st.sampled_from(["id", "input", "label", "bucket", "notes", "x"]), JSON,
                       max_size=5)


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_fast_check_never_accepts_what_the_schema_refuses(row: dict[str, Any]) -> None:
    if fast_check()(row):
        assert is_valid("golden", row)


def test_schema_file_is_valid_json_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json.loads(schema_path("golden").read_bytes()))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    for f in lint_goldens(data, P):
        assert f.code.startswith("GE60") and f.line >= 1 and f.col >= 1
