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

HEAD = b"scenarios:\n  - id: a\n    user: hi\n"

BOMB = b"".join(
    [b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n".encode()
       for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
)

#: (id, bytes, code of the first finding)
CORPUS: list[tuple[str, bytes, str]] = [
    ("empty", b"", "GE105"),
    ("only-comments", b"# nothing here\n# at all\n", "GE105"),
    ("only-whitespace", b"   \n\n  \n", "GE105"),
    ("document-marker-only", b"---\n", "GE109"),
    ("top-level-list", b"- id: a\n  user: hi\n", "GE109"),
    ("top-level-scalar", b"hello\n", "GE109"),
    ("top-level-null", b"~\n", "GE109"),
    ("latin-1", b"scenarios:\n  - id: caf\xe9\n", "GE102"),
    ("utf-16", "scenarios: []\n".encode("utf-16"), "GE102"),
    ("cp1252-quotes", b"a: \x93quoted\x94\n", "GE102"),
    ("binary-junk", bytes(range(256)) * 4, "GE102"),
    ("nul-byte", b"scenarios:\n  - id: a\x00\n", "GE101"),
    ("bell-char", b"a: ding\x07\n", "GE101"),
    ("over-1-mib", b"a: 1\n" + b"#" * (1024 * 1024), "GE104"),
    ("tab-indent", b"scenarios:\n\t- id: a\n", "GE103"),
    ("tab-indent-nested", HEAD + b"\t  trials: 2\n", "GE103"),
    ("duplicate-top-key", HEAD + b"scenarios: []\n", "GE108"),
    ("duplicate-nested-key", HEAD + b"    user: again\n", "GE108"),
    ("alias-bomb", BOMB, "GE106"),
    ("anchor", b"defaults: &d {trials: 2}\n" + HEAD, "GE106"),
    ("alias", b"x: 1\ny: *x\n", "GE106"),
    ("python-object", b"a: !!python/object:os.system {}\n", "GE107"),
    ("python-name", b"scenarios: !!python/name:os.system\n", "GE107"),
    ("python-apply", b"a: !!python/object/apply:os.system [ls]\n", "GE107"),
    ("custom-tag", b"a: !secret 1\n", "GE107"),
    ("binary-tag", b"a: !!binary aGVsbG8=\n", "GE107"),
    ("set-tag", b"!!set {a, b}\n", "GE107"),
    ("complex-key", b"? [a, b]\n: 1\n", "GE110"),
    ("deep-flow", b"[" * 100_000, "GE101"),
    ("deep-flow-mappings", b"{a: " * 300 + b"1" + b"}" * 300, "GE111"),
    ("deep-block", b"a:\n" + b"".join(b" " * (2 * i) + b"b:\n" for i in range(1, 200)), "GE111"),
    ("deep-compact-sequences", b"- " * 5000 + b"x\n", "GE101"),
    ("unclosed-flow", b"scenarios: [{id: a\n", "GE101"),
    ("unterminated-quote", b"a: 'open\n", "GE101"),
    ("bad-indentation", b"a: |\n  x\n b: 1\n", "GE101"),
    ("two-values-one-line", b"a: b: c\n", "GE101"),
    ("two-documents", b"a: 1\n---\nb: 2\n", "GE101"),
    ("merge-key", b"<<: {a: 1}\n", "GE201"),
    ("numeric-key", b"1: x\n" + HEAD, "GE201"),
    ("scenarios-null", b"scenarios:\n", "GE202"),
    ("scenario-items-null", b"scenarios: [null, null]\n", "GE202"),
    ("nested-lists", b"scenarios: [[]]\n", "GE202"),
    ("expect-null-item", HEAD + b"    expect: [null]\n", "GE202"),
    ("trials-infinity", HEAD + b"    trials: .inf\n", "GE202"),
    ("everything-refused", b"suite: s\nagent: a\ntool: t\nfiles: []\n" + HEAD, "GE301"),
]


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
