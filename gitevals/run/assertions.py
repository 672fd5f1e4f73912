"""The assertion registry: one pure check per non-grader kind of DESIGN §2.

``CHECKS[kind](arg, transcript) -> Outcome``. A check reads only the transcript
(the scenario's own turns) and says, in the assertion's own words, why it passed
or failed. Checks never raise on odd transcripts (missing keys, a null answer,
``tool_calls`` that is not a list): a transcript stored in an old artifact must
always score, and so must one nested too deep to walk (a value too deep to show
is shown as a placeholder; args too deep to decode match nothing). A malformed
*argument* is the rule's fault, not the transcript's: ``check`` turns it into an
``Outcome`` with ``error`` set.

Adding an assertion = one function here, one entry in ``CHECKS``, one schema
entry (schemas/case.schema.json), one test.

Grader assertions are judged in ``gitevals.run.scoring`` (they need the recorded answer).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import Transcript

_SNIPPET = 60


@dataclass(frozen=True, init=False)
class Outcome:
    """The result of one assertion on one transcript.

    ``error`` is set (and ``passed`` is False) when the assertion itself could not be
    evaluated: an unknown kind or a malformed argument.
    """

    passed: bool
    message: str
    error: str | None = None

    def __init__(self, passed: bool, message: str, error: str | None = None) -> None:
        # Frozen like any dataclass, built without three object.__setattr__ calls:
        # re-scoring makes a million of these.
        d = self.__dict__
        d["passed"], d["message"], d["error"] = passed, message, error


#: ``check(arg, transcript)``: ``arg`` is the assertion's value in the case file.
Check = Callable[[JSON, Transcript], Outcome]


# -- reading a transcript defensively -------------------------------------------------


def _calls_of(name: JSON, transcript: Transcript) -> list[JSONObject]:
    """The calls of tool ``name`` (one pass: this runs for every trial of a re-score)."""
    calls = transcript.get("tool_calls") if type(transcript) is dict else None
    if type(calls) is not list:
        return []
    return [c for c in calls if type(c) is dict and c.get("name") == name]


def _names(transcript: Transcript) -> list[JSON]:
    calls = transcript.get("tool_calls") if type(transcript) is dict else None
    if type(calls) is not list:
        return []
    return [c.get("name") for c in calls if type(c) is dict]


def _answer(transcript: Transcript) -> str | None:
    answer = transcript.get("final_answer") if isinstance(transcript, dict) else None
    if answer is None or isinstance(answer, str):
        return answer
    return _text(answer)


def _text(value: JSON) -> str:
    """A tool result or answer as text: strings as is, anything else as JSON
    (a placeholder for a value nested too deep to encode)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except RecursionError:
        return _too_deep(value)
    except (TypeError, ValueError):  # not JSON after all
        return _show(value)


def _show(value: object) -> str:
    """``str(value)``, or a placeholder when it is nested too deep for that."""
    try:
        return str(value)
    except RecursionError:
        return _too_deep(value)


def _too_deep(value: object) -> str:
    return f"<{type(value).__name__} nested too deep to show>"


