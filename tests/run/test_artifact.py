"""The typed run model agrees with schemas/result.schema.json, key for key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitevals.run import artifact
from gitevals.run.artifact import (
    AssertionOutcome,
    CaseRun,
    ErrorRecord,
    GraderAnswer,
    Iteration,
    Options,
    Run,
    ScenarioRun,
    Sequential,
    SequentialLook,
    SequentialRecord,
    TaskInfo,
    TaskTrial,
    Transcript,
    Trial,
    Verdict,
)
from gitevals.validation import schema_path

SCHEMA: dict[str, Any] = json.loads(schema_path("result").read_text())
DEFS = SCHEMA["$defs"]

MODELS = [
    ("run", Run, SCHEMA),
    ("options", Options, SCHEMA["properties"]["options"]),
    ("case", CaseRun, DEFS["case"]),
    ("scenario", ScenarioRun, DEFS["scenario"]),
    ("trial", Trial, DEFS["result"]),
    ("transcript", Transcript, DEFS["transcript"]),
    ("grader", GraderAnswer, DEFS["grader"]),
    ("assertion", AssertionOutcome, DEFS["assertion"]),
    ("verdict", Verdict, DEFS["verdict"]),
    ("error", ErrorRecord, DEFS["error"]),
    ("sequential", Sequential, SCHEMA["properties"]["sequential"]),
    ("sequential record", SequentialRecord, DEFS["scenario"]["properties"]["sequential"]),
    ("sequential look", SequentialLook,
     DEFS["scenario"]["properties"]["sequential"]["properties"]["looks"]["items"]),
    ("task", TaskInfo, DEFS["task"]),
    ("task_trial", TaskTrial, DEFS["task_trial"]),
    ("iteration", Iteration, DEFS["iteration"]),
]


@pytest.mark.parametrize(("model", "schema"), [m[1:] for m in MODELS], ids=[m[0] for m in MODELS])
def test_required_keys_are_the_schemas(model: Any, schema: dict[str, Any]) -> None:
    assert model.__required_keys__ == frozenset(schema["required"])
    assert model.__required_keys__ | model.__optional_keys__ <= set(schema["properties"])


def test_verdict_names_are_the_schemas() -> None:
    assert list(artifact.VERDICTS) == DEFS["verdict"]["properties"]["verdict"]["enum"]
    assert SCHEMA["properties"]["format"]["const"] == artifact.FORMAT


def test_grader_arguments_carry_the_whole_transcript() -> None:
    t: Transcript = {"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None,
                     "turns": [{"final_answer": "Paris"}], "duration_ms": 3}
    case, run = artifact.grader_arguments("s", ["q"], [{"no_error": True}], t)
    assert case == {"id": "s", "user": ["q"], "expect": [{"no_error": True}]}
    assert run == dict(t)


def test_grader_calls_name_only_grader_assertions() -> None:
    expect: list[dict[str, Any]] = [{"no_error": True}, {"grader": {"name": "q.a"}},
                                    {"grader": {"pass_below": 1}}, {"grader": {"name": "q.b"}}]
    assert artifact.grader_calls(expect) == [(1, "q.a"), (3, "q.b")]
