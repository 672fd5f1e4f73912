"""Targets: the JSON-lines protocol, and every way a target can misbehave."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitevals.run import reaper, targets
from gitevals.run.targets import (
    Conversation,
    ProcessRegistry,
    TargetError,
    parse_reply,
    target_argv,
)
from tests.support.paths import SCHEMAS


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "target.py"
    path.write_text("import json, os, sys, time\n" + body)
    return [sys.executable, str(path)]


def _msg(text: str = "hi", turn: int = 0) -> dict[str, Any]:
    return {"text": text, "turn": turn, "case": "c", "scenario": "s", "trial": 0}


ECHO = """
for line in sys.stdin:
    m = json.loads(line)
    print(json.dumps({"final_answer": m["text"].upper(), "tokens": 3}), flush=True)
"""


@pytest.fixture(params=["supervised", "direct"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Targets started by a supervisor (Linux), or directly (where there can be none)."""
    if request.param == "direct":
        monkeypatch.setattr(reaper, "available", lambda: False)
    return str(request.param)


def test_a_well_behaved_target_answers_each_turn_and_extra_fields_are_kept(
        tmp_path: Path, how: str) -> None:
    with Conversation(_script(tmp_path, ECHO), str(tmp_path)) as conv:
        first = conv.ask(_msg("hi"), time.monotonic() + 10)
        second = conv.ask(_msg("again", 1), time.monotonic() + 10)
        assert type(conv.proc).__name__ == f"_{how.capitalize()}"
    assert first == {"final_answer": "HI", "tokens": 3, "tool_calls": [], "hooks": [],
                     "error": None}
    assert second["final_answer"] == "AGAIN"


def test_the_target_runs_in_the_given_directory(tmp_path: Path) -> None:
    body = 'sys.stdin.readline(); print(json.dumps({"final_answer": os.getcwd()}), flush=True)'
    (tmp_path / "tree").mkdir()
    with Conversation(_script(tmp_path, body), str(tmp_path / "tree")) as conv:
        reply = conv.ask(_msg(), time.monotonic() + 10)
    assert Path(reply["final_answer"]).resolve() == (tmp_path / "tree").resolve()


BAD_TARGETS = [
    ("crash", 'sys.stdin.readline(); print("noise " * 400, file=sys.stderr); '
     'print("kaput", file=sys.stderr); sys.exit(3)',
     "target_crash", "exited with code 3): kaput"),
    ("silent-exit", "sys.stdin.readline()", "target_crash", "exited before answering"),
    ("garbage", 'sys.stdin.readline(); print("hello there", flush=True); time.sleep(5)',
     "target_protocol", "not JSON: 'hello there'"),
    ("half-line", 'sys.stdin.readline(); sys.stdout.write("{\\"final_an"); sys.exit(0)',
     "target_protocol", "half a line"),
    ("not-an-object", 'sys.stdin.readline(); print("[1, 2]", flush=True); time.sleep(5)',
     "target_protocol", "JSON list, not an object"),
    ("no-final-answer", 'sys.stdin.readline(); print("{}", flush=True); time.sleep(5)',
     "target_protocol", "no 'final_answer'"),
    ("bad-tool-calls", 'sys.stdin.readline(); print(json.dumps({"final_answer": "x", '
     '"tool_calls": [{"args": {}}]}), flush=True); time.sleep(5)',
     "target_protocol", "'tool_calls'[0]"),
    ("hang", "sys.stdin.readline(); time.sleep(60)", "target_timeout", "scenario timeout"),
    ("never-reads", "time.sleep(60)", "target_timeout", "scenario timeout"),
]


@pytest.mark.parametrize(("body", "kind", "says"), [b[1:] for b in BAD_TARGETS],
                         ids=[b[0] for b in BAD_TARGETS])
def test_a_misbehaving_target_is_a_target_error_of_the_right_kind(
        tmp_path: Path, body: str, kind: str, says: str) -> None:
    # Misbehaviour other than hanging gets a generous deadline: a loaded machine may
    # take a while to start python, and that must not turn a crash into a timeout.
    wait = 1.0 if kind == "target_timeout" else 10.0
    started = time.monotonic()
    with Conversation(_script(tmp_path, body), str(tmp_path)) as conv, \
            pytest.raises(TargetError) as err:
        conv.ask(_msg(), time.monotonic() + wait)
    assert err.value.kind == kind
    assert says in err.value.message
    assert time.monotonic() - started < wait + 3  # a deadline, never a block


def test_a_crash_reports_its_exit_code(tmp_path: Path, how: str) -> None:
    body = 'sys.stdin.readline(); print("kaput", file=sys.stderr); sys.exit(3)'
    with Conversation(_script(tmp_path, body), str(tmp_path)) as conv, \
            pytest.raises(TargetError) as err:
        conv.ask(_msg(), time.monotonic() + 10)
    assert err.value.message == "exited before answering (exited with code 3): kaput"


