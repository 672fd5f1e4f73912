"""Rules between two revisions: scenarios and assertions added, removed, changed."""

from __future__ import annotations

import json

import pytest

from gitevals.diff.rules import Change, diff_assertions, read_case
from gitevals.model import Assertion
from tests.conftest import Repo, run_cli


def _a(kind: str, arg: object) -> Assertion:
    return Assertion(kind, arg)


@pytest.mark.parametrize(("before", "after", "expected"), [
    ([_a("no_error", True)], [_a("no_error", True)], ()),
    ([_a("no_error", True), _a("final_answer_contains", "x")],
     [_a("final_answer_contains", "x"), _a("no_error", True)], ()),
    ([_a("final_answer_contains", "Paris")], [_a("final_answer_contains", "London")],
     (Change("final_answer_contains", {"final_answer_contains": "Paris"},
             {"final_answer_contains": "London"}),)),
    ([_a("grader", {"name": "q.a", "pass_below": 0.7})],
     [_a("grader", {"name": "q.a", "pass_below": 0.8})],
     (Change("grader", {"grader": {"name": "q.a", "pass_below": 0.7}},
             {"grader": {"name": "q.a", "pass_below": 0.8}}),)),
    ([_a("tool_called", {"name": "a"})], [_a("tool_called", {"name": "b"})],
     (Change("tool_called", {"tool_called": {"name": "a"}}, None),
      Change("tool_called", None, {"tool_called": {"name": "b"}}))),
    ([], [_a("max_tool_calls", {"name": "s", "count": 2})],
     (Change("max_tool_calls", None, {"max_tool_calls": {"name": "s", "count": 2}}),)),
], ids=["same", "reordered", "text-changed", "grader-threshold", "other-tool", "added"])
def test_diff_assertions(before: list[Assertion], after: list[Assertion],
                         expected: tuple[Change, ...]) -> None:
    assert diff_assertions(before, after) == expected


def test_read_case_reports_instead_of_raising() -> None:
    case, why = read_case("evals/cases/x.yaml", b"scenarios:\n  - id: [\n")
    assert case is None and why is not None and why.startswith("evals/cases/x.yaml:")
    case, why = read_case("evals/cases/x.yaml", b"scenarios: 3\n")
    assert case is None and why is not None and "not a valid case" in why


TONE_A = """\
defaults: {trials: 3, timeout: 300s}
scenarios:
  - id: answers-in-one-line
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - final_answer_max_chars: 120
  - id: uses-the-shell
    user: [List the files., Now count them.]
    expect:
      - tool_called: {name: shell__run}
  - id: to-be-removed
    user: bye
    expect: [{no_error: true}]
"""

TONE_B = """\
defaults: {trials: 3, timeout: 300s}
scenarios:
  - id: answers-in-one-line
    user: What is the capital of France?
    timeout: 60s
    expect:
      - final_answer_contains: Paris
      - final_answer_max_chars: 80
  - id: uses-the-shell
    user: [List the files., Now count them twice.]
    trials: 5
    expect:
      - tool_called: {name: shell__run}
      - min_tool_calls: {name: shell__run, count: 2}
  - id: brand-new
    user: hello
    expect: [{no_error: true}]
"""

OTHER = """\
scenarios:
  - id: stays
    user: hi
    expect: [{no_error: true}]
"""


def test_cli_rules_rows(repo: Repo) -> None:
    repo.commit({"evals/cases/tone.yaml": TONE_A, "evals/cases/gone.yaml": OTHER,
                 "evals/cases/same.yaml": OTHER})
    repo.git("tag", "v1")
    repo.remove("evals/cases/gone.yaml")
    repo.commit({"evals/cases/tone.yaml": TONE_B, "evals/cases/sub/new.yaml": OTHER})
    r = run_cli("diff", "v1", "HEAD", "--only", "rules", cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "verdicts not compared, 6 rules changed"
    assert r.out.split("\n\n", 1)[1] == """\
Rules
  case file     scenario             change   detail
  gone.yaml     stays                removed
  sub/new.yaml  stays                added
  tone.yaml     to-be-removed        removed
  tone.yaml     answers-in-one-line  changed  timeout 300s -> 60s
  tone.yaml     answers-in-one-line           ~ final_answer_max_chars: 120 -> 80
  tone.yaml     uses-the-shell       changed  trials 3 -> 5
  tone.yaml     uses-the-shell                user turn 2: Now count them. -> Now count them twice.
  tone.yaml     uses-the-shell                + min_tool_calls: {"count": 2, "name": "shell__run"}
  tone.yaml     brand-new            added
"""


def test_cli_rules_json_has_before_and_after(repo: Repo) -> None:
    repo.commit({"evals/cases/tone.yaml": TONE_A})
    repo.commit({"evals/cases/tone.yaml": TONE_B})
    r = run_cli("diff", "HEAD~1", "--format", "json", cwd=repo.path)
    doc = json.loads(r.out)
    (case,) = doc["cases"]
    shell = next(s for s in case["scenarios"] if s["id"] == "uses-the-shell")
    assert shell["fields"][1] == {"what": "user", "before": ["List the files.", "Now count them."],
                                  "after": ["List the files.", "Now count them twice."]}
    assert doc["counts"]["rules_changed"] == 4


def test_cli_case_file_that_does_not_parse_on_one_side(repo: Repo) -> None:
    repo.commit({"evals/cases/tone.yaml": TONE_A})
    repo.commit({"evals/cases/tone.yaml": TONE_A + "  - id: [broken\n"})
    r = run_cli("diff", "HEAD~1", "HEAD", "--only", "rules", cwd=repo.path)
    assert r.code == 0, r.err
    assert "Traceback" not in r.err
    rows = r.out.split("Rules\n", 1)[1].splitlines()
    assert rows[1].split()[:3] == ["tone.yaml", "*", "unreadable"]
    assert "B: evals/cases/tone.yaml:" in rows[1]


def test_cli_unchanged_blob_is_never_parsed(repo: Repo) -> None:
    # The same broken file on both sides: its blob did not change, so it is not read.
    repo.commit({"evals/cases/broken.yaml": "scenarios: [\n", "evals/cases/tone.yaml": TONE_A})
    repo.commit({"evals/cases/tone.yaml": TONE_B})
    r = run_cli("diff", "HEAD~1", "--only", "rules", "--format", "json", cwd=repo.path)
    assert [c["path"] for c in json.loads(r.out)["cases"]] == ["tone.yaml"]


def test_cli_cases_matched_under_each_sides_root(repo: Repo) -> None:
    repo.commit({"evals/cases/tone.yaml": TONE_A})
    repo.git("mv", "evals", "qa")
    repo.commit({"gitevals.toml": 'root = "qa"\n', "qa/cases/tone.yaml": TONE_B})
    r = run_cli("diff", "HEAD~1", "--only", "rules", "--format", "json", cwd=repo.path)
    doc = json.loads(r.out)
    assert doc["a"]["root"] == "evals" and doc["b"]["root"] == "qa"
    assert [s["kind"] for s in doc["cases"][0]["scenarios"]] == [
        "removed", "changed", "changed", "added"]
