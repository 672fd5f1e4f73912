"""Issue 25, item 14: no raw control or format character (ESC, BEL, a bidi override, a
zero-width joiner...) from the tree, a target, a grader or a judge reaches a terminal or
a GitHub annotation: ``lint`` (text and github), ``run``, ``show``, ``show --trial``,
``calibrate``. Every output is scanned for every Cc and Cf character but newline and
tab."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from gitevals.text import CONTROL, visible
from tests.conftest import Repo, Result, run_cli
from tests.support.judges import FakeJudge

#: ESC and BEL (an OSC title), a right-to-left override and isolate, a zero-width
#: space, a BOM, a tag character: each must come out escaped.
EVIL = "\x1b]0;owned\x07 \x1b[2J \u202eexe.txt\u2066 z\u200bw \ufeff \U000e0041 \u0085"

TARGET = f"""\
import json, sys
EVIL = {EVIL!r}
for line in sys.stdin:
    sys.stdout.write(json.dumps({{"final_answer": "Paris " + EVIL,
        "tool_calls": [{{"name": "t" + EVIL, "args": {{"k": EVIL}}, "result": EVIL}}],
        "hooks": [{{"name": "h" + EVIL, "decision": EVIL}}], "error": None}}) + "\\n")
    sys.stdout.flush()
"""
GRADER = f"""\
EVIL = {EVIL!r}
def g(t, case, run):
    return {{"pass": False, "why": "grader says " + EVIL}}
def judged(t, case, run):
    said = t.llm("is it good? " + run["final_answer"])
    return {{"pass": "PASS" in said, "why": said}}
"""
CASE = """\
defaults: {trials: 1, timeout: 20s}
scenarios:
  - id: "s1"
    user: "hello"
    expect:
      - final_answer_contains: "Paris \\e[31m\\u202e"
      - grader: {name: q.g}
"""
BAD = ('scenarios:\n  - id: x\n    user: y\n    "ke\\u202ey\\e[2J": 1\n'
       '    expect: [{no_error: true}]\n')


def _raw(text: str) -> list[str]:
    """Every Cc or Cf character of ``text`` but newline and tab, as its name."""
    return [f"U+{ord(c):04X}" for c in text
            if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"]


def _clean(r: Result) -> None:
    assert _raw(r.out) == [] and _raw(r.err) == [], (r.out + r.err)[:2000]


def _settings(judge: FakeJudge) -> str:
    return (f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
            f'\n[tool.gitevals.judge]\nbase_url = "{judge.url}"\n'
            'model = "judge-2026\\u202e\\u001b[2J-01"\nretries = 1\n')


def _labels(n: int) -> str:
    rows = [{"id": f"item-{i}{EVIL if i % 7 == 0 else ''}", "input": f"q {i}",
             "output": f"answer {i} {EVIL}", "label": "pass" if i % 3 else "fail"}
            for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def evil(repo: Repo, judge: FakeJudge) -> Repo:
    judge.body = json.dumps({"choices": [{"message": {
        "role": "assistant", "content": f"PASS {EVIL}"}}]}).encode()
    repo.commit({"pyproject.toml": _settings(judge), "harness.py": TARGET,
                 "evals/cases/tone.yaml": CASE, "evals/graders/q.py": GRADER,
                 "labels.jsonl": _labels(120)})
    return repo


def test_run_show_and_show_trial_escape_every_control_and_format_character(
        evil: Repo) -> None:
    ran = run_cli("run", cwd=evil.path)
    assert ran.code == 1, ran.err  # the grader fails every trial
    _clean(ran)
    for args in (["show"], ["show", "--trial", "tone/s1"], ["show", "--trial", "tone/s1/0"],
                 ["show", "--format", "markdown"]):
        shown = run_cli(*args, cwd=evil.path)
        assert shown.code in (0, 1), shown.err
        _clean(shown)
    trial = run_cli("show", "--trial", "tone/s1", cwd=evil.path).out
    assert "\\u202eexe.txt\\u2066" in trial and "\\x1b]0;owned\\x07" in trial
    assert "z\\u200bw" in trial  # escaped where it stood, so the text stays readable


def test_lint_text_and_github_annotations_escape_them(evil: Repo) -> None:
    evil.commit({"evals/cases/bad\u202e.yaml": BAD})
    for fmt in ("text", "github"):
        r = run_cli("lint", "--format", fmt, cwd=evil.path)
        assert r.code == 1, r.err
        _clean(r)
        assert "\\u202e" in r.out
    github = run_cli("lint", "--format", "github", cwd=evil.path).out
    assert "::error file=evals/cases/bad\\u202e.yaml," in github


def test_calibrate_escapes_them(evil: Repo) -> None:
    r = run_cli("calibrate", "q.judged", "--labels", "labels.jsonl", cwd=evil.path)
    assert r.code in (0, 1), r.err
    _clean(r)
    assert "judge judge-2026\\u202e\\x1b[2J-01 at" in r.out  # the model, from the tree


def test_visible_escapes_every_control_and_format_character() -> None:
    """The hand-written list in ``CONTROL`` covers Unicode's categories Cc and Cf (the
    running Python's Unicode version; the list follows Unicode 15)."""
    for code in range(0x110000):
        c = chr(code)
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp"):
            assert CONTROL.fullmatch(c), f"U+{code:04X}"
            assert _raw(visible(c)) == [], f"U+{code:04X}"
