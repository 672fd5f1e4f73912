"""The grader worker's frames carry exactly what a JSON round trip carries: marshal for
plain JSON values (``plain``), JSON for the rest (tuples, non-string keys, NaN, subclasses,
lone surrogates, cycles, depth) -- a property test against ``json`` itself."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gitevals.run.graderworker import PLAIN_DEPTH, decode, encode, plain
from tests.support.values import same


class Text(str):
    pass


TEXT = st.text(st.characters(codec=None, categories=None), max_size=8)
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | TEXT
           | TEXT.map(Text))
KEYS = TEXT | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
VALUES = st.recursive(SCALARS, lambda inner: (
    st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)


@given(VALUES)
def test_a_frame_carries_what_a_json_round_trip_carries(value: Any) -> None:
    try:
        expected = json.loads(json.dumps(value, ensure_ascii=False).encode())
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        try:
            encode(value)
        except type(exc):
            return
        raise AssertionError(f"{value!r} framed, but JSON refuses it") from None
    body = encode(value)
    assert same(decode(body), expected), (value, body[:1])
    if body[:1] == b"M":
        assert plain(value)


def test_plain_values_go_as_marshal_and_the_rest_as_json() -> None:
    assert encode({"pass": True, "score": 0.5, "why": "é", "n": [1, None]})[:1] == b"M"
    for value in ((1, 2), {1: "a"}, float("nan"), Text("a"), [(1,)]):
        assert encode(value)[:1] == b"J", value
    deep: list[Any] = []
    for _ in range(PLAIN_DEPTH + 1):
        deep = [deep]
    assert encode(deep)[:1] == b"J" and same(decode(encode(deep)), deep)


def test_a_cycle_is_refused_as_json_refuses_it() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert not plain(loop) and not plain("\ud800")
    try:
        encode(loop)
    except ValueError as exc:
        assert "Circular reference" in str(exc)
    else:
        raise AssertionError("a cycle framed")
