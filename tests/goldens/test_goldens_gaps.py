"""Issue #12's three gaps, end to end with the real CLI on real repositories: a tree of
goldens and no case runs them, ``show --trial`` shows a golden, ``--trials`` and goldens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo, built_once, git, run_cli
from tests.support.drift import SUITE, tagged_goldens, trivia
from tests.support.gate import commit as gate_commit
from tests.support.gate import goldens as gate_goldens
from tests.support.goldens_run import (
    GOLDENS,
    PY_HARNESS,
    PY_SETTINGS,
    SETTINGS,
    artifacts,
    rates,
    setup,
)

ALONE = "sending the goldens alone, as --goldens-only does"


def _py_setup(repo: Repo, extra: dict[str, str | bytes] | None = None) -> str:
    """``setup``'s tree with the example harness as a python target (imported once a run,
    forked per conversation): these tests are about goldens, not how a target starts;
    the task test below keeps the command target it needs."""
    return setup(repo, settings=PY_SETTINGS, extra={"harness.py": PY_HARNESS, **(extra or {})})


def _no_cases(repo: Repo) -> None:
    _py_setup(repo)
    repo.remove("evals/cases/basics.yaml")
    repo.commit(msg="no case")


def _newest(repo: Repo) -> Path:
    return max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)


# -- 1. a tree with goldens and no case ------------------------------------------------


def test_a_tree_with_goldens_and_no_case_runs_the_goldens(repo: Repo) -> None:
    _no_cases(repo)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.err  # f3 and t2 do not pass
    said = [line for line in res.err.splitlines() if ALONE in line]
    assert said == [f"gitevals: no case in evals/cases/ nor task in evals/tasks/ of HEAD "
                    f"({repo.git('rev-parse', 'HEAD')[:12]}): {ALONE}"]
    (artifact,) = artifacts(repo)
    assert artifact["cases"] == [] and artifact["options"]["cases"] == []
    assert rates(artifact) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}
    # every runnable thing of the commit ran: its complete run, not a --goldens-only one
    assert "goldens_only" not in artifact["options"]
    assert "bucket format" in res.out and "3/4" in res.out


def test_the_run_of_goldens_alone_stays_the_commits_run_after_a_bucket_run(repo: Repo) -> None:
    _no_cases(repo)
    assert run_cli("run", "--no-note", cwd=repo.path).code == 1
    full = artifacts(repo)[0]["run_id"]
    partial = run_cli("run", "--bucket", "tone", "--no-note", cwd=repo.path)
    assert partial.code == 1 and ALONE in partial.err
    assert artifacts(repo)[-1]["goldens"]["buckets"] == ["tone"]
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert json.loads(shown.out)["run_id"] == full


def test_goldens_only_in_a_tree_without_cases_is_its_complete_run(repo: Repo) -> None:
    _no_cases(repo)
    assert run_cli("run", "--goldens-only", "--no-note", cwd=repo.path).code == 1
    first = artifacts(repo)[0]
    assert "goldens_only" not in first["options"]  # nothing was left out of it
    assert run_cli("run", "--bucket", "tone", "--no-note", cwd=repo.path).code == 1
    shown = run_cli("show", "--format", "json", cwd=repo.path)
    assert json.loads(shown.out)["run_id"] == first["run_id"]


def test_baseline_and_gate_take_the_run_of_goldens_alone(repo: Repo) -> None:
    # goldens (4 a bucket: the test reads which run is taken, not a count) and a drift
    # suite, no case
    gate_commit(repo, 3, 2, {"evals/goldens.jsonl": gate_goldens(4)})  # 3/4, 2/4 pass
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 1 and ALONE in res.err, res.err
    run = _newest(repo)
    based = run_cli("baseline", str(run), "--model", "base", cwd=repo.path)
    assert based.code == 0, based.err
    repo.commit(msg="baseline")
    gated = run_cli("gate", str(run), "--baseline", "base", cwd=repo.path)
    assert gated.code == 0, gated.out + gated.err
    assert gated.out.startswith("gate: PASSED against baseline base")
    assert [line.split()[1] for line in gated.out.splitlines()
            if line.endswith("  unchanged")] == ["format", "tone"]


TASK_AND_GOLDENS_HARNESS = """\
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "workspace" in msg:  # a task's trial: the verifier reads answer.txt as the reward
        with open(os.path.join(msg["workspace"], "answer.txt"), "w") as f:
            f.write("1.0\\n")
    print(json.dumps({"final_answer": "answer: " + msg["text"], "tool_calls": [],
                      "hooks": [], "error": None}), flush=True)
