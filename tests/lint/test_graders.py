"""Static grader resolution: table of modules x references -> code, line, col."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.lint.graders import index_module, resolve, resolve_all


@dataclass(frozen=True)
class Ref:
    name: str
    path: str = "evals/cases/a.yaml"
    line: int = 7
    col: int = 17


MODULE = b"""\
import json
from os import path as answers_path

THRESHOLD = 0.7
shout = lambda t, case, run: True


def answers(t, case, run):
    return True


def two(t, case):
    return True


def star(*args):
    return True


def four(t, case, run, extra):
    return True


def defaulted(t, case, run, extra=1, *, strict=False):
    return True


def kwonly(t, case, run, *, strict):
    return True


async def slow(t, case, run):
    return True


class Judge:
    def method(self, t, case, run):
        return True


if True:
    def conditional(t, case, run):
        return True
"""

CASES = [
    ("q.answers", None, ""),
    ("q.star", None, ""),
    ("q.defaulted", None, ""),
    ("nope.answers", "GE502", "grader module evals/graders/nope.py not found"),
    ("qq.answers", "GE502", "did you mean 'q'?"),
    ("q.answer", "GE504", "no function 'answer' in evals/graders/q.py; define it at top level "
     "(did you mean 'answers'?)"),
    ("q.zzz", "GE504", "no function 'zzz'"),
    ("q.method", "GE505", "'method' is a method of class Judge (evals/graders/q.py:37)"),
    ("q.two", "GE508", "'two' (evals/graders/q.py:12) takes 2 positional parameter(s) (t, case)"),
    ("q.four", "GE508", "requires 4 positional arguments (t, case, run, extra)"),
    ("q.kwonly", "GE508", "keyword-only parameter(s) without a default: strict"),
    ("q.slow", "GE507", "is `async def`"),
    ("q.THRESHOLD", "GE506", "is a variable (line 4), not a function"),
    ("q.shout", "GE506", "is a lambda (line 5)"),
    ("q.Judge", "GE506", "is a class"),
    ("q.json", "GE506", "is an import"),
    ("q.answers_path", "GE506", "is an import"),
    ("q.conditional", "GE509", "'conditional' (evals/graders/q.py:42) is not bound statically: "
     "it is bound under `if` on line 41; define it once, undecorated, as "
     "`def conditional(t, case, run):` at the module's top level"),
]


@pytest.mark.parametrize(("name", "code", "text"), CASES, ids=[c[0] for c in CASES])
def test_resolve(name: str, code: str | None, text: str) -> None:
    indexes = {"evals/graders/q.py": index_module(MODULE)}
    finding = resolve(Ref(name), "evals", indexes)
    if code is None:
        assert finding is None
        return
    assert finding is not None
    assert (finding.path, finding.line, finding.col, finding.code) == (
        "evals/cases/a.yaml", 7, 17, code)
    assert text in finding.message


def test_later_binding_wins() -> None:
    index = index_module(b"def f(t, case, run):\n    pass\nf = 3\n")
    finding = resolve(Ref("m.f"), "evals", {"evals/graders/m.py": index})
    assert finding is not None and finding.code == "GE506"


def test_syntax_error_reported_once_at_module_position() -> None:
    bad = index_module(b"def ok(t, case, run):\n    return True\n\ndef broken(:\n")
    indexes = {"evals/graders/bad.py": bad}
    refs = [Ref("bad.ok", line=3), Ref("bad.broken", line=9), Ref("bad.ok", "evals/cases/b.yaml")]
    findings = resolve_all(refs, "evals", indexes)
    assert [(f.path, f.line, f.col, f.code) for f in findings] == [
        ("evals/graders/bad.py", 4, 12, "GE503")]
    assert "does not parse" in findings[0].message


@pytest.mark.parametrize("source", [b"x = 1\0\n", b"\xff\xfe bad encoding\n", b"(" * 500 + b"\n"],
                         ids=["nul", "encoding", "deep"])
def test_unparsable_bytes_never_raise(source: bytes) -> None:
    index = index_module(source)
    assert index["error"] is not None
    assert resolve_all([Ref("m.f")], "evals", {"evals/graders/m.py": index})[0].code == "GE503"


def test_missing_module_when_root_is_repo_root() -> None:
    finding = resolve(Ref("m.f"), "", {})
    assert finding is not None and "graders/m.py not found" in finding.message


def test_index_is_json_roundtrippable() -> None:
    import json

    index = index_module(MODULE)
    assert json.loads(json.dumps(index)) == index


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_module_bytes_never_raise(data: bytes) -> None:
    index = index_module(data)
    findings = resolve_all([Ref("m.f")], "evals", {"evals/graders/m.py": index})
    assert len(findings) <= 1
    assert all(f.code in {"GE503", "GE504", "GE505", "GE506", "GE507", "GE508"} and f.line >= 1
               and f.col >= 1 for f in findings)
