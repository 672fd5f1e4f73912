"""The supervisor speaks JSON to a python target's warm worker (``pyworker.py``, maybe under
another interpreter) without importing ``json`` (``reaper._to_worker``,
``reaper._from_worker``): what it writes is byte for byte ``json.dumps``, what it reads
is ``json.loads``' value, or ``json.loads``' very error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitevals.run import reaper

KEYS = st.text(max_size=8)
#: What the supervisor sends: strings (paths, a module:function, a program), ints, None,
#: lists of pids.
SENT = st.one_of(st.text(), st.integers(), st.none(), st.lists(st.integers(), max_size=4))
#: What a worker may send back: any JSON value, flat or not.
JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(),
                              st.floats(allow_nan=False)),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8)


@given(st.dictionaries(KEYS, SENT, max_size=5))
def test_what_the_supervisor_writes_is_json_dumps(
        message: dict[str, str | int | list[int] | None]) -> None:
    assert reaper._to_worker(message) == json.dumps(message).encode()


@given(st.dictionaries(KEYS, JSON, max_size=5) | JSON)
def test_what_it_reads_is_json_loads(value: object) -> None:
    data = json.dumps(value).encode()
    assert reaper._from_worker(data) == json.loads(data)


@pytest.mark.parametrize("data", [
    b'{"pid": 012}', b'{"pid": -}', b'{"pid": 1}}', b'{"ready": true,}', b'{"a": "\x01"}',
    b'{"a": tru}', b'{"a" : 1', b"", b"{", b'{"a": 1, }'])
def test_what_json_refuses_it_refuses_with_jsons_error(data: bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(data)
    with pytest.raises(json.JSONDecodeError) as got:
        reaper._from_worker(data)
    assert str(got.value) == str(expected.value)


def test_the_workers_own_messages_are_read_without_json() -> None:
    # pyworker's answers, as it writes them: the flat reader takes every one
    for answer in ({"ready": True}, {"error": "m:f does not load: ImportError: é"},
                   {"pid": 12, "holder": 13}, {"error": "fork failed", "errno": 0},
                   {"reaped": True}):
        assert reaper._flat(json.dumps(answer)) == answer