"""


def test_a_tree_with_a_task_and_goldens_runs_both(repo: Repo) -> None:
    task = "evals/tasks/fix"
    setup(repo, extra={
        "harness.py": TASK_AND_GOLDENS_HARNESS, f"{task}/task.toml": "max_iterations = 1\n",
        f"{task}/instruction.md": "Write the answer.\n",
        f"{task}/tests/test.sh": 'cat answer.txt > "$GITEVALS_LOGS/reward.txt"\n',
        f"{task}/environment/plan.txt": "1.0\n"})
    repo.remove("evals/cases/basics.yaml")
    repo.commit(msg="a task, no case")
    res = run_cli("run", "--no-sandbox", "--no-note", cwd=repo.path)
    assert res.code == 1, res.err  # the task passes; f3 and t2 do not
    assert ALONE not in res.err
    (artifact,) = artifacts(repo)
    assert [(c["name"], c["scenarios"][0]["verdict"]["verdict"]) for c in artifact["cases"]] \
        == [("fix", "pass")]
    assert rates(artifact) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}


def test_neither_cases_nor_mapped_goldens_keeps_the_error_and_names_the_mapping(
        repo: Repo) -> None:
    setup(repo, settings=SETTINGS.split("[tool.gitevals.goldens]")[0])
    repo.remove("evals/cases/basics.yaml")
    repo.commit(msg="no case, goldens unmapped")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 2
    head = repo.git("rev-parse", "HEAD")[:12]
    assert res.err.strip().splitlines() == [
        f"gitevals: error: no cases in evals/cases/ of HEAD ({head}): add a <name>.yaml there (see "
        "`gitevals init`), or map the buckets of evals/goldens.jsonl to graders in "
        "[tool.gitevals.goldens] graders to run the goldens alone"]
    assert not (repo.path / "evals/results").exists()


def test_goldens_that_do_not_lint_in_a_tree_without_cases_write_no_run(repo: Repo) -> None:
    setup(repo, goldens=GOLDENS + json.dumps({"id": "x1", "input": "q"}) + "\n")
    repo.remove("evals/cases/basics.yaml")
    repo.commit(msg="no case; a row without a bucket")
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1
    assert "the goldens do not lint and were not run" in res.err
    assert "evals/goldens.jsonl:7:" in res.err and "Traceback" not in res.err
    assert not (repo.path / "evals/results").exists()


def test_a_named_case_in_a_tree_without_cases_is_still_the_error(repo: Repo) -> None:
    _no_cases(repo)
    res = run_cli("run", "basics", cwd=repo.path)
    assert res.code == 2 and ALONE not in res.err
    assert res.err.startswith("gitevals: error: no cases in evals/cases/ of HEAD")


# -- 2. show --trial of a golden ------------------------------------------------------


def _setup_and_run(root: Path) -> None:
    """``setup``'s tree in ``root/repo``, run once (f3 and t2 fail: exit 1)."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    _py_setup(repo)
    assert run_cli("run", cwd=repo.path).code == 1


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of ``setup``'s tree and its run: built once for the test run, read by the
    ``show --trial`` tests (each on its own copy)."""
    built = built_once(tmp_path_factory, "goldens-gaps-ran", _setup_and_run)
    shutil.copytree(built / "repo", tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo")


def test_show_trial_prints_a_golden_asked_answered_and_graded(ran: Repo) -> None:
    repo = ran
    res = run_cli("show", "--trial", "goldens/f4", cwd=repo.path)
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0] == "goldens/f4: passed (bucket format, grader checks.exact; one trial)"
    assert lines[1].endswith("evals/goldens.jsonl:4")
    assert "[1] user: x" in lines and "[2] user: d" in lines
    assert "    answer: answer: d" in lines
    assert any(line.startswith("golden row: ") and '"expected": "answer: d"' in line
               for line in lines)
    assert any(line.startswith("  pass  grader checks.exact") for line in lines)
    failed = run_cli("show", "--trial", "goldens/f3", cwd=repo.path)
    assert failed.code == 1
    assert failed.out.startswith("goldens/f3: FAILED (bucket format, grader checks.exact")
    assert "  FAIL  grader checks.exact: judged fail" in failed.out


def test_show_trial_of_a_golden_as_json_and_with_its_trial_number(ran: Repo) -> None:
    repo = ran
    res = run_cli("show", "--trial", "goldens/t2/0", "--format", "json", cwd=repo.path)
    assert res.code == 1, res.err
    doc = json.loads(res.out)
    assert (doc["case"], doc["scenario"], doc["kind"], doc["slice"]) == (
        "goldens", "t2", "bucket", "tone")
    assert doc["row"]["input"] == ["hello", "go away"] and doc["line"] == 6
    assert [t["user"] for t in doc["conversation"]] == ["hello", "go away"]
    assert doc["final_answer"] == "answer: go away"
    assert doc["outcome"]["passed"] is False and doc["passed"] is False
    assert doc["graders"][0]["raw"] == {"pass": False, "score": 1.0, "why": "t2"}


def test_show_trial_of_an_unknown_golden_is_one_line_exit_2_with_close_ids(
        ran: Repo) -> None:
    repo = ran
    typo = run_cli("show", "--trial", "goldens/f3x", cwd=repo.path)
    assert typo.code == 2 and typo.out == ""
    assert typo.err.strip().splitlines() == [
        "gitevals: error: --trial goldens/f3x: no golden with id 'f3x' in this run; did you "
        "mean 'f3'? (give goldens/ID)"]
    far = run_cli("show", "--trial", "goldens/zzz", cwd=repo.path)
    assert far.code == 2 and len(far.err.strip().splitlines()) == 1
    assert "it has 'f1', 'f2', 'f3', 'f4', 't1', 't2'" in far.err
    case = run_cli("show", "--trial", "golden/f3", cwd=repo.path)
    assert case.code == 2 and len(case.err.strip().splitlines()) == 1
    assert "no case 'golden' in this run" in case.err and "goldens/ID for a golden" in case.err


def test_show_trial_of_a_drift_row(repo: Repo) -> None:
    gate_commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE, "bench/trivia.jsonl": trivia(),
                              "evals/goldens.jsonl": tagged_goldens()})
    assert run_cli("run", "--no-note", cwd=repo.path).code == 1
    (path,) = (repo.path / "evals/results").glob("*.json")
    items = json.loads(path.read_text())["goldens"]["items"]
    row = next(it for it in items if it["kind"] == "benchmark")
    res = run_cli("show", str(path), "--trial", f"drift:trivia/{row['id']}", cwd=repo.path)
    assert res.code == (0 if row["passed"] else 1), res.err
    assert res.out.startswith(f"drift:trivia/{row['id']}: ")
    assert "(benchmark trivia, grader checks.exact; one trial)" in res.out.splitlines()[0]
    assert f"bench/trivia.jsonl:{row['line']}" in res.out
    # a domain-adjacent row holds a golden's id: each is shown under its own address
    same = next(it for it in items if it["kind"] == "domain")
    for spec in (f"goldens/{same['id']}", f"drift:domain_adjacent/{same['id']}"):
        shown = run_cli("show", str(path), "--trial", spec, "--format", "json", cwd=repo.path)
        assert json.loads(shown.out)["case"] == spec.split("/")[0], shown.err


def test_a_case_named_goldens_beside_goldens_is_refused_as_ambiguous(repo: Repo) -> None:
    _py_setup(repo, extra={"evals/cases/goldens.yaml": """\
scenarios:
  - id: f1
    user: hi
    expect: [{final_answer_contains: hi}]
"""})
    assert run_cli("run", cwd=repo.path).code == 1
    res = run_cli("show", "--trial", "goldens/f1", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        "gitevals: error: --trial goldens/f1: 'goldens' names both a case of this run and "
        "its goldens; rename the case file to show either"]


# -- 3. --trials and goldens ----------------------------------------------------------


def test_trials_repeat_cases_and_say_each_golden_is_sent_once(repo: Repo) -> None:
    _py_setup(repo)
    res = run_cli("run", "--trials", "3", "--no-note", cwd=repo.path)
    assert res.code == 1, res.err
    said = [line for line in res.err.splitlines() if "--trials" in line]
    assert said == ["gitevals: --trials 3 is for cases and tasks: each golden is sent once, "
                    "as its baseline was measured (docs/goldens.md)"]
    (artifact,) = artifacts(repo)
    assert len(artifact["cases"][0]["scenarios"][0]["results"]) == 3
    assert len(artifact["goldens"]["items"]) == 6
    assert rates(artifact) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}
    once = run_cli("run", "--trials", "1", "--no-note", cwd=repo.path)
    assert "--trials" not in once.err
