"""A corpus of malformed case files: each yields findings, none raises.

Plus property tests: arbitrary bytes and YAML-ish text never crash the case
rules, and every finding points at a real position (line and column >= 1).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitevals.findings import Finding
from gitevals.lint.cases import lint_case_bytes
from gitevals.settings import REFUSED_KEYS
from tests.support.malformed import BOMB, CORPUS, HEAD


def lint(data: bytes) -> list[Finding]:
    findings, _ = lint_case_bytes(data, "evals/cases/bad.yaml", REFUSED_KEYS)
    return findings


def test_corpus_is_large_and_distinct() -> None:
    assert len(CORPUS) >= 30
    assert len({data for _, data, _ in CORPUS}) == len(CORPUS)
    assert len({name for name, _, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("data", "code"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_malformed_input_yields_findings(data: bytes, code: str) -> None:
    findings = lint(data)
    assert findings, "a malformed file must not lint clean"
    assert findings[0].code == code
    for f in findings:
        assert f.line >= 1 and f.col >= 1
        assert f.path == "evals/cases/bad.yaml"
        assert "\n" not in f.message
        assert f.severity in ("error", "warning")


def test_alias_bomb_is_refused_fast() -> None:
    start = time.perf_counter()
    findings = lint(BOMB * 50)
    assert time.perf_counter() - start < 1.0
    assert [(f.code, f.line, f.col) for f in findings] == [("GE106", 1, 4)]


def test_duplicate_key_names_both_lines() -> None:
    [f] = lint(HEAD + b"    user: again\n")
    assert (f.line, f.col) == (4, 5)
    assert "duplicate key 'user' (first at line 3)" in f.message


def test_non_utf8_points_at_the_byte() -> None:
    [f] = lint(b"scenarios:\n  - id: caf\xe9\n")
    assert (f.code, f.line, f.col) == ("GE102", 2, 12)


@pytest.mark.parametrize(("data", "pos"), [
    (b"scenarios:\n\t- id: a\n", (2, 1)),
    (HEAD + b"\t  trials: 2\n", (4, 1)),
    (HEAD + b"    expect:\n   \t- no_error: true\n", (5, 4)),
], ids=["top", "scenario-key", "after-spaces"])
def test_tab_in_indentation_points_at_the_tab(data: bytes, pos: tuple[int, int]) -> None:
    [f] = lint(data)
    assert (f.code, f.line, f.col) == ("GE103", *pos)


def test_tabs_that_are_content_are_fine() -> None:
    # A Makefile in a literal block, a tab in quotes and in a flow list: all valid YAML.
    data = (b"defaults: {trials: 2}\nscenarios:\n  - id: a\n    user: |\n      all:\n"
            b"      \tmake build\n    expect:\n      - final_answer_contains: \"a\\tb\"\n"
            b"      - final_answer_max_chars: [1,\n\t2]\n")
    assert [f.code for f in lint(data)] == ["GE202"]  # the list, not the tab


def test_control_character_points_at_it() -> None:
    [f] = lint(b"scenarios:\n  - id: a\x00\n")
    assert (f.code, f.line, f.col) == ("GE101", 2, 10)


# -- properties ------------------------------------------------------------------

_TOKENS = [
    "scenarios:", "defaults:", "  - ", "    ", "id: ", "user: ", "expect:", "trials: ",
    "timeout: ", "grader: {name: ", "tool_order: {first: a, then: ", "pass_below: ",
    "min_tool_calls: {name: a, count: ", "suite: ", "\n", "{", "}", "[", "]", ":", ", ",
    "-", "&a ", "*a", "!!python/object ", "!tag ", "\t", "'", '"', "#", "---", "? ",
    "~", "1", "0.5", "a.b.c", "x", "true", "|\n", ">\n", "\r\n", "\x00", "\u2028", "é",
]
yamlish = st.lists(st.sampled_from(_TOKENS), max_size=60).map("".join)


def _check(data: bytes) -> None:
    findings, refs = lint_case_bytes(data, "c.yaml", REFUSED_KEYS)
    for f in findings:
        assert isinstance(f, Finding)
        assert f.line >= 1 and f.col >= 1, f
        assert f.code.startswith("GE") and "\n" not in f.message
    for r in refs:
        assert r.line >= 1 and r.col >= 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _check(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yamlish)
def test_yamlish_text_never_raises(text: str) -> None:
    _check(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=500))
def test_arbitrary_text_never_raises(text: str) -> None:
    _check(text.encode("utf-8", "surrogatepass"))
