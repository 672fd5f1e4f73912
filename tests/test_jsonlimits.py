"""``jsonlimits``: what JSON gitevals can hold, decided without recursion."""

from __future__ import annotations

import pytest

from gitevals import jsonlimits
from gitevals.jsonlimits import DEEP, NUMBER, SURROGATE

CASES = [
    ("flat", '{"id": 1, "x": [1, 2, {"y": "z"}]}', None),
    ("depth-200", "[" * 200 + "]" * 200, None),
    ("depth-201", "[" * 201 + "]" * 201, DEEP),
    ("depth-100000", "[" * 100_000 + "]" * 100_000, DEEP),
    ("objects-201", '{"a": ' * 201 + "1" + "}" * 201, DEEP),
    ("surrogate-value", '{"x": "a\\ud800b"}', SURROGATE),
    ("surrogate-key", '{"\\udc00": 1}', SURROGATE),
    ("valid-pair", '{"x": "\\ud83d\\ude00"}', None),
    ("int-4300-digits", "9" * 4300, None),
    ("int-4301-digits", "9" * 4301, NUMBER),
    ("float-overflow", "1e400", NUMBER),
    ("float-edge", "1.7e308", None),
]


@pytest.mark.parametrize(("text", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_loads_refuses_exactly_what_cannot_be_held(text: str, kind: str | None) -> None:
    if kind is None:
        jsonlimits.loads(text)
        return
    with pytest.raises(jsonlimits.Unholdable) as info:
        jsonlimits.loads(text)
    assert info.value.kind == kind
    assert str(info.value) == jsonlimits.ADVICE[kind]


def test_bad_json_stays_a_decode_error() -> None:
    with pytest.raises(ValueError) as info:
        jsonlimits.loads("{")
    assert not isinstance(info.value, jsonlimits.Unholdable)
