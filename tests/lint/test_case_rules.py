"""The per-file case rules: every code at its exact line and column."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gitevals.findings import Finding
from gitevals.lint.cases import GraderRef, grader_name_problem, lint_case_bytes
from gitevals.settings import REFUSED_KEYS
from tests.conftest import Repo, run_cli

GOOD = """\
# yaml-language-server: $schema=../../schemas/case.schema.json
defaults: {trials: 3, timeout: 300s}
scenarios:
  - id: answers-in-one-line
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - final_answer_max_chars: 120
      - no_error: true
  - id: uses-the-shell-rather-than-guessing
    user: [List the files in the home directory., Now count them.]
    trials: 5
    timeout: 5m
    expect:
      - tool_called: {name: shell__run, args: {cmd: ls}}
      - tool_not_called: {name: web__search}
      - tool_order: {first: shell__run, then: shell__count}
      - min_tool_calls: {name: shell__run, count: 2}
      - max_tool_calls: {name: shell__run, count: 2}
      - result_contains: {name: shell__run, substring: total}
      - final_answer_not_contains: sorry
      - hook_called: {name: guard, decision: allow}
      - grader: {name: quality.answers, pass_below: 0.7}
      - grader: {name: quality.is_short}
"""


def lint(text: str, refused: dict[str, str] | None = None) -> list[Finding]:
    findings, _ = lint_case_bytes(textwrap.dedent(text).encode(), "evals/cases/c.yaml",
                                  REFUSED_KEYS if refused is None else refused)
    return findings


def where(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.col) for f in findings]


def test_the_design_example_is_clean() -> None:
    findings, refs = lint_case_bytes(GOOD.encode(), "evals/cases/tone.yaml", REFUSED_KEYS)
    assert findings == []
    assert refs == [GraderRef("quality.answers", "evals/cases/tone.yaml", 23, 24),
                    GraderRef("quality.is_short", "evals/cases/tone.yaml", 24, 24)]


S = "scenarios:\n  - id: a\n    user: hi\n"  # a valid head; the case under test follows

CASES = [
    # -- GE109: the top level
    ("top-level-list", "- a\n- b\n", [("GE109", 1, 1)]),
    ("top-level-string", "just text\n", [("GE109", 1, 1)]),
    ("top-level-number", "42\n", [("GE109", 1, 1)]),
    # -- GE201 unknown key, GE205 unknown assertion kind
    ("unknown-top-key", "scenario:\n  - id: a\n", [("GE201", 1, 1), ("GE203", 1, 1)]),
    ("unknown-defaults-key", "defaults: {trails: 3}\n" + S, [("GE201", 1, 12)]),
    ("unknown-scenario-key", S + "    expects: []\n", [("GE201", 4, 5)]),
    ("unknown-assertion-kind", S + "    expect:\n      - final_anwser_contains: x\n",
     [("GE205", 5, 9)]),
    ("unknown-arg-key", S + "    expect:\n      - tool_called: {name: a, arg: {}}\n",
     [("GE201", 5, 32)]),
    # -- GE202 wrong type
    ("trials-string", S + "    trials: '3'\n", [("GE202", 4, 13)]),
    ("trials-bool", S + "    trials: true\n", [("GE202", 4, 13)]),
    ("timeout-number", S + "    timeout: 30\n", [("GE202", 4, 14)]),
    ("scenarios-mapping", "scenarios: {id: a}\n", [("GE202", 1, 12)]),
    ("scenario-not-mapping", S + "  - oops\n", [("GE202", 4, 5)]),
    ("user-mapping", "scenarios:\n  - id: a\n    user: {text: hi}\n", [("GE202", 3, 11)]),
    ("user-turn-number", "scenarios:\n  - id: a\n    user: [hi, 3]\n", [("GE202", 3, 16)]),
    ("id-number", "scenarios:\n  - id: 7\n    user: hi\n", [("GE202", 2, 9)]),
    ("expect-mapping", S + "    expect: {no_error: true}\n", [("GE202", 4, 13)]),
    ("assertion-arg-string", S + "    expect:\n      - tool_called: shell\n",
     [("GE202", 5, 22)]),
    ("count-string", S + "    expect:\n      - min_tool_calls: {name: a, count: two}\n",
     [("GE202", 5, 42)]),
    ("args-list", S + "    expect:\n      - tool_called: {name: a, args: [1]}\n",
     [("GE202", 5, 38)]),
    ("max-chars-float", S + "    expect:\n      - final_answer_max_chars: 1.5\n",
     [("GE202", 5, 33)]),
    ("no-error-null", S + "    expect:\n      - no_error:\n", [("GE202", 5, 18)]),
    # -- GE203 missing required
    ("no-scenarios", "defaults: {trials: 2}\n", [("GE203", 1, 1)]),
    ("scenario-without-user", "scenarios:\n  - id: a\n", [("GE203", 2, 5)]),
    ("tool-order-without-then", S + "    expect:\n      - tool_order: {first: a}\n",
     [("GE203", 5, 21)]),
    ("min-calls-without-count", S + "    expect:\n      - min_tool_calls: {name: a}\n",
     [("GE203", 5, 25)]),
    # -- GE208 bad cluster
    ("cluster-spaces", "cluster: two words\n" + S, [("GE208", 1, 10)]),
    ("cluster-number", "cluster: 7\n" + S, [("GE208", 1, 10)]),
    ("cluster-empty", "cluster: ''\n" + S, [("GE208", 1, 10)]),
    # -- GE204 bad value
    ("trials-zero", "defaults: {trials: 0}\n" + S, [("GE204", 1, 20)]),
    ("timeout-no-unit", S + "    timeout: '300'\n", [("GE204", 4, 14)]),
    ("timeout-bad-unit", S + "    timeout: 5 minutes\n", [("GE204", 4, 14)]),
    ("id-with-space", "scenarios:\n  - id: two words\n    user: hi\n", [("GE204", 2, 9)]),
    ("scenarios-empty", "scenarios: []\n", [("GE204", 1, 12)]),
    ("user-empty-list", "scenarios:\n  - id: a\n    user: []\n", [("GE204", 3, 11)]),
    ("user-empty-string", "scenarios:\n  - id: a\n    user: ''\n", [("GE204", 3, 11)]),
    ("count-negative", S + "    expect:\n      - max_tool_calls: {name: a, count: -1}\n",
     [("GE204", 5, 42)]),
    ("no-error-false", S + "    expect:\n      - no_error: false\n", [("GE204", 5, 19)]),
    ("contains-empty", S + "    expect:\n      - final_answer_contains: ''\n",
     [("GE204", 5, 32)]),
    # -- GE206: each expect item has exactly one key
    ("item-no-key", S + "    expect:\n      - {}\n", [("GE206", 5, 9)]),
    ("item-two-kinds", S + "    expect:\n      - {no_error: true, final_answer_max_chars: 3}\n",
     [("GE206", 5, 9)]),
    ("item-not-mapping", S + "    expect:\n      - no_error\n", [("GE202", 5, 9)]),
    # -- GE207: arguments not indented under their kind
    ("args-not-indented", S + "    expect:\n      - tool_called:\n        name: x\n",
     [("GE207", 6, 9)]),
    # -- GE301 refused keys, by name, once
    ("refused-top", "suite: nightly\n" + S, [("GE301", 1, 1)]),
    ("refused-defaults", "defaults: {trials: 2, machine_id: m1}\n" + S, [("GE301", 1, 23)]),
    ("refused-scenario", S + "    agent: bob\n", [("GE301", 4, 5)]),
    ("refused-two", S + "    files: [a]\n    tool: shell\n", [("GE301", 4, 5), ("GE301", 5, 5)]),
    # -- GE4xx semantics
    ("duplicate-id", S + "  - id: a\n    user: again\n", [("GE401", 4, 9)]),
    ("tool-order-same", S + "    expect:\n      - tool_order: {first: a, then: a}\n",
     [("GE402", 5, 38)]),
    ("min-above-max", S + "    expect:\n      - min_tool_calls: {name: a, count: 3}\n"
     "      - max_tool_calls: {name: a, count: 1}\n", [("GE403", 5, 42)]),
    ("pass-below-high", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: q.f, pass_below: 1.5}\n", [("GE404", 6, 41)]),
    ("pass-below-negative", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: q.f, pass_below: -0.1}\n", [("GE404", 6, 41)]),
    ("pass-below-nan", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: q.f, pass_below: .nan}\n", [("GE404", 6, 41)]),
    ("one-trial-explicit", S + "    trials: 1\n    expect:\n      - grader: {name: q.f}\n",
     [("GE405", 4, 13)]),
    ("one-trial-default", S + "    expect:\n      - grader: {name: q.f}\n", [("GE405", 5, 9)]),
    ("one-trial-defaults", "defaults: {trials: 1}\n" + S
     + "    expect:\n      - grader: {name: q.f}\n", [("GE405", 6, 9)]),
    # -- GE501 grader name syntax (not also a schema pattern error)
    ("grader-three-parts", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: a.b.c}\n", [("GE501", 6, 24)]),
    ("grader-path", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: ../x.f}\n", [("GE501", 6, 24)]),
    ("grader-no-function", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: 'x.'}\n", [("GE501", 6, 24)]),
    ("grader-no-dot", "defaults: {trials: 3}\n" + S
     + "    expect:\n      - grader: {name: x}\n", [("GE501", 6, 24)]),
    ("timeout-over-24h", "defaults: {timeout: 25h}\n" + S + "    expect: [{no_error: true}]\n",
     [("GE406", 1, 21)]),
    ("number-too-long", "defaults: {trials: " + "9" * 4400 + "}\n" + S
     + "    expect: [{no_error: true}]\n", [("GE112", 1, 20)]),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_finding_code_line_col(text: str, expected: list[tuple[str, int, int]]) -> None:
    assert where(lint(text)) == expected


def test_a_good_cluster_is_clean_and_loaded() -> None:
    from gitevals.model import load_case

    assert where(lint("cluster: capitals.v2\n" + S)) == where(lint(S))
    case = load_case("cases/geo.yaml", {"cluster": "capitals.v2",
                                        "scenarios": [{"id": "a", "user": "hi"}]})
    assert case.cluster == "capitals.v2"


def test_table_ids_are_unique() -> None:
    assert len({c[0] for c in CASES}) == len(CASES)


def test_every_documented_case_code_is_exercised() -> None:
    from tests.support.lint import CORPUS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "lint-codes.md").read_text()
    documented = set(re.findall(r"^\| (GE[1-4]\d\d|GE501) \|", doc, re.M))
    exercised = {code for _, _, found in CASES for code, _, _ in found}
    exercised |= {code for _, _, code in CORPUS}
    assert len(documented) >= 25
    assert documented <= exercised, documented - exercised


@pytest.mark.parametrize(("typo", "meant"), [
    ("final_anwser_contains", "final_answer_contains"),
    ("tool_caled", "tool_called"),
    ("no_eror", "no_error"),
    ("grade", "grader"),
], ids=lambda v: v)
def test_did_you_mean_an_assertion_kind(typo: str, meant: str) -> None:
    [f] = lint(S + f"    expect:\n      - {typo}: x\n")
    assert f.code == "GE205"
    assert f"did you mean {meant}?" in f.message
    assert typo in f.message


@pytest.mark.parametrize(("text", "meant"), [
    ("defaults: {trails: 3}\n" + S, "trials"),
    (S + "    expects: []\n", "expect"),
    (S + "    timout: 5m\n", "timeout"),
    (S + "    expect:\n      - grader: {name: q.f, pass_bellow: 0.5}\n", "pass_below"),
], ids=["trails", "expects", "timout", "pass_bellow"])
def test_did_you_mean_a_key(text: str, meant: str) -> None:
    found = [f for f in lint(text) if f.code == "GE201"]
    assert len(found) == 1 and f"did you mean {meant}?" in found[0].message


def test_unknown_kind_without_a_near_name_lists_the_kinds() -> None:
    [f] = lint(S + "    expect:\n      - zzz: x\n")
    assert "kinds: tool_called, tool_not_called" in f.message


@pytest.mark.parametrize("key", sorted(REFUSED_KEYS))
def test_each_refused_key_is_reported_once_with_its_reason(key: str) -> None:
    findings = lint(f"{key}: x\n" + S + f"    {key}: y\n")
    assert where(findings) == [("GE301", 1, 1), ("GE301", 5, 5)]
    for f in findings:
        assert f"{key!r} is refused: {REFUSED_KEYS[key]}" in f.message


def test_configured_refused_key_is_refused_even_where_the_schema_allows_it() -> None:
    refused = {**REFUSED_KEYS, "owner": "cases are owned by the tree", "timeout": "no timeouts"}
    findings = lint(S + "    owner: me\n    timeout: 5m\n", refused)
    assert where(findings) == [("GE301", 4, 5), ("GE301", 5, 5)]
    assert "cases are owned by the tree" in findings[0].message
    assert "no timeouts" in findings[1].message


def test_refused_keys_are_not_looked_for_inside_tool_arguments() -> None:
    text = ("defaults: {trials: 2}\n" + S
            + "    expect:\n      - tool_called: {name: a, args: {files: [x], tool: y}}\n")
    assert lint(text) == []


def test_duplicate_id_names_the_first_line() -> None:
    [f] = lint(S + "  - id: b\n    user: x\n  - id: a\n    user: y\n")
    assert (f.code, f.line) == ("GE401", 6)
    assert "first at line 2" in f.message


def test_min_above_max_names_the_max_line() -> None:
    text = (S + "    expect:\n      - max_tool_calls: {name: a, count: 1}\n"
            "      - min_tool_calls: {name: a, count: 3}\n")
    [f] = lint(text)
    assert (f.code, f.line, f.col) == ("GE403", 6, 42)
    assert "(line 5)" in f.message


def test_min_and_max_of_different_tools_or_scenarios_are_independent() -> None:
    text = (S + "    expect:\n      - min_tool_calls: {name: a, count: 3}\n"
            "      - max_tool_calls: {name: b, count: 1}\n"
            "  - id: b\n    user: x\n    expect:\n      - max_tool_calls: {name: a, count: 1}\n")
    assert lint(text) == []


def test_one_trial_warning_is_a_warning_and_more_trials_silence_it() -> None:
    [f] = lint(S + "    expect:\n      - grader: {name: q.f}\n")
    assert f.severity == "warning"
    assert "one trial cannot tell flaky from pass" in f.message
    assert lint("defaults: {trials: 2}\n" + S + "    expect:\n      - grader: {name: q.f}\n") == []
    assert lint(S + "    trials: 3\n    expect:\n      - grader: {name: q.f}\n") == []


def test_one_trial_without_a_grader_is_fine() -> None:
    assert lint(S + "    trials: 1\n    expect:\n      - no_error: true\n") == []


def test_grader_pattern_is_not_double_reported() -> None:
    findings = lint("defaults: {trials: 3}\n" + S + "    expect:\n      - grader: {name: a.b.c}\n")
    assert [f.code for f in findings] == ["GE501"]


def test_pass_below_range_is_not_double_reported() -> None:
    findings = lint("defaults: {trials: 3}\n" + S
                    + "    expect:\n      - grader: {name: q.f, pass_below: 2}\n")
    assert [f.code for f in findings] == ["GE404"]


def test_refused_key_is_not_also_an_unknown_key() -> None:
    assert [f.code for f in lint("suite: x\n" + S)] == ["GE301"]


@pytest.mark.parametrize(("name", "says"), [
    ("a.b.c", "more than one dot"),
    ("../x.f", "holds a path"),
    ("x/y.f", "holds a path"),
    ("x.", "empty function part"),
    (".f", "empty file part"),
    ("x", "has no function"),
    ("", "is empty"),
    ("my-file.f", "file part 'my-file' is not an identifier"),
    ("q.2fast", "function part '2fast' is not an identifier"),
    ("class.f", "is a Python keyword"),
], ids=lambda v: v or "empty")
def test_grader_name_problems_are_specific(name: str, says: str) -> None:
    problem = grader_name_problem(name)
    assert problem is not None and says in problem


@pytest.mark.parametrize("name", ["quality.answers", "_x._y", "Q1.f2"])
def test_good_grader_names(name: str) -> None:
    assert grader_name_problem(name) is None


def test_grader_refs_only_for_valid_names() -> None:
    text = ("defaults: {trials: 3}\n" + S + "    expect:\n      - grader: {name: a.b.c}\n"
            "      - grader: {name: good.one}\n      - grader: {name: 5}\n")
    findings, refs = lint_case_bytes(text.encode(), "c.yaml", REFUSED_KEYS)
    assert refs == [GraderRef("good.one", "c.yaml", 7, 24)]
    assert [f.code for f in findings] == ["GE501", "GE202"]


def test_every_problem_in_one_file_is_reported_in_one_run() -> None:
    text = ("suite: x\ndefaults: {trials: 0}\nscenarios:\n  - id: a\n    user: hi\n"
            "    expect:\n      - final_anwser_contains: x\n"
            "      - tool_order: {first: a, then: a}\n"
            "  - id: a\n    user: []\n")
    codes = [f.code for f in lint(text)]
    assert codes == ["GE301", "GE204", "GE205", "GE402", "GE401", "GE204"]


def test_findings_are_sorted_and_name_the_path() -> None:
    findings = lint(S + "  - id: a\n    user: x\n    trials: 0\n")
    assert findings == sorted(findings)
    assert all(f.path == "evals/cases/c.yaml" for f in findings)


def test_messages_are_one_line_and_clip_long_values() -> None:
    long = "x" * 500
    [f] = lint(f"scenarios:\n  - id: a\n    user: hi\n    trials: '{long}'\n")
    assert "\n" not in f.message and len(f.message) < 200


def test_yaml_findings_come_through() -> None:
    assert where(lint("a: 1\na: 2\n")) == [("GE108", 2, 1)]


# -- through the real CLI, as a user sees it ------------------------------------------

BAD_CASE = """\
suite: nightly
scenarios:
  - id: one
    user: hi
    trials: 3
    expect:
      - final_anwser_contains: Paris
      - grader: {name: a.b.c}
  - id: one
    user: again
"""


def test_cli_reports_case_findings_with_positions(repo: Repo) -> None:
    repo.commit({"evals/cases/bad.yaml": BAD_CASE, "evals/cases/good.yaml": GOOD,
                 "evals/graders/quality.py": "def answers(t, case, run):\n    return True\n\n\n"
                                             "def is_short(t, case, run):\n    return True\n"})
    result = run_cli("lint", cwd=repo.path)
    assert result.code == 1, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("evals/")]
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["evals/cases/bad.yaml:1:1:", "GE301"],
        ["evals/cases/bad.yaml:7:9:", "GE205"],
        ["evals/cases/bad.yaml:8:24:", "GE501"],
        ["evals/cases/bad.yaml:9:9:", "GE401"],
    ]
    assert "did you mean final_answer_contains?" in lines[1]


def test_cli_warning_alone_exits_zero(repo: Repo) -> None:
    repo.commit({"evals/cases/c.yaml": S + "    expect:\n      - grader: {name: q.f}\n",
                 "evals/graders/q.py": "def f(t, case, run):\n    return True\n"})
    result = run_cli("lint", cwd=repo.path)
    assert result.code == 0, result.out + result.err
    assert "evals/cases/c.yaml:5:9: GE405 (warning)" in result.out
