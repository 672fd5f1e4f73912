"""``gitevals lint`` end to end: the real CLI in real git repos."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli
from tests.support.lint import GOOD, GRADER, MISSING, case


def test_clean_tree(repo: Repo) -> None:
    repo.commit(GOOD)
    r = run_cli("lint", cwd=repo.path)
    assert (r.code, r.out, r.err) == (0, "3 files checked: no problems\n", "")


def test_missing_grader_module_exact_text(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers")})
    r = run_cli("lint", cwd=repo.path)
    assert r.code == 1
    assert r.out == (f"evals/cases/a.yaml:6:24: GE502 {MISSING}\n"
                     "3 files checked: 1 error, 0 warnings\n")


def test_formats_json_and_github(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers")})
    r = run_cli("lint", "--format", "json", cwd=repo.path)
    assert r.code == 1
    assert json.loads(r.out) == {
        "errors": 1, "files": 3, "warnings": 0,
        "findings": [{"path": "evals/cases/a.yaml", "line": 6, "col": 24, "code": "GE502",
                      "message": MISSING, "severity": "error"}]}
    g = run_cli("lint", "--format", "github", cwd=repo.path)
    assert g.code == 1
    assert g.out == ("::error file=evals/cases/a.yaml,line=6,col=24,title=GE502::"
                     f"{MISSING}\n3 files checked: 1 error, 0 warnings\n")


def test_grader_module_is_never_imported(repo: Repo) -> None:
    evil = ("import os\nopen('PWNED', 'w').write('x')\nos.system('touch PWNED2')\n" + GRADER)
    repo.commit({**GOOD, "evals/graders/quality.py": evil})
    for args in (("lint",), ("lint", "--rev", "HEAD"), ("lint", "--staged"),
                 ("lint", "--no-cache")):
        r = run_cli(*args, cwd=repo.path)
        assert r.code == 0, r.out + r.err
    found = [p for p in repo.path.parent.rglob("PWNED*")]
    assert found == []


def test_rev_reads_the_commit_not_the_working_tree(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers")})
    repo.write({"evals/cases/a.yaml": case()})  # fixed on disk, not committed
    assert run_cli("lint", cwd=repo.path).code == 0
    r = run_cli("lint", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1 and "GE502" in r.out
    fixed = repo.commit()
    broken = repo.git("rev-parse", "HEAD~1")
    assert run_cli("lint", "--rev", fixed[:8], cwd=repo.path).code == 0
    assert run_cli("lint", "--rev", broken, cwd=repo.path).code == 1


def test_rev_resolves_graders_of_that_revision(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/graders/quality.py": "def other(t, case, run):\n    pass\n"})
    repo.write({"evals/graders/quality.py": GRADER})
    assert run_cli("lint", cwd=repo.path).code == 0
    r = run_cli("lint", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1 and "GE504 no function 'answers'" in r.out


def test_staged_reads_the_index(repo: Repo) -> None:
    repo.commit(GOOD)
    repo.write({"evals/cases/a.yaml": case("nope.answers")})
    repo.git("add", "evals/cases/a.yaml")
    repo.write({"evals/cases/a.yaml": case()})  # working tree fixed, index still broken
    r = run_cli("lint", "--staged", "evals/cases/a.yaml", cwd=repo.path)
    assert r.code == 1 and f"evals/cases/a.yaml:6:24: GE502 {MISSING}" in r.out
    assert run_cli("lint", "evals/cases/a.yaml", cwd=repo.path).code == 0


def test_staged_resolves_against_staged_graders(repo: Repo) -> None:
    repo.commit({"evals/cases/a.yaml": case("fresh.answers")})
    repo.write({"evals/graders/fresh.py": GRADER})  # on disk, never staged
    assert run_cli("lint", cwd=repo.path).code == 0
    r = run_cli("lint", "--staged", "evals/cases/a.yaml", cwd=repo.path)
    assert r.code == 1 and "GE502 grader module evals/graders/fresh.py not found" in r.out
    repo.git("add", "evals/graders/fresh.py")
    assert run_cli("lint", "--staged", "evals/cases/a.yaml", cwd=repo.path).code == 0


def test_paths_restrict_cases_and_ignore_outside_files(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("not: [valid\n")
    repo.commit({**GOOD, "evals/cases/b.yaml": case("nope.answers"), "README.md": "hi\n"})
    r = run_cli("lint", "evals/cases/a.yaml", "README.md", str(outside), cwd=repo.path)
    assert (r.code, r.out) == (0, "2 files checked: no problems\n")
    r = run_cli("lint", "cases/b.yaml", cwd=repo.path / "evals")
    assert r.code == 1 and "evals/cases/b.yaml:6:24: GE502" in r.out


def test_unknown_path_is_a_usage_error(repo: Repo) -> None:
    repo.commit(GOOD)
    r = run_cli("lint", "evals/cases/typo.yaml", cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert r.err == ("gitevals: error: evals/cases/typo.yaml: not found in working tree; "
                     "name a case file, goldens.jsonl or a directory\n")


def test_unknown_revision_one_line_exit_2(repo: Repo) -> None:
    repo.commit(GOOD)
    r = run_cli("lint", "--rev", "no-such-branch", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert r.err.count("\n") == 1 and "unknown revision 'no-such-branch'" in r.err


@pytest.mark.parametrize("args", [("--rev", "HEAD", "--staged"), ("--jobs", "0"),
                                  ("--format", "xml")], ids=["rev+staged", "jobs0", "format"])
def test_usage_errors_exit_2(repo: Repo, args: tuple[str, ...]) -> None:
    repo.commit(GOOD)
    r = run_cli("lint", *args, cwd=repo.path)
    assert r.code == 2 and "Traceback" not in r.err


def test_goldens_and_grader_syntax_error_through_cli(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/goldens.jsonl": '{"id": 1}\n{"id": 1}\n',
                 "evals/graders/quality.py": "def answers(t, case, run):\n  return (\n"})
    r = run_cli("lint", cwd=repo.path)
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0].startswith("evals/goldens.jsonl:2:2: GE606 duplicate id 1: also on line 1")
    assert lines[1].startswith("evals/graders/quality.py:2:10: GE503 grader module does not parse")
    assert lines[2] == "3 files checked: 2 errors, 0 warnings"


def test_many_files_in_a_pool_match_serial(repo: Repo) -> None:
    files = {f"evals/cases/c{n:03d}.yaml": case("nope.answers" if n % 7 == 0 else
                                                  "quality.answers") for n in range(90)}
    repo.commit({**GOOD, **files})
    serial = run_cli("lint", "--no-cache", "--jobs", "1", cwd=repo.path)
    # a program of its own, with no other thread: the one that forks its pool
    pooled = run_cli("lint", "--no-cache", "--jobs", "2", cwd=repo.path, subprocess_=True)
    assert serial.code == pooled.code == 1
    assert serial.out == pooled.out
    assert pooled.out.count("GE502") == 13
    rev = run_cli("lint", "--rev", "HEAD", "--jobs", "2", cwd=repo.path, subprocess_=True)
    assert rev.out == pooled.out
    # the pool's workers, stopped at its end, said nothing (they once printed the
    # KeyboardInterrupt traceback of the program's SIGTERM handler, one run in two)
    assert pooled.err == rev.err == serial.err == ""


def test_a_process_with_another_thread_lints_without_forking(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork while another thread holds a lock can leave the child waiting forever (a
    pool of a notebook's or a test runner's process once hung here): such a process
    lints serially, with the same findings."""
    import multiprocessing
    import threading

    files = {f"evals/cases/c{n:03d}.yaml": case("nope.answers" if n % 7 == 0 else
                                                  "quality.answers") for n in range(90)}
    repo.commit({**GOOD, **files})
    serial = run_cli("lint", "--no-cache", "--jobs", "1", cwd=repo.path)
    forks: list[str] = []
    get_context = multiprocessing.get_context

    def context(method: str | None = None) -> object:
        forks.append(str(method))
        return get_context(method)

    monkeypatch.setattr(multiprocessing, "get_context", context)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        threaded = run_cli("lint", "--no-cache", "--jobs", "2", cwd=repo.path)
    finally:
        stop.set()
        other.join()
    assert forks == []
    assert threaded.code == 1 and threaded.out == serial.out


