"""Issue 8, class 5: every crash is a finding or a one-line error that names the input.

Each hostile input is made in a real repository under ``tmp_path`` and the real CLI
reads it: settings, goldens rows, run artifacts and notes, grader modules.
"""

from __future__ import annotations

import pytest

from .conftest import Repo, run_cli

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
