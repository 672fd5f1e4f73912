"""A python target's warm worker (``pyworker.py``) reads and writes JSON with json's own C
parts, without importing ``json`` at its start (``re`` and ``enum`` come with it): what it
reads is ``json.loads``' value or very error, what it writes is ``json.dumps``' text or
very error, for any text and any reply (what it imports at its start:
``tests/test_start_imports.py``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gitevals.run import pyworker
from tests.support.values import same

TEXT = st.text(st.characters(codec=None, categories=None), max_size=6)
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | TEXT)
VALUES = st.recursive(SCALARS, lambda inner: (
    st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(TEXT, inner, max_size=3)
    | st.dictionaries(st.integers() | st.booleans() | st.none(), inner, max_size=2)),
    max_leaves=12)
#: Texts near JSON: written values, cut or padded, and any text at all.
LINES = (VALUES.map(lambda v: json.dumps(v) if not isinstance(v, tuple) else "[")
         | st.tuples(VALUES.map(json.dumps), st.sampled_from(["", "\n", " x", "}", " \t\n"]),
                     st.sampled_from(["", " ", "\ufeff", "\n"])).map(lambda t: t[2] + t[0] + t[1])
         | st.text(max_size=12))


def _outcome(call: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", call(*args)
    except Exception as exc:
        return type(exc).__name__, str(exc)


@given(LINES)
def test_what_it_reads_is_json_loads(text: str) -> None:
    got, expected = _outcome(pyworker._loads, text), _outcome(json.loads, text)
    assert got[0] == expected[0] and (same(got[1], expected[1]) if got[0] == "value"
                                      else got[1] == expected[1]), (text, got, expected)
    data = text.encode("utf-8", "surrogatepass")
    got, expected = _outcome(pyworker._loads_bytes, data), _outcome(json.loads, data)
    assert got[0] == expected[0] and (same(got[1], expected[1]) if got[0] == "value"
                                      else got[1] == expected[1]), (data, got, expected)


@given(st.dictionaries(TEXT, VALUES, max_size=4) | VALUES, st.booleans(), st.booleans())
def test_what_it_writes_is_json_dumps(value: Any, ascii_only: bool, nan: bool) -> None:
    got = _outcome(pyworker._dumps, value, ascii_only, nan)
    expected = _outcome(lambda: json.dumps(value, ensure_ascii=ascii_only, allow_nan=nan))
    assert got == expected, value


def test_a_reply_that_is_not_json_is_refused_as_json_refuses_it() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    for reply in ({"a": {1, 2}}, {"a": float("nan")}, loop, {"a": object()}):
        assert (_outcome(pyworker._dumps, reply, False, False)
                == _outcome(lambda r=reply: json.dumps(r, ensure_ascii=False,
                                                        allow_nan=False)))
    # the encoder is made anew for each reply: a failed one leaves nothing behind
    assert pyworker._dumps({"a": [1]}, False, False) == '{"a": [1]}'
