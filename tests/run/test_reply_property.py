"""Issue 8, class 1, as a property: whatever JSON a target replies (deep nesting, lone
surrogates, huge numbers, odd shapes), the run is never lost: the reply is either kept
or a protocol error of its trial, and the run always writes and reads back schema-valid.

The path is the one ``gitevals run`` takes for each turn (``parse_reply``, the
transcript, scoring, ``dumps``), without processes so hypothesis can try thousands.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.run import artifact
from gitevals.run.scoring import score_trial, verdict
from gitevals.run.targets import TargetError, parse_reply

EXPECT: list[dict[str, Any]] = [
    {"final_answer_contains": "Paris"}, {"no_error": True},
    {"tool_called": {"name": "t", "args": {"a": {"b": [1]}}}},
    {"result_contains": {"name": "t", "substring": "x"}}, {"hook_called": {"name": "h"}},
]

text = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                   exclude_categories=()), max_size=12),
    st.sampled_from(["\ud800", "a\udfffb", "\udbff\udc00", "\x1b[2J", "\u2028"]))
numbers = st.one_of(st.integers(min_value=-(10**400), max_value=10**400),
                    st.floats(allow_nan=False, allow_infinity=False))
leaves = st.one_of(st.none(), st.booleans(), numbers, text)
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=12)
calls = st.lists(st.fixed_dictionaries({"name": st.one_of(st.just("t"), text)},
                                       optional={"args": st.one_of(values, text),
                                                 "result": values}), max_size=3)
replies = st.fixed_dictionaries(
    {"final_answer": st.one_of(st.none(), text)},
    optional={"tool_calls": calls, "hooks": calls, "error": st.one_of(st.none(), text),
              "extra": values, "usage": values})


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def _run_of(reply_line: bytes) -> artifact.Run:
    try:
        replies = [parse_reply(reply_line)]
        error = None
    except TargetError as exc:
        replies, error = [], exc.as_dict()
    t = artifact.transcript(replies, 1)
    assertions, passed = score_trial(EXPECT, t, [], error)
    trial: artifact.Trial = {"trial": 0, "transcript": t, "error": error, "graders": [],
                             "assertions": assertions, "passed": passed}
    scenario: artifact.ScenarioRun = {"id": "s", "user": ["q"], "expect": EXPECT, "trials": 1,
                                      "timeout": 5, "results": [trial],
                                      "verdict": verdict([trial])}
    return {"format": artifact.FORMAT, "run_id": "20261130T000000Z-0123456789ab-abcdef",
            "tool_version": "0", "rev": "HEAD", "commit": "1" * 40, "tree": "2" * 40,
            "dirty": False, "dirty_diff": None, "root": "evals", "settings": {},
            "files": {}, "started_at": "2026-11-30T00:00:00Z",
            "finished_at": "2026-11-30T00:00:01Z", "duration_ms": 1, "interrupted": False,
            "options": {"cases": [], "trials": None, "jobs": 1},
            "cases": [{"name": "c", "path": "evals/cases/c.yaml", "blob": None,
                       "scenarios": [scenario]}]}


@settings(max_examples=300, deadline=None)
@given(reply=replies, depth=st.sampled_from([0, 1, 150, 199, 250, 5000]),
       ascii_only=st.booleans())
def test_any_reply_leaves_a_valid_run(reply: dict[str, Any], depth: int,
                                      ascii_only: bool) -> None:
    reply = {**reply, "deep": _nest(reply.get("extra"), depth)}
    try:
        line = json.dumps(reply, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    except (RecursionError, ValueError):  # too deep or too long to even send: not a reply
        return
    run = _run_of(line)
    text = artifact.dumps(run)  # never raises: the run is always written
    assert artifact.load(text.encode()) == json.loads(text)
    (trial,) = run["cases"][0]["scenarios"][0]["results"]
    if trial["error"] is not None:
        assert trial["error"]["kind"] == "target_protocol"
