"""Fixes found by following the README as a new user, each driven through the real CLI."""

from __future__ import annotations

from tests.conftest import Repo, run_cli

HARNESS = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"final_answer": "Paris.", "tool_calls": [], "hooks": [], "error": None}),
          flush=True)
"""

CASE = """\
defaults: {trials: 1, timeout: 30s}
scenarios:
  - id: answers
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
"""

GRADED_CASE = """\
scenarios:
  - id: graded
    user: hi
    expect:
      - grader: {name: q.ok}
"""

GRADER = "def ok(t, case, run):\n    return True\n"


def test_settings_list_hint_is_toml_not_yaml(repo: Repo) -> None:
    # `command = "python3 harness.py"` is a common first mistake; the fix is TOML syntax.
    repo.commit({"gitevals.toml": '[target]\ncommand = "python3 harness.py"\n',
                 "evals/cases/a.yaml": CASE})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    line = next(x for x in res.out.splitlines() if "GE701" in x)
    assert line.startswith("gitevals.toml:2:1: GE701 bad setting target.command")
    assert "'- item'" not in line
    assert 'write a TOML array: ["python3", "harness.py"]' in line


def test_no_target_names_the_table_of_gitevals_toml(repo: Repo) -> None:
    repo.commit({"gitevals.toml": 'root = "evals"\n', "evals/cases/a.yaml": CASE})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "set [target] in gitevals.toml" in res.err
    assert "tool.gitevals" not in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_no_target_names_the_table_of_pyproject(repo: Repo) -> None:
    repo.commit({"pyproject.toml": '[tool.gitevals]\nroot = "evals"\n',
                 "evals/cases/a.yaml": CASE})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    assert "set [tool.gitevals.target] in pyproject.toml" in res.err


def test_run_prints_a_warning_as_lint_does(repo: Repo) -> None:
    # GE405 (a grader with one trial) is a warning: run must not present it as an error.
    repo.commit({"gitevals.toml": '[target]\ncommand = ["python3", "harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/g.yaml": GRADED_CASE,
                 "evals/graders/q.py": GRADER})
    lint = run_cli("lint", cwd=repo.path)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 0, res.err
    warned = [x for x in res.err.splitlines() if "GE405" in x]
    assert warned and "GE405 (warning) " in warned[0]
    assert warned[0] in lint.out.splitlines()


def test_show_marks_a_dirty_run(repo: Repo) -> None:
    repo.commit({"gitevals.toml": '[target]\ncommand = ["python3", "harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/a.yaml": CASE})
    clean = run_cli("run", "--no-note", cwd=repo.path)
    assert clean.code == 0
    assert ", dirty" not in clean.out.splitlines()[0]
    repo.write({"harness.py": HARNESS + "# edited\n"})
    res = run_cli("run", "--allow-dirty", "--no-note", cwd=repo.path)
    assert res.code == 0, res.err
    assert res.out.splitlines()[0].endswith(", dirty")
    shown = run_cli("show", cwd=repo.path)
    assert shown.out.splitlines()[0].endswith(", dirty")
    md = run_cli("show", "--format", "markdown", cwd=repo.path)
    assert ", dirty" in md.out.splitlines()[0]


def test_unpinned_judge_model_says_what_to_do(repo: Repo) -> None:
    repo.commit({"gitevals.toml": '[judge]\nbase_url = "http://127.0.0.1:1/v1"\n'
                                  'model = "gpt-latest"\n',
                 "evals/cases/a.yaml": CASE})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    line = next(x for x in res.out.splitlines() if "GE701" in x)
    assert line.startswith("gitevals.toml:3:1: GE701 bad setting judge.model: ")
    assert "should not be valid under" not in line
    assert "name a dated snapshot" in line


BROKEN_CASE = "suite: x\nscenarios:\n  - id: a\n    user: hi\n    expect:\n      - no_error: true\n"


def test_a_run_of_only_broken_cases_keeps_the_last_real_run(repo: Repo) -> None:
    repo.commit({"gitevals.toml": '[target]\ncommand = ["python3", "harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/a.yaml": CASE,
                 "evals/cases/broken.yaml": BROKEN_CASE})
    good = run_cli("run", "a", cwd=repo.path)
    assert good.code == 0, good.err
    run_id = good.out.split()[1]
    res = run_cli("run", "broken", cwd=repo.path)
    assert res.code == 1
    assert "GE301" in res.err and "nothing was run" in res.err
    assert res.out == ""
    assert [p.stem for p in (repo.path / "evals/results").iterdir()] == [run_id]
    shown = run_cli("show", cwd=repo.path)
    assert shown.code == 0 and shown.out.split()[1] == run_id
    assert run_id in repo.git("notes", "--ref", "gitevals", "show", "HEAD")


def test_show_picks_the_later_run_when_two_finish_in_the_same_second(repo: Repo) -> None:
    import json
    import os

    repo.commit({"gitevals.toml": '[target]\ncommand = ["python3", "harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/a.yaml": CASE})
    first = run_cli("run", "--no-note", cwd=repo.path)
    assert first.code == 0, first.err
    results = repo.path / "evals/results"
    (old,) = results.iterdir()
    art = json.loads(old.read_text())
    # A second run of the same commit, finished in the same second, written later; its
    # random run-id suffix sorts first.
    art["run_id"] = art["run_id"].rsplit("-", 1)[0] + "-000000"
    art["dirty"] = True
    new = results / f"{art['run_id']}.json"
    new.write_text(json.dumps(art, sort_keys=True))
    st = old.stat()
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    shown = run_cli("show", cwd=repo.path)
    assert shown.out.split()[1] == art["run_id"], shown.out


def test_pushing_the_notes_ref_is_not_checked_as_a_release(repo: Repo) -> None:
    sha = repo.commit({"evals/cases/a.yaml": CASE})
    repo.git("notes", "--ref", "gitevals", "add", "-m", "{}", sha)
    notes = repo.git("rev-parse", "refs/notes/gitevals")
    zero = "0" * 40
    stdin = f"refs/notes/gitevals {notes} refs/notes/gitevals {zero}\n"
    res = run_cli("publish-check", "--pre-push", "origin", "/dev/null", cwd=repo.path,
                  input=stdin)
    assert res.code == 0, res.err
    assert "ok: refs/notes/gitevals: git notes, no eval tree to check" in res.out
    assert "eval files" not in res.out


def test_diff_only_rules_does_not_claim_runs_are_missing(repo: Repo) -> None:
    repo.commit({"gitevals.toml": '[target]\ncommand = ["python3", "harness.py"]\n',
                 "harness.py": HARNESS, "evals/cases/a.yaml": CASE})
    repo.git("tag", "v1")
    assert run_cli("run", cwd=repo.path).code == 0
    repo.commit({"evals/cases/a.yaml": CASE.replace("trials: 1", "trials: 2")})
    res = run_cli("diff", "v1", "HEAD", "--only", "rules", cwd=repo.path)
    assert res.code == 0, res.err
    a_line = next(x for x in res.out.splitlines() if x.startswith("A  v1"))
    assert "make one with" not in a_line
    assert a_line.endswith("runs not read (--only leaves out verdicts)")
    full = run_cli("diff", "v1", "HEAD", cwd=repo.path)
    b_line = next(x for x in full.out.splitlines() if x.startswith("B  HEAD"))
    assert "no run: make one with `gitevals run --rev" in b_line
