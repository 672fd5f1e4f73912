"""Reporters: exact strings for text, json and github."""

from __future__ import annotations

import json

import pytest

from gitevals.findings import Finding
from gitevals.lint import LintResult
from gitevals.report.findings import (
    REPORTERS,
    annotation,
    escape_data,
    escape_property,
    render,
    rich_text,
    summary,
)

ERR = Finding("evals/cases/a.yaml", 6, 24, "GE502",
              "grader module evals/graders/nope.py not found; create it or fix the name")
WARN = Finding("evals/cases/b.yaml", 3, 5, "GE405", "one trial, 50% sure: a,b\nnext",
               "warning")
RESULT = LintResult((ERR, WARN), 3)
CLEAN = LintResult((), 1)


def test_text() -> None:
    assert REPORTERS["text"](RESULT) == (
        "evals/cases/a.yaml:6:24: GE502 grader module evals/graders/nope.py not found; "
        "create it or fix the name\n"
        "evals/cases/b.yaml:3:5: GE405 (warning) one trial, 50% sure: a,b\\nnext\n"
        "3 files checked: 1 error, 1 warning\n")


def test_text_clean() -> None:
    assert REPORTERS["text"](CLEAN) == "1 file checked: no problems\n"


def test_json_is_stable_and_sorted() -> None:
    out = REPORTERS["json"](RESULT)
    doc = json.loads(out)
    assert list(doc) == ["errors", "files", "findings", "warnings"]
    assert (doc["errors"], doc["warnings"], doc["files"]) == (1, 1, 3)
    assert doc["findings"][0] == {
        "code": "GE502", "col": 24, "line": 6, "path": "evals/cases/a.yaml",
        "message": ERR.message, "severity": "error"}
    assert out == REPORTERS["json"](LintResult((ERR, WARN), 3))


def test_github_escapes_data_and_properties() -> None:
    weird = Finding("dir,x/a:b%.yaml", 1, 2, "GE101", "100% bad\r\nline")
    out = REPORTERS["github"](LintResult((weird, WARN), 2))
    assert out == (
        "::error file=dir%2Cx/a%3Ab%25.yaml,line=1,col=2,title=GE101::100%25 bad%0D%0Aline\n"
        "::warning file=evals/cases/b.yaml,line=3,col=5,title=GE405::"
        "one trial, 50%25 sure: a,b%0Anext\n"
        "2 files checked: 1 error, 1 warning\n")


def test_summary_plurals() -> None:
    assert summary(LintResult((ERR, ERR), 1)) == "1 file checked: 2 errors, 0 warnings"


def test_rich_text_has_colour_and_the_same_words() -> None:
    out = rich_text(RESULT, width=200)
    assert "\x1b[" in out
    plain = _strip_ansi(out)
    assert "evals/cases/a.yaml:6:24: GE502 grader module" in plain
    assert plain.rstrip().endswith("3 files checked: 1 error, 1 warning")


def _strip_ansi(s: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", s)


def test_ok_and_counts() -> None:
    assert not RESULT.ok
    assert LintResult((WARN,), 1).ok
    assert CLEAN.ok


def test_render_picks_rich_text_only_for_a_terminal() -> None:
    assert render(RESULT, "text") == REPORTERS["text"](RESULT)
    assert render(RESULT, "github", 80) == REPORTERS["github"](RESULT)
    assert render(RESULT, "text", 80) == rich_text(RESULT, 80)


@pytest.mark.parametrize(("finding", "line"), [
    (ERR, "evals/cases/a.yaml:6:24: GE502 grader module evals/graders/nope.py not found; "
          "create it or fix the name"),
    (Finding("a b.yaml", 1, 2, "GE405", "m", "warning"), "a b.yaml:1:2: GE405 (warning) m"),
], ids=["error", "warning"])
def test_a_finding_prints_as_one_line(finding: Finding, line: str) -> None:
    assert str(finding) == line


@pytest.mark.parametrize(("raw", "data", "prop"), [
    ("50% a,b:c", "50%25 a,b:c", "50%25 a%2Cb%3Ac"),
    ("x\r\ny", "x%0D%0Ay", "x%0D%0Ay"),
], ids=["percent-comma-colon", "newlines"])
def test_github_escapes(raw: str, data: str, prop: str) -> None:
    assert (escape_data(raw), escape_property(raw)) == (data, prop)


def test_annotation_may_carry_another_message() -> None:
    assert annotation(WARN, "m, (at x)") == (
        "::warning file=evals/cases/b.yaml,line=3,col=5,title=GE405::m, (at x)")
