"""``gitevals diff`` as a user runs it: revisions, errors, formats, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitevals.diff import Diff, Side
from gitevals.diff.goldens import GoldenChange, GoldensDiff
from gitevals.report.diff import render_markdown, render_rich, render_text, summary
from tests.conftest import Repo, run_cli

CASE_A = """\
scenarios:
  - id: hello
    user: hi
    expect: [{final_answer_contains: hello}]
"""
CASE_B = CASE_A.replace("hello]", "hi there]").replace("{final_answer_contains: hello}",
                                                       "{final_answer_contains: hi there}")


@pytest.fixture
def history(repo: Repo) -> tuple[Repo, str, str]:
    a = repo.commit({"evals/cases/greet.yaml": CASE_A,
                     "evals/goldens.jsonl": '{"id": "g1", "bucket": "b", "q": "x"}\n'}, "a")
    repo.git("tag", "-a", "v1", "-m", "release 1")
    b = repo.commit({"evals/cases/greet.yaml": CASE_B,
                     "evals/goldens.jsonl": '{"id": "g1", "bucket": "b", "q": "y"}\n'}, "b")
    repo.git("tag", "v2")
    return repo, a, b


@pytest.mark.parametrize("rev", ["nope", "v9", "HEAD~7", "deadbeef"])
def test_unknown_revision_is_one_line_exit_2(history: tuple[Repo, str, str], rev: str) -> None:
    repo, _, _ = history
    r = run_cli("diff", rev, "HEAD", cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert r.err.splitlines() == [
        f"gitevals: error: unknown revision {rev!r}: name a commit, branch or tag of this "
        "repository (`git log --oneline` lists commits)"]


def test_tags_branches_and_short_shas_resolve_to_full_shas(history: tuple[Repo, str, str]) -> None:
    repo, a, b = history
    for rev_a, rev_b in [("v1", "v2"), (a[:7], "main"), ("HEAD~1", b)]:
        doc = json.loads(run_cli("diff", rev_a, rev_b, "--format", "json", cwd=repo.path).out)
        assert (doc["a"]["rev"], doc["a"]["commit"]) == (rev_a, a)
        assert (doc["b"]["rev"], doc["b"]["commit"]) == (rev_b, b)


def test_reads_git_objects_not_the_working_tree(history: tuple[Repo, str, str]) -> None:
    repo, _, _ = history
    (repo.path / "evals" / "cases" / "greet.yaml").write_text("garbage: [\n")
    (repo.path / "evals" / "goldens.jsonl").unlink()
    r = run_cli("diff", "v1", "v2", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "verdicts not compared, 1 rule changed, 1 golden changed"


def test_revision_without_an_eval_tree(repo: Repo) -> None:
    empty = repo.commit({"README.md": "no evals yet\n"}, "start")
    full = repo.commit({"evals/cases/greet.yaml": CASE_A}, "evals")
    r = run_cli("diff", empty, full, cwd=repo.path)
    assert r.code == 0, r.err
    assert f"note: A ({empty[:12]}) has no eval tree (evals/): everything on the other side " \
           "shows as added" in r.out.splitlines()
    assert "  greet.yaml  hello     added" in r.out


def test_neither_side_has_an_eval_tree_is_one_line_exit_2(repo: Repo) -> None:
    a = repo.commit({"README.md": "1\n"})
    b = repo.commit({"README.md": "2\n"})
    r = run_cli("diff", a, b, cwd=repo.path)
    assert r.code == 2
    assert r.err.splitlines() == [
        f"gitevals: error: neither A ({a[:12]}) nor B ({b[:12]}) has an eval tree (evals/): "
        "nothing to compare; check the revisions"]


def test_outside_a_repository(tmp_path: Path) -> None:
    r = run_cli("diff", "HEAD~1", cwd=tmp_path)
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert "is not inside a git work tree" in r.err


@pytest.mark.parametrize(("args", "message"), [
    (["--alpha", "2"], "'2' must be from 1e-06 to 0.5"),
    (["--alpha", "1e-300"], "'1e-300' must be from 1e-06 to 0.5"),
    (["--alpha", "nan"], "'nan' must be from 1e-06 to 0.5"),
    (["--control", "bonferroni"], "invalid choice: 'bonferroni'"),
    (["--equivalence", "0"], "'0' must be above 0 and at most 100 points"),
    (["--only", "rulez"], "unknown part 'rulez'"),
    (["--fail-on", "sometimes"], "invalid choice: 'sometimes'"),
])
def test_bad_options_exit_2(history: tuple[Repo, str, str], args: list[str], message: str) -> None:
    repo, _, _ = history
    r = run_cli("diff", "v1", *args, cwd=repo.path)
    assert r.code == 2 and message in r.err


def test_fail_on_any_change(history: tuple[Repo, str, str]) -> None:
    repo, _, _ = history
    assert run_cli("diff", "v1", "v2", cwd=repo.path).code == 0
    assert run_cli("diff", "v1", "v2", "--fail-on", "any-change", cwd=repo.path).code == 1
    assert run_cli("diff", "v2", "v2", "--fail-on", "any-change", cwd=repo.path).code == 0


def test_json_is_stable_and_sorted(history: tuple[Repo, str, str]) -> None:
    repo, _, _ = history
    out = run_cli("diff", "v1", "v2", "--format", "json", cwd=repo.path).out
    assert out == run_cli("diff", "v1", "v2", "--format", "json", cwd=repo.path).out
    doc = json.loads(out)
    assert list(doc) == sorted(doc)
    assert doc["format"] == "gitevals-diff/1"
    assert doc["counts"]["goldens_changed"] == 1 and doc["counts"]["rules_changed"] == 1


def test_markdown_is_a_pr_comment(history: tuple[Repo, str, str]) -> None:
    repo, a, b = history
    r = run_cli("diff", "v1", "v2", "--format", "markdown", cwd=repo.path)
    assert r.out == f"""\
