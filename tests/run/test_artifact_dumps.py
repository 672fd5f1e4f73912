"""``artifact.dumps`` (``jsontext.dumps``) writes exactly the text ``json.dumps(v,
sort_keys=True, indent=1, ensure_ascii=False)`` writes, for any value: the canonical text
of a run is what its sha256, its archive and its notes are made of, so one byte of
difference would orphan every run already stored. Where the fast walk gives up, json
itself writes the text, or raises the very error it raised before.
"""

from __future__ import annotations

import collections
import enum
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals import jsontext
from gitevals.run import artifact
from gitevals.run.archive import digest
from tests.conftest import Repo, run_cli
from tests.support.artifacts import sample
from tests.support.runs import SETTINGS_NO_SITE, only_artifact, scenario_case, setup


def reference(value: object) -> str:
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)


def same(value: object) -> None:
    """``jsontext.dumps`` writes what json writes, or raises what json raises."""
    try:
        expected = reference(value)
    except (ValueError, TypeError, RecursionError) as exc:
        with pytest.raises(type(exc)) as got:
            jsontext.dumps(value)
        assert str(got.value) == str(exc)
        return
    assert jsontext.dumps(value) == expected


# Every code point (lone surrogates included: json.loads makes them from "\ud800"), the
# control characters json escapes, and the ones it keeps as they are.
text = st.one_of(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
            max_size=10),
    st.text(st.sampled_from('\x00\x01\x1f\x7f"\\/\b\f\n\r\t\u2028\u2029\ud800\udfffé€😀'),
            max_size=6))
floats = st.one_of(st.floats(), st.sampled_from(
    [-0.0, 0.0, 1e300, -1e300, 5e-324, sys.float_info.max, 1e16, 1e-7, 0.1,
     math.nan, math.inf, -math.inf]))
ints = st.one_of(st.integers(), st.integers(min_value=-(10**400), max_value=10**400))
leaves = st.one_of(st.none(), st.booleans(), ints, floats, text)
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(text, inner, max_size=4)), max_leaves=25)


@settings(max_examples=200, deadline=None)
@given(values)
def test_any_json_value_is_written_as_json_writes_it(value: Any) -> None:
    assert jsontext.dumps(value) == reference(value)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=130), st.sampled_from(["list", "dict", "empty"]),
       leaves)
def test_nesting_of_any_depth_is_written_as_json_writes_it(depth: int, shape: str,
                                                            leaf: Any) -> None:
    value: Any = {} if shape == "empty" else leaf
    for i in range(depth):
        value = [value, i] if shape == "list" else {"k": value, "a": i}
    same(value)


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    # The deepest nesting json writes from here, found by bisection; around it json's
    # frames run out, and dumps must fail exactly where json does, not write text.
    ok, fails = 1, sys.getrecursionlimit()
    while fails - ok > 1:
        mid = (ok + fails) // 2
        try:
            reference(nested(mid))
            ok = mid
        except RecursionError:
            fails = mid
    for depth in (ok - 1, ok, fails, fails + 1):
        same(nested(depth))


class Level(enum.IntEnum):
    LOW = 1


class Ratio(float):
    def __repr__(self) -> str:
        return "a ratio"


class Name(str):
    def __repr__(self) -> str:
        return "a name"


class Listing(list[object]):
    pass


class Unsortable:
    pass


def cycle() -> list[object]:
    loop: list[object] = [1]
    loop.append(loop)
    return loop


@pytest.mark.parametrize("value", [
    # subclasses, which json writes by their base type's repr, whatever their own says
    {"level": Level.LOW, "levels": [Level.LOW], "ratio": Ratio(0.5), "name": Name("x")},
    collections.OrderedDict([("b", 1), ("a", collections.OrderedDict(z=[], y={}))]),
    collections.defaultdict(list, {"b": [Listing([1, "2"])], "a": ()}),
    {Name("key"): 1, "other": 2},  # a key that is a str subclass: json writes the text
    # keys json converts (numbers, bools, None) and keys it cannot order or write
    {1: "one", 2.5: "two and a half", False: "no", -1.5: "less"},
    {None: "nothing", "one": 1}, {1: "one", "two": 2},
    {(1, 2): "a tuple key"},
    # values json refuses, and what it makes of a cycle or an int past its repr limit
    {"set": {1, 2}}, [Unsortable()], cycle(), [10 ** 5000],
    # top-level scalars and empty containers
    "a\x00b\ud800", 0, -0.0, math.nan, True, None, {}, [], (), {"a": {"b": [[], {}]}},
])
def test_values_outside_the_fast_path_come_out_as_json_makes_them(value: object) -> None:
    same(value)


def test_a_contract_complete_artifact_is_its_canonical_text() -> None:
    run: Any = sample()
    assert artifact.dumps(run) == reference(run) + "\n"
    assert artifact.load(artifact.dumps(run).encode()) == run


def test_a_real_run_is_stored_as_json_writes_it_and_digests_as_before(repo: Repo) -> None:
    setup(repo, {"one": scenario_case("one", trials=1)}, settings=SETTINGS_NO_SITE)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    run = only_artifact(repo)
    [path] = (repo.path / "evals" / "results").glob("*.json")
    text = Path(path).read_text(encoding="utf-8")
    assert text == artifact.dumps(run) == reference(json.loads(text)) + "\n"
    assert digest(run)[0] == hashlib.sha256(text.encode()).hexdigest()