def test_rev_accepts_annotated_tags_and_short_shas(repo: Repo) -> None:
    bad = repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers")})
    repo.git("tag", "-a", "v1", "-m", "release 1")
    repo.commit({"evals/cases/a.yaml": case()})
    assert run_cli("lint", "--rev", "v1", cwd=repo.path).code == 1
    assert run_cli("lint", "--rev", bad[:7], cwd=repo.path).code == 1
    assert run_cli("lint", "--rev", "HEAD", cwd=repo.path).code == 0


def test_staged_grader_change_relints_the_cases_that_name_it(repo: Repo) -> None:
    repo.commit(GOOD)
    repo.write({"evals/graders/quality.py": "def renamed(t, case, run):\n    return True\n"})
    repo.git("add", "evals/graders/quality.py")
    r = run_cli("lint", "--staged", "evals/graders/quality.py", cwd=repo.path)
    assert r.code == 1
    assert r.out.startswith("evals/cases/a.yaml:6:24: GE504 no function 'answers' in "
                            "evals/graders/quality.py")


def test_broken_grader_module_reported_even_when_unused(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/graders/helpers.py": "def f(:\n"})
    r = run_cli("lint", cwd=repo.path)
    assert r.code == 1
    assert r.out.splitlines()[0].startswith(
        "evals/graders/helpers.py:1:7: GE503 grader module does not parse")
    named = run_cli("lint", "--staged", "evals/graders/helpers.py", cwd=repo.path)
    assert named.code == 1 and named.out.startswith("evals/graders/helpers.py:1:7: GE503")
    case_only = run_cli("lint", "--staged", "evals/cases/a.yaml", cwd=repo.path)
    assert case_only.code == 0
