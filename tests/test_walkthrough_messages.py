"""Messages a new user met wiring a real agent (issue 23, item 16), each through the
real CLI: the judge preflight names a grader that asks the judge, a draft missing a key
is linted (no raw KeyError, no finding twice), `show REV` names REV, a run right after
`init` with the case uncommitted says to commit it, and `--against` progress never
counts past its total."""

from __future__ import annotations

import json
import re
import sys

from tests.conftest import Repo, run_cli

SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
HARNESS = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"final_answer": "Paris", "tool_calls": [], "hooks": [],
                      "error": None}), flush=True)
"""
#: The same answers as a python target (imported once per run, forked per conversation),
#: for a test about progress lines rather than command targets that runs 45 conversations.
TARGET = """\
def respond(messages):
    return {"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None}
"""
TARGET_SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'
ONE = ("scenarios:\n  - id: s\n    user: capital of France?\n"
       "    expect: [{final_answer_contains: Paris}]\n")


def _graded(name: str) -> str:
    return (f"scenarios:\n  - id: g\n    user: capital?\n"
            f"    expect: [{{grader: {{name: {name}}}}}]\n")


def test_preflight_names_a_grader_that_hands_t_llm_on(repo: Repo) -> None:
    graders = ("def ask(f, prompt):\n    return f(prompt)\n\n"
               "def plain(t, case, run):\n    return True\n\n"
               "def handed(t, case, run):\n    return {'pass': True, 'why': ask(t.llm, 'x')}\n")
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/graders/q.py": graders, "evals/cases/a.yaml": _graded("q.plain"),
                 "evals/cases/b.yaml": _graded("q.handed")})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2, res.err
    assert "grader q.handed calls t.llm but no judge is configured" in res.err
    only_plain = run_cli("run", "a", "--no-note", cwd=repo.path)
    assert only_plain.code == 0, only_plain.err  # a deterministic grader needs no judge


def test_a_draft_missing_user_is_linted_once_without_a_raw_key_error(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/cases/a.yaml": ONE})
    draft = repo.path / "draft.yaml"
    draft.write_text("scenarios:\n  - id: a\n    expect:\n      - no_error: true\n")
    res = run_cli("run", "--draft", str(draft), cwd=repo.path)
    assert res.code == 1
    assert "GE000" not in res.err and "'user'" in res.err
    assert res.err.count("GE203") == 1, res.err


def test_show_of_a_tag_names_the_tag_not_head(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/cases/a.yaml": ONE})
    assert run_cli("run", cwd=repo.path).code == 0
    repo.git("tag", "v2")
    repo.commit(msg="later")
    title = run_cli("show", "v2", cwd=repo.path).out.splitlines()[0]
    assert re.match(r"run \S+ of v2 \([0-9a-f]{12}\)$", title), title
    doc = json.loads(run_cli("show", "v2", "--format", "json", cwd=repo.path).out)
    assert doc["rev"] == "HEAD"  # the artifact as kept


def test_a_run_right_after_init_with_the_case_uncommitted_says_commit_it(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS})
    repo.write({"evals/cases/a.yaml": ONE})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "evals/cases/a.yaml is in the working tree only: commit it first" in res.err
    assert "see `gitevals init`" not in res.err


def test_against_progress_never_counts_past_its_total(repo: Repo) -> None:
    case = ("defaults: {trials: 5}\n" + ONE.replace("Paris", "Lyon"))
    a = repo.commit({"harness.py": TARGET, "pyproject.toml": TARGET_SETTINGS,
                     "evals/cases/a.yaml": case})
    assert run_cli("run", cwd=repo.path).code == 1
    res = run_cli("run", "--against", a, "--max-trials", "40", "--jobs", "1", cwd=repo.path,
                  env={"GITEVALS_PROGRESS_INTERVAL": "0"}, timeout=300)
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+)/(\d+) trials done", res.err)]
    assert counts, res.err
    assert all(done <= total for done, total in counts), counts
    assert {total for _, total in counts} == {40}
