"""Issue 8, class 7: text from the tree or a target cannot attack the reader.

A case file named with ESC/OSC sequences, a scenario whose user turn carries ESC, a
target answering with ESC and BEL, goldens whose id, bucket and value carry them:
nothing raw reaches stdout or stderr of ``lint``, ``publish-check``, ``run``,
``show``, ``score`` or ``diff`` in text format; JSON keeps the data exact.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from gitevals.diff import Diff, Side
from gitevals.diff.goldens import diff_goldens
from gitevals.findings import Finding
from gitevals.lint import LintResult
from gitevals.report import diff as diff_report
from gitevals.report import findings as findings_report
from tests.conftest import Repo, built_once, git, run_cli

EVIL_FILE = "evals/cases/evil\x1b]0;owned\x07.yaml"
TARGET = """\
import json, sys
for line in sys.stdin:
    sys.stdout.write(json.dumps({"final_answer": "hi \\x1b[31m red \\x07"}) + "\\n")
    sys.stdout.flush()
"""
CASE = """\
scenarios:
  - id: one
    user: "hello \\e]0;x\\a"
    expect: [{final_answer_contains: "zz\\e[2J"}]
  - id: two
    user: "x"
    expect: [{final_answer_contains: "hi"}]
"""
BAD_CASE = 'scenarios:\n  - id: "s\\e[31m"\n    user: x\n    expect: [{no_error: true}]\n'
GOLDENS_A = '{"id": "g\\u001b[31m", "input": "v\\u001b]0;t\\u0007"}\n'
GOLDENS_B = ('{"id": "g\\u001b[31m", "input": "w\\u001b]0;t\\u0007"}\n'
             '{"id": "h\\u001b[31m", "bucket": "b\\u001b[1m"}\n')


def _raw(text: str) -> bool:
    return "\x1b" in text or "\x07" in text


def _evil_repo(repo: Repo) -> tuple[str, str]:
    settings = f'[target]\ncommand = ["{sys.executable}", "harness.py"]\n'
    a = repo.commit({"gitevals.toml": settings, "harness.py": TARGET, EVIL_FILE: CASE,
                     "evals/goldens.jsonl": GOLDENS_A})
    b = repo.commit({"evals/goldens.jsonl": GOLDENS_B,
                     EVIL_FILE: CASE.replace("id: two", "id: three")})
    return a, b


COMMANDS = [
    ("lint", ("lint",)),
    ("run", ("run",)),
    ("show", ("show",)),
    ("show-trial", ("show", "--trial", "evil\x1b]0;owned\x07/one")),
    ("score", ("score",)),
    ("diff", ("diff", "A", "B")),
    ("diff-rules", ("diff", "A", "B", "--only", "rules")),
    ("unknown-revision", ("show", "HEAD\x1b[31m")),
    ("missing-file", ("lint", "evals/cases/\x1b[2J.yaml")),
]


def _build_evil_ran(root: Path) -> None:
    """The evil repository with a run of A and one of B (HEAD), in ``root/repo``; A and B
    in ``root/revs``."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    a, b = _evil_repo(repo)
    run_cli("run", "--rev", a, cwd=repo.path)
    run_cli("run", cwd=repo.path)
    (root / "revs").write_text(f"{a} {b}")


@pytest.fixture
def evil_ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Repo, str, str]:
    """The evil repository after its two runs: built once for the test run (the same two
    runs every command below reads), each test getting its own copy to run and write in."""
    built = built_once(tmp_path_factory, "terminal-escapes-ran", _build_evil_ran)
    path = tmp_path / "repo"
    shutil.copytree(built / "repo", path, symlinks=True)
    a, b = (built / "revs").read_text().split()
    return Repo(path), a, b


@pytest.mark.parametrize("args", [c[1] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_no_raw_control_character_reaches_the_terminal(evil_ran: tuple[Repo, str, str],
                                                       args: tuple[str, ...]) -> None:
    repo, a, b = evil_ran
    args = tuple(a if x == "A" else b if x == "B" else x for x in args)
    res = run_cli(*args, cwd=repo.path)
    assert not _raw(res.out) and not _raw(res.err), (res.out, res.err)
    assert res.out or res.err


def test_lint_and_publish_check_escape_a_file_name_and_a_quoted_value(repo: Repo) -> None:
    repo.commit({EVIL_FILE: BAD_CASE})
    expected = ("evals/cases/evil\\x1b]0;owned\\x07.yaml:2:9: GE204 scenarios[0].id "
                "'s\\x1b[31m' is not valid")
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1 and lint.out.startswith(expected), lint.out
    check = run_cli("publish-check", cwd=repo.path)
    assert check.code == 1 and f"\n  {expected}" in check.out and not _raw(check.out)


def test_json_keeps_the_data_exact_and_github_escapes_it(repo: Repo) -> None:
    repo.commit({EVIL_FILE: BAD_CASE})
    doc = json.loads(run_cli("lint", "--format", "json", cwd=repo.path).out)
    assert doc["findings"][0]["path"] == EVIL_FILE
    github = run_cli("lint", "--format", "github", cwd=repo.path).out
    # the workflow log that shows an annotation is a terminal too (issue 25, item 14)
    assert "file=evals/cases/evil\\x1b]0;owned\\x07.yaml," in github and not _raw(github)


def test_diff_json_keeps_golden_ids_exact(repo: Repo) -> None:
    a, b = _evil_repo(repo)
    doc = json.loads(run_cli("diff", a, b, "--format", "json", cwd=repo.path).out)
    assert [c["id"] for c in doc["goldens"]["changes"]] == ["g\x1b[31m", "h\x1b[31m"]


def _finding() -> Finding:
    return Finding(EVIL_FILE, 2, 9, "GE204", "id 's\x1b[31m' \x9b2J is not valid")


@pytest.mark.parametrize("render", [
    lambda: str(_finding()),
    lambda: findings_report.text(LintResult((_finding(),), 1)),
    lambda: findings_report.rich_text(LintResult((_finding(),), 1)),
], ids=["str", "text", "rich"])
def test_finding_reporters_for_a_terminal_escape_path_and_message(render: object) -> None:
    out = render()  # type: ignore[operator]
    assert "evil\\x1b]0;owned\\x07.yaml" in out and "\\x9b2J" in out
    assert "\x07" not in out and "\x9b" not in out and "\x1b]" not in out
    assert "\x1b[31m'" not in out


def test_rich_diff_escapes_data_and_keeps_its_own_colours() -> None:
    goldens = diff_goldens(GOLDENS_A.encode(), GOLDENS_B.encode(), "g", "g")
    side = Side(rev="r\x1b[2J", commit="c" * 40, has_evals=True, root="evals")
    diff = Diff(a=side, b=side, goldens=goldens)
    out = diff_report.render_rich(diff, width=200)
    assert "g\\x1b[31m" in out and "b\\x1b[1m" in out and "r\\x1b[2J" in out
    assert "\x07" not in out and "\x1b[2J" not in out and "\x1b]" not in out
    assert "\x1b[31mg" not in out


def test_run_names_a_case_that_does_not_lint_escaped(repo: Repo) -> None:
    settings = f'[target]\ncommand = ["{sys.executable}", "harness.py"]\n'
    repo.commit({"gitevals.toml": settings, "harness.py": TARGET, EVIL_FILE: BAD_CASE})
    res = run_cli("run", cwd=repo.path)
    assert res.code != 0 and not _raw(res.out) and not _raw(res.err)
    assert "evil\\x1b]0;owned\\x07" in res.err
