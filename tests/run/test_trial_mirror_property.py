"""The trial record is checked by a hand-written mirror of ``$defs/result``
(``gitevals.run.artifact.is_trial``, about twice as fast as the compiled schema per
record), and the two must agree (issue 22, item 3): a differential property test.

Documents are drawn valid, then zero to two of their values are broken at any depth
(a wrong type, a key removed, a key added, a value the schema's bounds refuse). The
compiled schema (``gitevals.validation``, the same file jsonschema explains with) and
the mirror must give the same answer, and the mirror must never raise.

The one difference allowed is the one JSON's data model makes: JSON does not tell 1
from 1.0, and Python's parser keeps NaN and Infinity, which JSON does not have. gitevals
writes integers as integers and never writes a non-finite number, so the mirror refuses
a float where the schema wants an integer, and a non-finite number: stricter, never
looser. Any other disagreement fails.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitevals import validation
from gitevals.run.artifact import is_trial

text = st.text(max_size=4)
counts = st.integers(min_value=0, max_value=10**6)
#: A float that is not a whole number, so a valid draw never leans on the 1 == 1.0 gap.
fractions = st.floats(min_value=0, max_value=1e6, allow_nan=False).filter(
    lambda x: not x.is_integer())
ms = st.one_of(counts, fractions)
leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), fractions, text)
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(text, inner, max_size=2)), max_leaves=5)
kinds = st.from_regex(r"\A[a-z][a-z0-9_]{0,6}\Z")
errors = st.one_of(st.none(), st.fixed_dictionaries({"kind": kinds, "message": text}))
named = st.lists(st.fixed_dictionaries({"name": text}, optional={"args": values}), max_size=2)
rewards = st.one_of(st.integers(0, 1), st.floats(0, 1).filter(lambda x: not x.is_integer()))

transcripts = st.fixed_dictionaries({
    "final_answer": st.one_of(st.none(), text), "tool_calls": named, "hooks": named,
    "error": values, "turns": st.lists(values, max_size=2), "duration_ms": ms})
usages = st.fixed_dictionaries({k: counts for k in (
    "calls", "reported", "prompt_tokens", "completion_tokens")})
graders = st.fixed_dictionaries(
    {"index": counts, "name": text, "raw": values, "error": errors, "duration_ms": ms},
    optional={"usage": usages})
assertions = st.fixed_dictionaries(
    {"index": counts, "kind": text, "passed": st.booleans(), "message": text,
     "error": errors, "score": st.one_of(st.none(), st.integers(-3, 3), fractions)},
    optional={"advisory": st.booleans()})
iterations = st.fixed_dictionaries({
    "iteration": counts, "message": text, "rewards": st.dictionaries(text, rewards, max_size=2),
    "reward": st.one_of(st.none(), rewards), "passed": st.booleans(),
    "verifier_exit": st.one_of(st.none(), st.integers(-2, 255)), "verifier_tail": text,
    "attempts": counts, "error": errors, "duration_ms": ms})
task_trials = st.fixed_dictionaries({
    "state": st.sampled_from(["satisfied", "needs_revision", "max_iterations_reached", "error"]),
    "final_reward": st.one_of(st.none(), rewards), "sandbox": st.sampled_from(
        ["bwrap", "none", "harbor"]), "iterations": st.lists(iterations, max_size=2)})
placements = st.fixed_dictionaries({"node": text, "attempts": counts,
                                    "lost": st.lists(text, max_size=2)})
trials = st.fixed_dictionaries(
    {"trial": counts, "transcript": transcripts, "error": errors,
     "graders": st.lists(graders, max_size=2), "assertions": st.lists(assertions, max_size=2),
     "passed": st.booleans()},
    optional={"task": task_trials, "placement": placements})

#: What a broken value becomes: wrong types, out-of-bounds numbers, unhashable values
#: where a name is expected, kinds the pattern refuses, and the JSON-model gaps.
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), text, values,
    st.sampled_from([-1, -0.5, 1.5, 2, 1.0, 0.0, float("nan"), float("inf"), [], {}, [1],
                     {"a": 1}, "Bad", "1x", "a-b", "ok\n", "", "satisfied", "bwrap"]))


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*here, i))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


@st.composite
def documents(draw: st.DrawFn) -> Any:
    """A valid trial record with up to two values broken anywhere in it."""
    doc = copy.deepcopy(draw(trials))
    for _ in range(draw(st.integers(0, 2))):
        path = draw(st.sampled_from(_paths(doc)))
        if not path:
            doc = copy.deepcopy(draw(junk))  # junk is shared: never mutate it in place
            continue
        parent, key = _at(doc, path[:-1]), path[-1]
        how = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if how == "remove" and isinstance(parent, dict):
            del parent[key]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(text)] = copy.deepcopy(draw(values))
        else:
            parent[key] = copy.deepcopy(draw(junk))
    return doc


def _json_gap(doc: Any) -> bool:
    """Whether ``doc`` holds a float JSON would not tell from an integer, or one JSON
    does not have (NaN, Infinity): where the mirror may refuse what the schema keeps."""
    if isinstance(doc, float):
        return doc.is_integer() or not math.isfinite(doc)
    if isinstance(doc, dict):
        return any(_json_gap(v) for v in doc.values())
    if isinstance(doc, list):
        return any(_json_gap(v) for v in doc)
    return False


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_the_hand_mirror_and_the_schema_agree_on_every_trial(doc: Any) -> None:
    schema = validation.is_valid("result", doc, definition="result")
    mirror = is_trial(doc)  # never raises: a forged record is refused, not a traceback
    if mirror:
        assert schema, f"the mirror keeps a trial the schema refuses: {doc!r}"
    elif schema:
        assert _json_gap(doc), f"the mirror refuses a trial the schema keeps: {doc!r}"


@settings(max_examples=100, deadline=None)
@given(trials)
def test_every_unbroken_trial_is_kept_by_both(doc: Any) -> None:
    """The generator's valid half really is valid: the test above compares something."""
    assert validation.is_valid("result", doc, definition="result")
    assert is_trial(doc)


def test_the_gaps_the_property_found_stay_closed() -> None:
    """What the property found when it was written: the mirror raised on an unhashable
    task state, and kept an ``advisory`` that is not a boolean and a grader ``usage``
    that is not four counts, all of which the schema refuses."""
    base: dict[str, Any] = {
        "trial": 0, "error": None, "graders": [], "assertions": [], "passed": True,
        "transcript": {"final_answer": None, "tool_calls": [], "hooks": [], "error": None,
                       "turns": [], "duration_ms": 0}}
    task = {"state": [], "final_reward": None, "sandbox": "none", "iterations": []}
    grader = {"index": 0, "name": "g.f", "raw": True, "error": None, "duration_ms": 1}
    assertion = {"index": 0, "kind": "grader", "passed": True, "message": "", "error": None,
                 "score": None}
    broken = [{**base, "task": task},
              {**base, "assertions": [{**assertion, "advisory": "yes"}]},
              {**base, "graders": [{**grader, "usage": {"calls": -1}}]}]
    for doc in broken:
        assert not validation.is_valid("result", doc, definition="result")
        assert not is_trial(doc)
    assert is_trial({**base, "graders": [{**grader, "usage": {
        "calls": 1, "reported": 1, "prompt_tokens": 3, "completion_tokens": 4}}]})