**gitevals diff: verdicts not compared, 1 rule changed, 1 golden changed**

- A  v1  {a}  no run: make one with \\`gitevals run --rev {a}\\`
- B  v2  {b}  no run: make one with \\`gitevals run --rev {b}\\`

#### Rules

| case file | scenario | change | detail |
|---|---|---|---|
| greet\\.yaml | hello | changed | \\~ final_answer_contains: hello -> hi there |

#### Goldens by bucket (evals/goldens\\.jsonl)

| bucket | added | removed | changed |
|---|---|---|---|
| b | 0 | 0 | 1 |

#### Goldens

| id | change | line A | line B | fields |
|---|---|---|---|---|
| g1 | changed | 1 | 1 | q: x -> y |
"""


def _diff_with_goldens(n: int) -> Diff:
    side = Side("v1", "a" * 40, "evals")
    changes = tuple(GoldenChange(f"g{i}", "added", None, None, i) for i in range(1, n + 1))
    return Diff(side, side, goldens=GoldensDiff(None, "evals/goldens.jsonl", changes))


def test_limit_cuts_long_goldens_tables_in_text_and_markdown() -> None:
    d = _diff_with_goldens(60)
    text = render_text(d, limit=50)
    assert "  g50  added   -       50" in text and "  g51 " not in text
    assert "  ... 10 more (--limit 0 or --format json shows all)" in text
    assert "g60" in render_text(d, limit=0)
    assert "... 10 more (`--format json` shows all)" in render_markdown(d, limit=50)


def test_rich_output_for_a_terminal_has_summary_first() -> None:
    d = _diff_with_goldens(2)
    out = render_rich(d, width=100)
    assert "\x1b[" in out  # coloured
    assert out.splitlines()[0].endswith(f"{summary(d)}\x1b[0m")
    assert "┏━━━━┳" in out and "│ g1 │" in out
