"""Issue 8, class 5: every crash is a finding or a one-line error that names the input.

Each hostile input is made in a real repository under ``tmp_path`` and the real CLI
reads it: settings, goldens rows, run artifacts and notes, grader modules.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import Repo, run_cli
from tests.support.fresh_cli import run_cli_fresh

CASE = """\
scenarios:
  - id: one
    user: hello
    expect: [{no_error: true}]
"""

DEEP = 5000
TOML = [
    ("deep-array", 'root = "evals"\na = ' + "[" * DEEP + "]" * DEEP + "\n", 2, 105,
     "nested more than 100 levels deep"),
    ("deep-inline-table", 'root = "evals"\na = ' + "{b = " * DEEP + "1" + "}" * DEEP + "\n",
     2, 505, "nested more than 100 levels deep"),
    ("5000-digit-integer", '\nroot = "evals"\na = ' + "1" * 5000 + "\n", 3, 5,
     "a number too large to read"),
    ("huge-hex-timeout", 'root = "evals"\n[judge]\nbase_url = "http://x"\nmodel = "m-2026"\n'
     "timeout = 0x" + "f" * 300 + "\n", 5, 1, "judge.timeout is a number too large to use"),
    ("infinite-timeout", 'root = "evals"\n[judge]\nbase_url = "http://x"\nmodel = "m-2026"\n'
     "timeout = inf\n", 5, 1, "judge.timeout is a number too large to use"),
]


@pytest.mark.parametrize("where", ["gitevals.toml", "pyproject.toml"])
@pytest.mark.parametrize(("text", "line", "col", "message"), [t[1:] for t in TOML],
                         ids=[t[0] for t in TOML])
def test_unreadable_settings_are_ge700_at_their_line(
        repo: Repo, where: str, text: str, line: int, col: int, message: str) -> None:
    if where == "pyproject.toml":
        text = text.replace("[judge]", "[tool.gitevals.judge]")
        text, line = "[tool.gitevals]\n" + text, line + 1
        message = message.replace("judge.", "tool.gitevals.judge.")
    repo.write({where: text, "evals/cases/c.yaml": CASE})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1, res.err
    assert res.err == ""
    first = res.out.splitlines()[0]
    assert first.startswith(f"{where}:{line}:{col}: GE700 cannot read settings: {message}"), first


def test_brackets_in_strings_and_comments_are_not_nesting(repo: Repo) -> None:
    text = ('root = "evals"\n# ' + "[" * 300 + "\n" + 'x = "' + "[" * 300 + '"\n'
            + "y = '" + "{" * 300 + "'\n" + 'z = """\n' + "[" * 300 + '\n"""\n')
    repo.write({"gitevals.toml": text, "evals/cases/c.yaml": CASE})
    res = run_cli("lint", cwd=repo.path)
    assert [line.split(" ")[1] for line in res.out.splitlines()[:-1]] == ["GE701"] * 3


ROWS = [
    ("deep-100000", '{"id": "d", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "GE607",
     "nested more than 200 levels deep"),
    ("deep-500", '{"id": "d", "x": ' + "[" * 500 + "]" * 500 + "}", "GE607",
     "nested more than 200 levels deep"),
    ("lone-surrogate-id", '{"id": "\\ud800"}', "GE608", "lone UTF-16 surrogate"),
    ("lone-surrogate-key", '{"id": "k", "\\udfff": 1}', "GE608", "lone UTF-16 surrogate"),
    ("5000-digit-value", '{"id": "n", "x": ' + "1" * 5000 + "}", "GE609",
     "a number too large"),
    ("5000-digit-id", '{"id": ' + "7" * 5000 + "}", "GE609", "a number too large"),
    ("float-overflow", '{"id": "f", "x": 1e400}', "GE609", "a number too large"),
]
GOOD_ROW = '{"id": "ok", "input": "hi"}'


@pytest.mark.parametrize(("row", "code", "message"), [r[1:] for r in ROWS],
                         ids=[r[0] for r in ROWS])
def test_a_goldens_row_gitevals_cannot_hold_is_a_finding(
        repo: Repo, row: str, code: str, message: str) -> None:
    repo.write({"evals/cases/c.yaml": CASE,
                "evals/goldens.jsonl": f"{GOOD_ROW}\n{row}\n{GOOD_ROW[:-1]}, \"n\": 1}}\n"})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1, res.err
    lines = res.out.splitlines()
    assert lines[0].startswith(f"evals/goldens.jsonl:2:1: {code} row cannot be read: "), lines
    assert message in lines[0]
    assert lines[1].startswith("evals/goldens.jsonl:3:")  # the duplicate after it: one run


def test_a_valid_surrogate_pair_is_no_finding(repo: Repo) -> None:
    repo.write({"evals/cases/c.yaml": CASE,
                "evals/goldens.jsonl": '{"id": "p", "x": "\\ud83d\\ude00", "n": 1e300}\n'})
    assert run_cli("lint", cwd=repo.path).code == 0


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
@pytest.mark.parametrize(("row", "code", "message"), [r[1:] for r in ROWS],
                         ids=[r[0] for r in ROWS])
def test_diff_shows_a_goldens_row_it_cannot_read_as_a_problem(
        repo: Repo, fmt: str, row: str, code: str, message: str) -> None:
    a = repo.commit({"evals/cases/c.yaml": CASE, "evals/goldens.jsonl": GOOD_ROW + "\n"})
    b = repo.commit({"evals/goldens.jsonl": f"{GOOD_ROW}\n{row}\n"})
    c = repo.commit({"evals/goldens.jsonl": f"{GOOD_ROW}\n{row}\n{row}\n"})
    res = run_cli("diff", a, b, "--only", "goldens", "--format", fmt, cwd=repo.path)
    assert (res.code, res.err) == (0, "")
    if fmt == "json":
        problems = json.loads(res.out)["goldens"]["problems"]
        assert [(p["side"], p["lines"], p["kind"]) for p in problems] == [
            ("b", [2], "unparsable")]
        assert message in problems[0]["message"]
    else:
        assert message in res.out
    for args in ((b, a), (b, c), (c, b)):  # on side A, on both sides, read as duplicates
        res = run_cli("diff", *args, "--only", "goldens", "--format", fmt, cwd=repo.path)
        assert (res.code, res.err) == (0, ""), args


GRADERS = [
    ("unary-50000", "x = " + "-" * 50_000 + "1", 5, "nested too deeply for Python's parser"),
    ("unary-2900", "x = " + "-" * 2900 + "1", 5, "nested more than 500 levels deep"),
    ("not-2900", "x = " + "not " * 2900 + "1", 5, "nested more than 500 levels deep"),
    ("lambda-3000", "x = " + "lambda: " * 3000 + "1", 5,
     "nested too deeply for Python's parser"),
    ("sum-100000", "x = 1" + "+1" * 100_000, 5, "nested too deeply for Python's parser"),
    ("in-a-function", "def g(t, case, run):\n    return " + "-" * 2900 + "1", 6,
     "nested more than 500 levels deep"),
]
GRADER = "def ok(t, case, run):\n    return True\n\ny = 2\n"


@pytest.mark.parametrize(("code", "line", "message"), [g[1:] for g in GRADERS],
                         ids=[g[0] for g in GRADERS])
def test_a_grader_nested_past_the_parser_is_a_finding_and_an_unreadable_row(
        repo: Repo, code: str, line: int, message: str) -> None:
    a = repo.commit({"evals/cases/c.yaml": CASE, "evals/graders/g.py": GRADER})
    b = repo.commit({"evals/graders/g.py": GRADER + code + "\nz = 3\n"})
    # A fresh process: how deep the parser gets depends on the stack a call starts with
    # (one child, each call from the top of its stack, as `python -m gitevals` makes it).
    formats = ("text", "json", "markdown")
    lint, *diffs = run_cli_fresh(["lint"], *(["diff", a, b, "--only", "graders", "--format", f]
                                             for f in formats), cwd=repo.path)
    assert lint.code == 1, lint.err
    assert lint.out.startswith(f"evals/graders/g.py:{line}:1: GE503 grader module does not parse: "
                               f"{message}"), lint.out
    for fmt, res in zip(formats, diffs, strict=True):
        assert (res.code, res.err) == (0, ""), fmt
        assert "unreadable" in res.out and message.replace("'", "") in res.out.replace("'", "")


HARNESS = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"final_answer": "Paris"}), flush=True)
"""
DEEP_DOC = '{"format": "gitevals-run/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
DEEP_MESSAGE = "not a gitevals run artifact: nested too deep to read"