def _snippet(text: str) -> str:
    return repr(text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…")


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


def _same(a: JSON, b: JSON) -> bool:
    """JSON equality: lists element-wise, and ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def subset_match(expected: JSON, actual: JSON) -> bool:
    """``expected`` is contained in ``actual``: dict keys recursively, anything else equal.

    Arguments recorded as a JSON-encoded string (some harnesses do that) are decoded
    first; a string that does not decode (or nests too deep to) matches nothing. The
    recursion is bounded by ``expected``, which comes from a case file.
    """
    if isinstance(actual, str) and isinstance(expected, dict):
        try:
            actual = json.loads(actual)
        except (ValueError, RecursionError):
            return False
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset_match(v, actual[k]) for k, v in expected.items()
        )
    return _same(expected, actual)


# -- the checks --------------------------------------------------------------------


def tool_called(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when a call of ``name`` was made (whose args contain ``args``, if given)."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    name = arg["name"]
    calls = _calls_of(name, transcript)
    head = f"tool_called {name}"
    if not calls:
        return Outcome(False, f"{head}: never called")
    if "args" not in arg:
        return Outcome(True, f"{head}: called {_times(len(calls))}")
    want = arg["args"]
    if any(subset_match(want, c.get("args")) for c in calls):
        return Outcome(True, f"{head}: called with args {want!r}")
    return Outcome(False, f"{head}: called {_times(len(calls))}, none with args {want!r}")


def tool_not_called(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when no call of ``name`` was made."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    name = arg["name"]
    n = _names(transcript).count(name)
    if n:
        return Outcome(False, f"tool_not_called {name}: called {_times(n)}")
    return Outcome(True, f"tool_not_called {name}: never called")


def tool_order(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when the first call of ``first`` comes before some (the last) call of ``then``."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    first, then = arg["first"], arg["then"]
    names = _names(transcript)
    head = f"tool_order {first} before {then}"
    if first not in names:
        return Outcome(False, f"{head}: {first} never called")
    if then not in names:
        return Outcome(False, f"{head}: {then} never called")
    i = names.index(first)
    j = len(names) - 1 - names[::-1].index(then)
    if i < j:
        return Outcome(True, f"{head}: call {i + 1} before call {j + 1}")
    return Outcome(False, f"{head}: {then} last called at call {j + 1}, "
                          f"{first} first called at call {i + 1}")


def _count(arg: JSON, transcript: Transcript) -> tuple[str, int, int]:
    """(label, count wanted, calls made) for min/max_tool_calls; no ``name`` = any tool."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    want = arg["count"]
    if not isinstance(want, int) or isinstance(want, bool):
        raise TypeError(f"count must be an integer, not {want!r}")
    name = arg.get("name")
    names = _names(transcript)
    made = len(names) if name is None else names.count(name)
    return ("any tool" if name is None else str(name)), want, made


def min_tool_calls(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when ``name`` (or any tool) was called at least ``count`` times."""
    label, want, made = _count(arg, transcript)
    return Outcome(made >= want, f"min_tool_calls {label} {want}: called {_times(made)}")


def max_tool_calls(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when ``name`` (or any tool) was called at most ``count`` times."""
    label, want, made = _count(arg, transcript)
    return Outcome(made <= want, f"max_tool_calls {label} {want}: called {_times(made)}")


def result_contains(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when some result of ``name`` holds ``substring`` (non-strings as JSON)."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    name, sub = arg["name"], _needle(arg["substring"])
    calls = _calls_of(name, transcript)
    head = f"result_contains {name} {sub!r}"
    if not calls:
        return Outcome(False, f"{head}: {name} never called")
    for i, c in enumerate(calls):
        if sub in _text(c.get("result")):
            return Outcome(True, f"{head}: in the result of call {i + 1} of {len(calls)}")
    return Outcome(False, f"{head}: called {_times(len(calls))}, no result contains it")


def _not_mapping(arg: JSON) -> TypeError:
    return TypeError(f"expected a mapping, not {arg!r}")


def _needle(value: JSON) -> str:
    """A YAML scalar as the text to look for (``42`` looks for "42")."""
    if isinstance(value, (dict, list)):
        raise TypeError(f"expected text, not {value!r}")
    return value if isinstance(value, str) else _text(value)


def final_answer_contains(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when the final answer holds ``arg`` (case-sensitive substring)."""
    sub = _needle(arg)
    answer = _answer(transcript)
    head = f"final_answer_contains {sub!r}"
    if answer is None:
        return Outcome(False, f"{head}: no final answer")
    if sub in answer:
        return Outcome(True, f"{head}: found at character {answer.index(sub) + 1}")
    return Outcome(False, f"{head}: not in the answer {_snippet(answer)}")


def final_answer_not_contains(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when the final answer (or no answer) does not hold ``arg`` (case-sensitive)."""
    sub = _needle(arg)
    answer = _answer(transcript) or ""
    head = f"final_answer_not_contains {sub!r}"
    if sub in answer:
        return Outcome(False, f"{head}: found at character {answer.index(sub) + 1}")
    return Outcome(True, f"{head}: not in the answer")


def final_answer_max_chars(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when the answer has at most ``arg`` characters (no answer counts as 0)."""
    if not isinstance(arg, int) or isinstance(arg, bool):
        raise TypeError(f"expected a number of characters, not {arg!r}")
    n = len(_answer(transcript) or "")
    return Outcome(n <= arg, f"final_answer_max_chars {arg}: answer has {n} characters")


def hook_called(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when hook ``name`` ran (and, with ``decision``, once decided exactly that)."""
    if type(arg) is not dict:
        raise _not_mapping(arg)
    name = arg["name"]
    hooks = transcript.get("hooks") if isinstance(transcript, dict) else None
    runs = [h for h in hooks if isinstance(h, dict) and h.get("name") == name] \
        if isinstance(hooks, list) else []
    head = f"hook_called {name}" + (f" {arg['decision']}" if "decision" in arg else "")
    if not runs:
        return Outcome(False, f"{head}: never ran")
    if "decision" not in arg:
        return Outcome(True, f"{head}: ran {_times(len(runs))}")
    decisions = [h.get("decision") for h in runs]
    if any(_same(arg["decision"], d) for d in decisions):
        return Outcome(True, f"{head}: decided so")
    said = ", ".join(_show(d) for d in decisions)
    return Outcome(False, f"{head}: ran {_times(len(runs))}, decided {said}")


def no_error(arg: JSON, transcript: Transcript) -> Outcome:
    """Passes when the target reported no error (``no_error: false`` checks nothing).

    A trial's infrastructure error (crash, timeout...) fails this assertion too; the
    scorer applies that, since it is recorded beside the transcript, not in it.
    """
    if arg is not True:
        return Outcome(True, f"no_error {_text(arg)}: not checked")
    err = transcript.get("error") if isinstance(transcript, dict) else None
    if err is None:
        return Outcome(True, "no_error: no error")
    return Outcome(False, f"no_error: the target reported {_snippet(_text(err))}")


#: kind -> check: every kind of the case schema but ``grader``, which
#: gitevals.run.scoring judges (tests/run/test_assertions.py checks the three agree).
CHECKS: dict[str, Check] = {
    "tool_called": tool_called,
    "tool_not_called": tool_not_called,
    "tool_order": tool_order,
    "min_tool_calls": min_tool_calls,
    "max_tool_calls": max_tool_calls,
    "result_contains": result_contains,
    "final_answer_contains": final_answer_contains,
    "final_answer_not_contains": final_answer_not_contains,
    "final_answer_max_chars": final_answer_max_chars,
    "hook_called": hook_called,
    "no_error": no_error,
}


def check(kind: str, arg: JSON, transcript: Transcript) -> Outcome:
    """Run assertion ``kind`` on ``transcript``; never raises.

    An unknown kind or an argument of the wrong shape gives a failed ``Outcome`` with
    ``error="assertion_error"`` and a message naming the problem; so does a check
    that recursed without bound (the checks above never should).
    """
    fn = CHECKS.get(kind)
    if fn is None:
        return Outcome(False, f"{kind}: unknown assertion kind", "assertion_error")
    try:
        return fn(arg, transcript)
    except RecursionError:
        return Outcome(False, f"{kind}: a value is nested too deep to check",
                       "assertion_error")
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        return Outcome(False, f"{kind}: bad argument {arg!r}: {what}", "assertion_error")