def test_a_command_that_does_not_exist_cannot_start(tmp_path: Path, how: str) -> None:
    with Conversation(["no-such-harness-xyz"], str(tmp_path)) as conv, \
            pytest.raises(TargetError) as err:
        conv.ask(_msg(), time.monotonic() + 5)
    assert err.value.kind == "target_start"
    assert "no-such-harness-xyz" in err.value.message


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path, how: str) -> None:
    pidfile = tmp_path / "child.pid"
    body = (f"import subprocess\np = subprocess.Popen(['sleep', '60'])\n"
            f"open({str(pidfile)!r}, 'w').write(str(p.pid))\nsys.stdin.readline()\n"
            "time.sleep(60)\n")
    conv = Conversation(_script(tmp_path, body), str(tmp_path))
    conv.start()
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(TargetError):
        conv.ask(_msg(), time.monotonic() + 0.5)
    child = int(pidfile.read_text())
    conv.close()
    time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by init) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_an_oversized_reply_line_is_a_protocol_error(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(targets, "MAX_LINE", 1000)
    body = 'sys.stdin.readline(); sys.stdout.write("x" * 100000); sys.stdout.flush(); ' \
           'time.sleep(5)'
    with Conversation(_script(tmp_path, body), str(tmp_path)) as conv, \
            pytest.raises(TargetError) as err:
        conv.ask(_msg(), time.monotonic() + 3)
    assert err.value.kind == "target_protocol"
    assert "longer than 1000 bytes" in err.value.message


def test_a_large_turn_reaches_a_slow_reader_without_blocking_forever(tmp_path: Path) -> None:
    # The target never reads: a turn bigger than the pipe buffer must time out, not hang.
    with Conversation(_script(tmp_path, "time.sleep(60)"), str(tmp_path)) as conv, \
            pytest.raises(TargetError) as err:
        conv.ask(_msg("x" * 1_000_000), time.monotonic() + 1.0)
    assert err.value.kind == "target_timeout"


def test_kill_all_kills_registered_targets_and_later_arrivals(tmp_path: Path, how: str) -> None:
    registry = ProcessRegistry()
    conv = Conversation(_script(tmp_path, ECHO), str(tmp_path), registry=registry)
    conv.start()
    registry.kill_all()
    assert conv.proc is not None and conv.proc.status(5) == -9
    late = Conversation(_script(tmp_path, ECHO), str(tmp_path), registry=registry)
    late.start()
    assert late.proc is not None and late.proc.status(5) == -9
    conv.close()
    late.close()
    registry.close()


def test_a_setsid_child_is_gone_when_the_conversation_closes(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    body = (f"if os.fork() == 0:\n    os.setsid()\n"
            f"    open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid()))\n"
            f"    os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n    time.sleep(60)\n"
            f"while not os.path.exists({str(pidfile)!r}):\n    time.sleep(0.01)\n{ECHO}")
    conv = Conversation(_script(tmp_path, body), str(tmp_path))
    try:
        assert conv.ask(_msg(), time.monotonic() + 10)["final_answer"] == "HI"
        child = int(pidfile.read_text())
        conv.close()
        assert not _alive(child)  # gone at once: killed and reaped before close returns
    finally:
        conv.close()
        if pidfile.exists() and _alive(child := int(pidfile.read_text())):
            os.kill(child, 9)


# --- python targets ---------------------------------------------------------------------

PY_TARGET = '''
import json
def respond(messages):
    print("debug output the target printed")
    users = [m["content"] for m in messages if m["role"] == "user"]
    return {"final_answer": " | ".join(users), "tool_calls": [], "seen": len(messages)}
def boom(messages):
    raise RuntimeError("model unavailable")
def not_a_dict(messages):
    return ["a list"]
'''


def _python(tmp_path: Path, spec: str) -> Conversation:
    (tmp_path / "agent.py").write_text(PY_TARGET)
    return Conversation(target_argv(None, spec), str(tmp_path), python_target=True)


def test_a_python_target_gets_the_conversation_so_far(tmp_path: Path) -> None:
    with _python(tmp_path, "agent:respond") as conv:
        conv.ask(_msg("one"), time.monotonic() + 10)
        reply = conv.ask(_msg("two", 1), time.monotonic() + 10)
    # user, assistant, user: printing to stdout did not corrupt the protocol
    assert reply["final_answer"] == "one | two"
    assert reply["seen"] == 3


def test_a_python_target_that_raises_reports_it_as_its_error(tmp_path: Path) -> None:
    with _python(tmp_path, "agent:boom") as conv:
        reply = conv.ask(_msg(), time.monotonic() + 10)
    assert reply["final_answer"] is None
    assert reply["error"] == "RuntimeError: model unavailable"


@pytest.mark.parametrize(("spec", "kind", "says"), [
    ("agent:not_a_dict", "target_protocol", "not a JSON object"),
    ("agent:missing", "target_start", "agent has no function 'missing'"),
    ("nosuchmodule:fn", "target_start", "No module named 'nosuchmodule'"),
], ids=["returns-a-list", "no-such-function", "no-such-module"])
def test_a_broken_python_target_is_a_target_error(tmp_path: Path, spec: str, kind: str,
                                                  says: str) -> None:
    with _python(tmp_path, spec) as conv, pytest.raises(TargetError) as err:
        conv.ask(_msg(), time.monotonic() + 10)
    assert err.value.kind == kind
    assert says in err.value.message


# --- the reply schema and the validator agree -----------------------------------------

REPLIES = [
    ({"final_answer": "x"}, True),
    ({"final_answer": None, "error": "rate limited"}, True),
    ({"final_answer": "x", "tool_calls": [{"name": "t", "args": {"a": 1}, "result": "r"}],
      "hooks": [{"name": "h", "decision": "deny"}], "tokens": 12}, True),
    ({}, False),
    ({"final_answer": 3}, False),
    ({"final_answer": "x", "error": 1}, False),
    ({"final_answer": "x", "tool_calls": {}}, False),
    ({"final_answer": "x", "tool_calls": [{"name": 1}]}, False),
    ({"final_answer": "x", "hooks": ["h"]}, False),
    (["final_answer"], False),
]


@pytest.mark.parametrize(("reply", "valid"), REPLIES, ids=[json.dumps(r) for r, _ in REPLIES])
def test_reply_validation_matches_the_published_schema(reply: Any, valid: bool) -> None:
    schema = json.loads((SCHEMAS / "target-reply.schema.json").read_text())
    assert jsonschema.Draft202012Validator(schema).is_valid(reply) is valid
    assert (targets.reply_problem(reply) is None) is valid


#: id, reply, the problem reported: of several, the first in reading order.
REPLY_PROBLEMS = [
    ("not-an-object", ["final_answer"], "reply is a JSON list, not an object"),
    ("null", None, "reply is a JSON NoneType, not an object"),
    ("no-final-answer", {}, "reply has no 'final_answer' (use null when there is none)"),
    ("final-answer-number", {"final_answer": 3}, "reply 'final_answer' must be a string or null"),
    ("error-number", {"final_answer": "x", "error": 1}, "reply 'error' must be a string or null"),
    ("tool-calls-not-list", {"final_answer": "x", "tool_calls": {}},
     "reply 'tool_calls' must be a list"),
    ("tool-call-name", {"final_answer": "x", "tool_calls": [{"name": "a"}, {"name": 1}]},
     "reply 'tool_calls'[1] must be an object with a string 'name'"),
    ("hook-not-object", {"final_answer": "x", "hooks": ["h"]},
     "reply 'hooks'[0] must be an object with a string 'name'"),
    ("missing-before-bad-error", {"error": 1, "hooks": 2},
     "reply has no 'final_answer' (use null when there is none)"),
    ("final-answer-before-error", {"final_answer": 1, "error": 2},
     "reply 'final_answer' must be a string or null"),
    ("error-before-lists", {"final_answer": None, "hooks": 1, "tool_calls": 1, "error": 2},
     "reply 'error' must be a string or null"),
    ("tool-calls-before-hooks", {"final_answer": None, "hooks": 1, "tool_calls": [3, {}]},
     "reply 'tool_calls'[0] must be an object with a string 'name'"),
]


@pytest.mark.parametrize(("reply", "problem"), [r[1:] for r in REPLY_PROBLEMS],
                         ids=[r[0] for r in REPLY_PROBLEMS])
def test_reply_problem_names_the_first_problem(reply: Any, problem: str) -> None:
    assert targets.reply_problem(reply) == problem


def test_input_lines_match_the_published_schema() -> None:
    schema = json.loads((SCHEMAS / "target-input.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(_msg())


def test_nan_in_a_reply_is_a_protocol_error() -> None:
    with pytest.raises(TargetError) as err:
        parse_reply(b'{"final_answer": "x", "score": NaN}')
    assert err.value.kind == "target_protocol" and "NaN" in err.value.message


def test_parse_reply_fills_defaults() -> None:
    assert parse_reply(b'{"final_answer": "a"}') == {"final_answer": "a", "tool_calls": [],
                                                     "hooks": [], "error": None}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"])
def test_a_reply_is_read_in_the_encodings_json_reads(encoding: str) -> None:
    """``parse_reply`` keeps one decoder for every reply: it reads bytes as ``json.loads``
    does (UTF-8, -16 or -32, told by the first bytes, a UTF-8 byte order mark skipped)."""
    line = '{"final_answer": "\u00e9t\u00e9 \U0001f600", "n": [1.5, null]}'.encode(encoding)
    assert parse_reply(line) == {**json.loads(line), "tool_calls": [], "hooks": [],
                                 "error": None}


def test_a_reply_that_is_not_utf8_is_a_protocol_error() -> None:
    with pytest.raises(TargetError) as err:
        parse_reply(b'{"final_answer": "\xff"}')
    assert err.value.kind == "target_protocol" and "not JSON" in err.value.message