def _run_repo(repo: Repo) -> str:
    import sys

    settings = f'[target]\ncommand = ["{sys.executable}", "harness.py"]\n'
    return repo.commit({"gitevals.toml": settings, "harness.py": HARNESS,
                        "evals/cases/c.yaml": CASE})


@pytest.mark.parametrize("args", [("show",), ("show", "HEAD"), ("diff", "HEAD", "HEAD")],
                         ids=["show", "show-rev", "diff"])
def test_a_deep_note_is_one_line_and_run_replaces_it(repo: Repo, args: tuple[str, ...]) -> None:
    commit = _run_repo(repo)
    (repo.path / "deep.json").write_text(DEEP_DOC)
    repo.git("notes", "--ref", "gitevals", "add", "-F", "deep.json", commit)
    res = run_cli(*args, cwd=repo.path)
    assert res.code == 2 and res.out == ""
    assert res.err == (f"gitevals: error: git note refs/notes/gitevals on {commit[:12]}: "
                       f"{DEEP_MESSAGE} (gitevals writes runs at most a few hundred levels "
                       "deep)\n")
    assert run_cli("run", cwd=repo.path).code == 0
    (repo.path / "evals/results").rename(repo.path / "elsewhere")  # read the note alone
    kept = repo.git("notes", "--ref", "gitevals", "show", commit).splitlines()
    assert len(kept) == 1 and kept[0].startswith('{"cases":')  # the unreadable run is gone
    assert run_cli(*args, cwd=repo.path).code == 0


