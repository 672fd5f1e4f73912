"""Graders between two revisions: normalized code, never imported."""

from __future__ import annotations

import json

import pytest

from gitevals.diff.graders import GraderChange, diff_grader_module
from tests.conftest import Repo, run_cli

BASE = '''\
"""Quality graders."""
import json

PROMPT = "Is this answer good? Say yes or no."


def _ask(t, text):
    return t.llm(PROMPT + text)


def answers(t, case, run):
    """Pass when the judge says yes."""
    return _ask(t, run["final_answer"]) == "yes"


def short(t, case, run):
    return len(run["final_answer"] or "") < 80


async def asynchronous(t, case, run):
    return True
'''


def _edit(old: str, new: str) -> bytes:
    assert old in BASE
    return BASE.replace(old, new).encode()


@pytest.mark.parametrize(("after", "expected"), [
    (BASE.encode(), []),
    (_edit("    return len(run", "    # comments do not change behaviour\n    return len(run"), []),
    (_edit('    return _ask(t, run["final_answer"]) == "yes"',
           '    return (\n        _ask(t, run["final_answer"])\n        == "yes"\n    )'), []),
    (_edit('"""Pass when the judge says yes."""', '"""Docstrings are documentation."""'), []),
    (_edit("< 80", "< 60"), [GraderChange("evals/graders/quality.py", "quality.short", "changed")]),
    (_edit("Say yes or no.", "Answer yes or no."),  # _ask(t, text) is a helper, no grader
     [GraderChange("evals/graders/quality.py", "quality.answers", "changed", ("PROMPT",))]),
    (_edit("return t.llm(PROMPT + text)", "return t.llm(text + PROMPT)"),
     [GraderChange("evals/graders/quality.py", "quality.answers", "changed", ("_ask",))]),
    (_edit("def short(", "def brief(").replace(b"async def asynchronous", b"async def later"),
     [GraderChange("evals/graders/quality.py", "quality.brief", "added"),
      GraderChange("evals/graders/quality.py", "quality.short", "removed")]),
    (_edit("def short(t, case, run):", "def short(t, case):"),  # no longer a grader (GE508)
     [GraderChange("evals/graders/quality.py", "quality.short", "removed")]),
    (_edit("PROMPT = ", "def normalize(text):\n    return text.strip()\n\n\n"
                        "def _shown(t, case, run):\n    return True\n\n\nPROMPT = "),
     [GraderChange("evals/graders/quality.py", "quality._shown", "added")]),
    (_edit("import json", "import json\nprint('module code')"),
     [GraderChange("evals/graders/quality.py", "quality.*", "changed", ("<module code>",))]),
], ids=["same", "comment", "reformatted", "docstring", "body", "via-constant", "via-helper",
        "renamed", "signature", "helpers-added", "module-code"])
def test_diff_grader_module(after: bytes, expected: list[GraderChange]) -> None:
    assert diff_grader_module("evals/graders/quality.py", BASE.encode(), after) == expected


def test_syntax_error_on_one_side_is_reported() -> None:
    (change,) = diff_grader_module("evals/graders/q.py", BASE.encode(), b"def broken(:\n")
    assert change.kind == "unreadable"
    assert change.problem is not None and change.problem.startswith("B: evals/graders/q.py:1:1:")


CASE = """\
scenarios:
  - id: judged
    user: hi
    expect:
      - grader: {name: quality.answers}
  - id: not-judged
    user: hi
    expect: [{no_error: true}]
"""

OTHER_CASE = """\
scenarios:
  - id: short-answer
    user: hi
    expect: [{grader: {name: quality.short}}]
"""


def test_cli_graders_and_the_scenarios_that_use_them(repo: Repo) -> None:
    # A grader module that would write a file if it were ever imported or run.
    trap = 'open("IMPORTED", "w").write("x")\n'
    repo.commit({"evals/graders/quality.py": BASE + trap, "evals/cases/tone.yaml": CASE,
                 "evals/cases/other.yaml": OTHER_CASE})
    helpers = ("def normalize(text):\n    return text.strip()\n\n\n"
               "def _sandboxed(bwrap, work):\n    return work\n\n\n"
               "async def later(t, case, run):\n    return True\n\n\n")
    repo.commit({"evals/graders/quality.py": _edit("Say yes or no.", "Answer.").decode() + trap,
                 "evals/graders/extra.py": helpers + "def new(t, case, run):\n    return True\n"})
    r = run_cli("diff", "HEAD~1", "HEAD", "--only", "graders", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "verdicts not compared, 2 graders changed"
    assert r.out.split("\n\n", 1)[1] == """\
Graders
  grader           change   detail
  extra.new        added
  quality.answers  changed  via PROMPT

Scenarios on B using a changed grader
  case  scenario  grader
  tone  judged    quality.answers
"""
    assert not (repo.path / "IMPORTED").exists()


def test_cli_graders_json(repo: Repo) -> None:
    repo.commit({"evals/graders/quality.py": BASE, "evals/cases/tone.yaml": CASE})
    repo.commit({"evals/graders/quality.py": _edit("< 80", "< 70").decode(),
                 "evals/cases/other.yaml": OTHER_CASE})
    doc = json.loads(run_cli("diff", "HEAD~1", "--format", "json", cwd=repo.path).out)
    assert doc["graders"] == [{"kind": "changed", "name": "quality.short",
                               "path": "evals/graders/quality.py", "problem": None, "via": []}]
    assert doc["grader_users"] == [{"case": "other", "grader": "quality.short",
                                    "scenario": "short-answer"}]


def test_a_grader_nested_too_deeply_is_unreadable_not_a_crash() -> None:
    deep = b"def short(t, case, run):\n    return " + b"-" * 1500 + b"1\n"
    (change,) = diff_grader_module("evals/graders/q.py", BASE.encode(), deep)
    assert change.kind == "unreadable"
    assert change.problem == ("B: evals/graders/q.py:2:1: does not parse (nested more than 500 "
                              "levels deep; split the expression into smaller statements)")
