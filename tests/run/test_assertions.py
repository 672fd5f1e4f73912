"""The assertion registry: every kind passing and failing, in its own words."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.model import ASSERTION_KINDS
from gitevals.run.assertions import CHECKS, Outcome, check, subset_match
from tests.support.paths import SCHEMAS


def T(answer: str | None = "The capital of France is Paris.", calls: Any = (),
      hooks: Any = (), error: Any = None) -> dict[str, Any]:
    return {"final_answer": answer, "tool_calls": list(calls), "hooks": list(hooks),
            "error": error, "turns": [], "duration_ms": 5}


def call(name: str, args: Any = None, result: Any = None) -> dict[str, Any]:
    return {"name": name, "args": args if args is not None else {}, "result": result}


LS = call("shell__run", {"cmd": "ls", "cwd": "/home"}, "a\nb\n")
CAT = call("shell__run", {"cmd": "cat a"}, {"stdout": "Paris", "code": 0})
READ = call("files__read", {"path": "x.md", "opts": {"enc": "utf-8", "lines": [1, 2]}}, "notes")

CASES: list[tuple[str, str, Any, dict[str, Any], bool, str]] = [
    # id, kind, arg, transcript, passed, message
    ("tool_called-pass", "tool_called", {"name": "shell__run"}, T(calls=[LS, CAT]), True,
     "tool_called shell__run: called 2 times"),
    ("tool_called-never", "tool_called", {"name": "shell__run"}, T(calls=[READ]), False,
     "tool_called shell__run: never called"),
    ("tool_called-args-subset", "tool_called", {"name": "shell__run", "args": {"cmd": "ls"}},
     T(calls=[CAT, LS]), True, "tool_called shell__run: called with args {'cmd': 'ls'}"),
    ("tool_called-args-none", "tool_called", {"name": "shell__run", "args": {"cmd": "pwd"}},
     T(calls=[LS, CAT]), False,
     "tool_called shell__run: called 2 times, none with args {'cmd': 'pwd'}"),
    ("tool_called-nested-subset", "tool_called",
     {"name": "files__read", "args": {"opts": {"enc": "utf-8"}}}, T(calls=[READ]), True,
     "tool_called files__read: called with args {'opts': {'enc': 'utf-8'}}"),
    ("tool_called-list-must-equal", "tool_called",
     {"name": "files__read", "args": {"opts": {"lines": [1]}}}, T(calls=[READ]), False,
     "tool_called files__read: called 1 time, none with args {'opts': {'lines': [1]}}"),
    ("tool_not_called-pass", "tool_not_called", {"name": "rm"}, T(calls=[LS]), True,
     "tool_not_called rm: never called"),
    ("tool_not_called-fail", "tool_not_called", {"name": "shell__run"}, T(calls=[LS]), False,
     "tool_not_called shell__run: called 1 time"),
    ("tool_order-pass", "tool_order", {"first": "files__read", "then": "shell__run"},
     T(calls=[LS, READ, CAT]), True, "tool_order files__read before shell__run: "
     "call 2 before call 3"),
    ("tool_order-reversed", "tool_order", {"first": "files__read", "then": "shell__run"},
     T(calls=[LS, CAT, READ]), False, "tool_order files__read before shell__run: "
     "shell__run last called at call 2, files__read first called at call 3"),
    ("tool_order-first-missing", "tool_order", {"first": "files__read", "then": "shell__run"},
     T(calls=[LS]), False, "tool_order files__read before shell__run: files__read never called"),
    ("tool_order-then-missing", "tool_order", {"first": "files__read", "then": "shell__run"},
     T(calls=[READ]), False, "tool_order files__read before shell__run: shell__run never called"),
    ("min_tool_calls-pass", "min_tool_calls", {"name": "shell__run", "count": 2},
     T(calls=[LS, CAT]), True, "min_tool_calls shell__run 2: called 2 times"),
    ("min_tool_calls-fail", "min_tool_calls", {"name": "shell__run", "count": 2},
     T(calls=[LS, READ]), False, "min_tool_calls shell__run 2: called 1 time"),
    ("min_tool_calls-any-tool", "min_tool_calls", {"count": 3}, T(calls=[LS, READ, CAT]),
     True, "min_tool_calls any tool 3: called 3 times"),
    ("max_tool_calls-pass", "max_tool_calls", {"name": "shell__run", "count": 1},
     T(calls=[LS, READ]), True, "max_tool_calls shell__run 1: called 1 time"),
    ("max_tool_calls-fail", "max_tool_calls", {"name": "shell__run", "count": 1},
     T(calls=[LS, CAT]), False, "max_tool_calls shell__run 1: called 2 times"),
    ("result_contains-str", "result_contains", {"name": "shell__run", "substring": "b\n"},
     T(calls=[LS]), True, "result_contains shell__run 'b\\n': in the result of call 1 of 1"),
    ("result_contains-json", "result_contains",
     {"name": "shell__run", "substring": '"stdout": "Paris"'}, T(calls=[LS, CAT]), True,
     "result_contains shell__run '\"stdout\": \"Paris\"': in the result of call 2 of 2"),
    ("result_contains-fail", "result_contains", {"name": "shell__run", "substring": "Lyon"},
     T(calls=[LS, CAT]), False,
     "result_contains shell__run 'Lyon': called 2 times, no result contains it"),
    ("result_contains-never", "result_contains", {"name": "web", "substring": "x"},
     T(calls=[LS]), False, "result_contains web 'x': web never called"),
    ("final_answer_contains-pass", "final_answer_contains", "Paris", T(), True,
     "final_answer_contains 'Paris': found at character 26"),
    ("final_answer_contains-case-sensitive", "final_answer_contains", "paris", T(), False,
     "final_answer_contains 'paris': not in the answer 'The capital of France is Paris.'"),
    ("final_answer_contains-null", "final_answer_contains", "Paris", T(answer=None), False,
     "final_answer_contains 'Paris': no final answer"),
    ("final_answer_contains-number", "final_answer_contains", 42, T(answer="it is 42"), True,
     "final_answer_contains '42': found at character 7"),
    ("final_answer_contains-long-answer", "final_answer_contains", "Rome", T(answer="x" * 100),
     False, "final_answer_contains 'Rome': not in the answer '" + "x" * 59 + "…'"),
    ("final_answer_not_contains-pass", "final_answer_not_contains", "sorry", T(), True,
     "final_answer_not_contains 'sorry': not in the answer"),
    ("final_answer_not_contains-fail", "final_answer_not_contains", "France", T(), False,
     "final_answer_not_contains 'France': found at character 16"),
    ("final_answer_not_contains-null", "final_answer_not_contains", "x", T(answer=None), True,
     "final_answer_not_contains 'x': not in the answer"),
    ("final_answer_max_chars-pass", "final_answer_max_chars", 31, T(), True,
     "final_answer_max_chars 31: answer has 31 characters"),
    ("final_answer_max_chars-fail", "final_answer_max_chars", 120, T(answer="é" * 342), False,
     "final_answer_max_chars 120: answer has 342 characters"),
    ("final_answer_max_chars-null", "final_answer_max_chars", 0, T(answer=None), True,
     "final_answer_max_chars 0: answer has 0 characters"),
    ("hook_called-pass", "hook_called", {"name": "pre_tool"},
     T(hooks=[{"name": "pre_tool", "decision": "allow"}]), True,
     "hook_called pre_tool: ran 1 time"),
    ("hook_called-never", "hook_called", {"name": "pre_tool"}, T(), False,
     "hook_called pre_tool: never ran"),
    ("hook_called-decision", "hook_called", {"name": "pre_tool", "decision": "deny"},
     T(hooks=[{"name": "pre_tool", "decision": "allow"}, {"name": "pre_tool",
                                                         "decision": "deny"}]), True,
     "hook_called pre_tool deny: decided so"),
    ("hook_called-other-decision", "hook_called", {"name": "pre_tool", "decision": "deny"},
     T(hooks=[{"name": "pre_tool", "decision": "allow"}, {"name": "pre_tool",
                                                         "decision": "ask"}]), False,
     "hook_called pre_tool deny: ran 2 times, decided allow, ask"),
    ("no_error-pass", "no_error", True, T(), True, "no_error: no error"),
    ("no_error-fail", "no_error", True, T(error="tool shell__run failed: boom"), False,
     "no_error: the target reported 'tool shell__run failed: boom'"),
    ("no_error-object-error", "no_error", True, T(error={"code": 3}), False,
     "no_error: the target reported '{\"code\": 3}'"),
    ("no_error-false-checks-nothing", "no_error", False, T(error="boom"), True,
     "no_error false: not checked"),
]


@pytest.mark.parametrize(("kind", "arg", "transcript", "passed", "message"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check(kind: str, arg: Any, transcript: dict[str, Any], passed: bool,
               message: str) -> None:
    assert check(kind, arg, transcript) == Outcome(passed, message)


def test_kinds_are_the_schemas_the_registrys_and_grader() -> None:
    schema = json.loads((SCHEMAS / "case.schema.json")
                        .read_bytes())
    kinds = tuple(schema["$defs"]["assertion"]["properties"])
    assert kinds == ASSERTION_KINDS  # the model reads the schema, in its order
    assert sorted([*CHECKS, "grader"]) == sorted(kinds)  # grader: judged by scoring


def test_every_non_grader_kind_is_registered_and_tested() -> None:
    kinds = [k for k in ASSERTION_KINDS if k != "grader"]
    assert sorted(CHECKS) == sorted(kinds)
    tested = {c[1] for c in CASES}
    for kind in kinds:  # each kind has a passing and a failing row above
        assert {p for _, k, _, _, p, _ in CASES if k == kind} == {True, False}, kind
    assert tested == set(kinds)


ODD: list[tuple[str, Any]] = [
    ("empty", {}),
    ("not-a-dict", ["what"]),
    ("none", None),
    ("tool_calls-not-list", {"tool_calls": "shell__run", "hooks": {"a": 1}}),
    ("calls-not-objects", {"tool_calls": [None, 3, "x", ["shell__run"]], "hooks": [None]}),
    ("call-without-name", {"tool_calls": [{"args": None}], "hooks": [{}]}),
    ("answer-not-string", {"final_answer": {"text": "Paris"}, "error": None}),
    ("args-null", {"tool_calls": [{"name": "shell__run", "args": None, "result": None}]}),
]
ARGS = {
    "tool_called": {"name": "shell__run", "args": {"cmd": "ls"}},
    "tool_not_called": {"name": "shell__run"},
    "tool_order": {"first": "a", "then": "shell__run"},
    "min_tool_calls": {"name": "shell__run", "count": 1},
    "max_tool_calls": {"count": 1},
    "result_contains": {"name": "shell__run", "substring": "x"},
    "final_answer_contains": "Paris",
    "final_answer_not_contains": "Paris",
    "final_answer_max_chars": 10,
    "hook_called": {"name": "h", "decision": "allow"},
    "no_error": True,
}


@pytest.mark.parametrize("kind", sorted(ARGS))
@pytest.mark.parametrize("transcript", [t for _, t in ODD], ids=[i for i, _ in ODD])
def test_odd_transcripts_never_raise(kind: str, transcript: Any) -> None:
    out = check(kind, ARGS[kind], transcript)
    assert out.error is None
    assert out.message.startswith(kind)


def test_odd_answer_is_read_as_json() -> None:
    t = {"final_answer": {"text": "Paris"}}
    assert check("final_answer_contains", "Paris", t).passed
    assert check("final_answer_max_chars", 17, t).passed  # {"text": "Paris"}


@pytest.mark.parametrize(("kind", "arg", "message"), [
    ("tool_called", "shell__run", "tool_called: bad argument 'shell__run': "
     "expected a mapping, not 'shell__run'"),
    ("tool_order", {"first": "a"}, "tool_order: bad argument {'first': 'a'}: missing 'then'"),
    ("min_tool_calls", {"name": "a", "count": "2"},
     "min_tool_calls: bad argument {'name': 'a', 'count': '2'}: "
     "count must be an integer, not '2'"),
    ("final_answer_max_chars", True, "final_answer_max_chars: bad argument True: "
     "expected a number of characters, not True"),
    ("final_answer_contains", ["a"], "final_answer_contains: bad argument ['a']: "
     "expected text, not ['a']"),
    ("tool_callled", {"name": "x"}, "tool_callled: unknown assertion kind"),
], ids=["not-a-mapping", "missing-key", "count-string", "max-chars-bool", "list-needle",
        "unknown-kind"])
def test_bad_arguments_are_errors_not_crashes(kind: str, arg: Any, message: str) -> None:
    assert check(kind, arg, T()) == Outcome(False, message, "assertion_error")


def _deep(depth: int = 100_000) -> list[Any]:
    """A list nested ``depth`` deep: deeper than any recursion limit."""
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


DEEP_STRING = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "<list nested too deep to show>"

# Values nested too deep to decode, encode or print: scoring must not recurse
# without bound (issue 8). Each row: id, kind, arg, transcript, the exact outcome. The
# transcript is made when its test runs: nine lists 100,000 deep cost ~0.5 s to build at
# collection on every xdist worker and slowed every full garbage collection after it.
DEEP: list[tuple[str, str, Any, Callable[[], Any], Outcome]] = [
    ("args-deep-json-string", "tool_called", {"name": "shell__run", "args": {"cmd": "ls"}},
     lambda: T(calls=[call("shell__run", DEEP_STRING)]),
     Outcome(False, "tool_called shell__run: called 1 time, none with args {'cmd': 'ls'}")),
    ("args-deep-string-beside-a-match", "tool_called",
     {"name": "shell__run", "args": {"cmd": "ls"}},
     lambda: T(calls=[call("shell__run", DEEP_STRING), LS]),
     Outcome(True, "tool_called shell__run: called with args {'cmd': 'ls'}")),
    ("args-deep-value", "tool_called", {"name": "shell__run", "args": {"cmd": "ls"}},
     lambda: T(calls=[call("shell__run", {"cmd": _deep()})]),
     Outcome(False, "tool_called shell__run: called 1 time, none with args {'cmd': 'ls'}")),
    ("result-deep-value", "result_contains", {"name": "shell__run", "substring": "Paris"},
     lambda: T(calls=[call("shell__run", {}, _deep())]),
     Outcome(False, "result_contains shell__run 'Paris': called 1 time, no result contains it")),
    ("result-deep-value-then-match", "result_contains", {"name": "shell__run", "substring": "b"},
     lambda: T(calls=[call("shell__run", {}, _deep()), LS]),
     Outcome(True, "result_contains shell__run 'b': in the result of call 2 of 2")),
    ("answer-deep-value", "final_answer_contains", "Paris", lambda: {"final_answer": _deep()},
     Outcome(False, f"final_answer_contains 'Paris': not in the answer {TOO_DEEP!r}")),
    ("answer-deep-value-not-contains", "final_answer_not_contains", "Paris",
     lambda: {"final_answer": _deep()},
     Outcome(True, "final_answer_not_contains 'Paris': not in the answer")),
    ("answer-deep-value-max-chars", "final_answer_max_chars", 10, lambda: {"final_answer": _deep()},
     Outcome(False, f"final_answer_max_chars 10: answer has {len(TOO_DEEP)} characters")),
    ("error-deep-value", "no_error", True, lambda: T(error=_deep()),
     Outcome(False, f"no_error: the target reported {TOO_DEEP!r}")),
    ("hook-decision-deep-value", "hook_called", {"name": "h", "decision": "allow"},
     lambda: T(hooks=[{"name": "h", "decision": _deep()}]),
     Outcome(False, f"hook_called h allow: ran 1 time, decided {TOO_DEEP}")),
    ("tool-name-deep-value", "tool_order", {"first": "a", "then": "b"},
     lambda: T(calls=[call("a"), {"name": _deep()}, call("b")]),
     Outcome(True, "tool_order a before b: call 1 before call 3")),
]


@pytest.mark.parametrize(("kind", "arg", "transcript", "outcome"), [d[1:] for d in DEEP],
                         ids=[d[0] for d in DEEP])
def test_values_too_deep_to_walk_score_without_recursing(kind: str, arg: Any,
                                                         transcript: Callable[[], Any],
                                                         outcome: Outcome) -> None:
    assert check(kind, arg, transcript()) == outcome


def test_a_check_that_recurses_is_an_assertion_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def recurses(arg: Any, transcript: Any) -> Outcome:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(CHECKS, "no_error", recurses)
    assert check("no_error", True, T()) == Outcome(
        False, "no_error: a value is nested too deep to check", "assertion_error")


def test_scoring_a_trial_with_deep_args_keeps_the_trial() -> None:
    from gitevals.run.scoring import score_trial

    expect = [{"tool_called": {"name": "shell__run", "args": {"cmd": "ls"}}},
              {"result_contains": {"name": "shell__run", "substring": "x"}}]
    t: Any = T(calls=[call("shell__run", DEEP_STRING, _deep())])
    records, passed = score_trial(expect, t, [], None)
    assert not passed
    assert [(r["passed"], r["error"]) for r in records] == [(False, None), (False, None)]


@pytest.mark.parametrize(("expected", "actual", "match"), [
    ({}, {"a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, True),
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": 1}, {"a": True}, False),
    ({"a": True}, {"a": 1}, False),
    ({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2}], "z": 0}}, True),
    ({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2, "d": 3}]}}, False),
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, False),
    ({"a": None}, {}, False),
    ({"a": None}, {"a": None}, True),
    ({"cmd": "ls"}, '{"cmd": "ls", "cwd": "/"}', True),
    ({"cmd": "ls"}, "cmd=ls", False),
    ({"cmd": "ls"}, DEEP_STRING, False),
    ({"cmd": "ls"}, None, False),
    ("ls", "ls", True),
], ids=lambda v: repr(v)[:30])
def test_subset_match(expected: Any, actual: Any, match: bool) -> None:
    assert subset_match(expected, actual) is match


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=12)
transcripts = st.fixed_dictionaries({}, optional={
    "final_answer": json_values, "error": json_values, "hooks": json_values,
    "tool_calls": st.lists(st.fixed_dictionaries({}, optional={
        "name": st.sampled_from(["shell__run", "a"]) | json_values,
        "args": json_values, "result": json_values, "decision": json_values}), max_size=4)
    | json_values}) | json_values


@settings(max_examples=300, deadline=None)
@given(transcripts)
def test_any_stored_transcript_scores_without_error(transcript: Any) -> None:
    for kind, arg in ARGS.items():
        out = check(kind, arg, transcript)
        assert out.error is None, out
        assert isinstance(out.passed, bool)
        assert out.message.startswith(kind)


def test_outcome_is_frozen() -> None:
    import dataclasses

    out = Outcome(True, "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.passed = False  # type: ignore[misc]
    assert out == Outcome(True, "m", None) != Outcome(False, "m")
    assert dataclasses.asdict(out) == {"passed": True, "message": "m", "error": None}