@pytest.mark.parametrize("args", [("show", "F"), ("score", "F"), ("diff", "HEAD", "--a-run", "F"),
                                  ("diff", "HEAD", "--b-run", "F")],
                         ids=["show", "score", "diff-a-run", "diff-b-run"])
def test_a_deep_artifact_file_is_one_line(repo: Repo, args: tuple[str, ...]) -> None:
    _run_repo(repo)
    (repo.path / "deep.json").write_text(DEEP_DOC)
    res = run_cli(*(("deep.json" if a == "F" else a) for a in args), cwd=repo.path)
    assert (res.code, res.out) == (2, "")
    assert res.err.startswith(f"gitevals: error: deep.json: {DEEP_MESSAGE}")
    assert res.err.count("\n") == 1


@pytest.mark.parametrize("args", [("run",), ("publish-check",), ("lint", "--rev", "HEAD")],
                         ids=["run", "publish-check", "lint-rev"])
def test_committed_deep_settings_are_ge700_in_every_command(
        repo: Repo, args: tuple[str, ...]) -> None:
    repo.commit({"gitevals.toml": TOML[0][1], "evals/cases/c.yaml": CASE})
    res = run_cli(*args, cwd=repo.path)
    assert res.code in (1, 2) and "Traceback" not in res.err
    where = "gitevals.toml:2:105: GE700 cannot read settings: nested more than 100 levels deep"
    assert where in res.out + res.err
    assert "internal error" not in res.err
