"""``gitevals.api.gate``, ``history``, ``report`` and ``experiment`` driven in-process, as a
notebook would, on real git repositories: typed options in, typed results out, nothing
printed on stdout. The runs they read are made by the real CLI (in-process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitevals import api
from gitevals.errors import GitevalsError, UsageError
from gitevals.git.repo import require_repo
from gitevals.report import html
from gitevals.report.gate import REPORTERS
from tests.support import gate
from tests.support.gate import based

from .conftest import Repo, run_cli

__all__ = ["based"]  # the fixture, imported for pytest


def test_gate_through_the_api_returns_the_typed_result(
        based: tuple[Repo, Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = based
    git = require_repo(repo.path)
    gate.commit(repo, 3, 20)  # format -60 pts (beyond 10 and beyond noise), tone +50
    artifact = gate.goldens_run(repo, note=True)
    capsys.readouterr()
    by_file = api.gate(str(artifact), api.GateOptions("base-7b"), git)
    assert not by_file.passed
    assert [(s.name, s.status) for s in by_file.slices] == [("format", "hard_fail"),
                                                           ("tone", "improved")]
    assert [s.name for s in by_file.failing] == ["format"]
    assert by_file.control == "fdr" and by_file.alpha == 0.05  # the settings' defaults
    by_rev = api.gate("HEAD", api.GateOptions("base-7b", control="fwer", alpha=0.01), git)
    assert [(s.name, s.status) for s in by_rev.slices] == [("format", "hard_fail"),
                                                          ("tone", "improved")]
    assert (by_rev.control, by_rev.alpha) == ("fwer", 0.01)
    with pytest.raises(UsageError, match=r"^control 'holm' is not one of fdr, fwer, none$"):
        api.gate("HEAD", api.GateOptions("base-7b", control="holm"), git)
    assert capsys.readouterr().out == ""  # the API prints nothing; the command renders
    assert REPORTERS["text"](by_file).startswith("gate: FAILED against baseline base-7b")


def test_gate_refuses_in_one_line_without_a_baseline(repo: Repo) -> None:
    gate.commit(repo, 15, 10)
    artifact = gate.goldens_run(repo, note=True)
    with pytest.raises(GitevalsError, match=r"^no baseline, no comparison: "
                                            r"evals/baseline-base-7b\.json does not exist"):
        api.gate(str(artifact), api.GateOptions("base-7b"), require_repo(repo.path))
    repo.commit(msg="nothing run here")
    with pytest.raises(UsageError, match=r"^no goldens run of HEAD~0 "):
        api.gate("HEAD~0", api.GateOptions("base-7b"), require_repo(repo.path))


def test_gate_findings_name_a_publish_that_fails_the_gate(based: tuple[Repo, Path]) -> None:
    repo, _ = based
    git = require_repo(repo.path)
    head = repo.git("rev-parse", "HEAD")
    [found] = api.gate_findings(head, "base-7b", git)  # no run of HEAD in its note yet
    assert (found.path, found.code) == ("evals/baseline-base-7b.json", "GE639")
    assert "no goldens run pinned to" in found.message
    gate.goldens_run(repo, note=True)  # HEAD, the same counts as the baseline, noted on HEAD
    assert api.gate_findings(head, "base-7b", git) == []


HARNESS = (Path(__file__).parent / "data" / "run_harness.py").read_text()
#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
CASE = ("scenarios:\n  - id: ok\n    user: What is the capital of France?\n    trials: 2\n"
        "    expect: [{final_answer_contains: Paris}]\n")


@pytest.fixture
def two_runs(repo: Repo) -> tuple[Repo, str, str]:
    """Two commits, each with a run of its one case; a third commit without one."""
    first = repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                         "evals/cases/capital.yaml": CASE})
    assert run_cli("run", cwd=repo.path).code == 0
    second = repo.commit({"README": "a change the cases do not see\n"})
    assert run_cli("run", cwd=repo.path).code == 0
    repo.commit({"README": "not run\n"})
    return repo, first, second


def test_history_and_report_through_the_api(two_runs: tuple[Repo, str, str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    repo, first, second = two_runs
    git = require_repo(repo.path)
    capsys.readouterr()
    got = api.history(git, f"{first}..{second}", api.HistoryOptions(limit=20))
    assert [c.sha for c in got.history.commits] == [first, second]
    assert got.start == first and got.tip == second and got.tip_run is None
    one = api.history(git, second, api.HistoryOptions(limit=1, keep_tip=True))
    assert [c.sha for c in one.history.commits] == [second]
    assert one.tip_run is not None and one.tip_run["commit"] == second

    page = api.report(git, second, api.ReportOptions(limit=20, static=1000))
    assert page.warnings == ()
    assert page.report.run["commit"] == second and page.report.spec == second
    assert page.report.diff is not None and page.report.diff_note == ""
    assert [c.sha for c in page.report.history.commits] == [first, second]
    assert "capital" in html.render(page.report)
    assert capsys.readouterr().out == ""
    with pytest.raises(UsageError, match=r"^no run of HEAD \("):
        api.report(git, "HEAD", api.ReportOptions(limit=20, static=1000))
    with pytest.raises(UsageError, match=r"symmetric range"):
        api.history(git, "HEAD...HEAD~1", api.HistoryOptions(limit=20))


EXPERIMENT_HARNESS = (Path(__file__).parent / "data" / "experiment_harness.py").read_text()
GEO = ("scenarios:\n  - id: capital\n    user: What is the capital of France?\n"
       "    expect:\n      - final_answer_contains: Paris\n")


def test_experiment_and_its_recheck_through_the_api(
        repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    """Two lanes of one commit, MODEL=a (always right) and MODEL=b (wrong on odd
    trials), 3 trials each: the typed result holds the report that was kept."""
    head = repo.commit({"harness.py": EXPERIMENT_HARNESS, "pyproject.toml": SETTINGS,
                        "evals/cases/geo.yaml": GEO})
    git = require_repo(repo.path)
    said: list[str] = []
    options = api.ExperimentOptions(("a=HEAD,env:MODEL=a", "b=HEAD,env:MODEL=b"),
                                    repeat=3, jobs=2, public=("MODEL",))
    capsys.readouterr()
    result = api.experiment(git, options, say=said.append)
    assert result.report is not None and result.path is not None and not result.interrupted
    assert capsys.readouterr().out == ""  # the API prints nothing; the command renders
    assert said == [f"gitevals: lane a ({head[:12]})", f"gitevals: lane b ({head[:12]})"]
    assert json.loads(result.path.read_text()) == result.report  # what is kept is returned
    lanes = {d["name"]: d for d in result.report["lanes"]}
    assert [lanes[n]["pass_rate"]["passes"] for n in ("a", "b")] == [3, 2]  # b: trial 1
    assert lanes["b"]["target_env"] == {"MODEL": {"value": "b"}}
    assert (result.report["conversations"], result.report["repeat"]) == (6, 3)
    assert result.report["controls_held"] and not result.report["passed"]

    again = api.recheck_experiment(git, result.report["id"],
                                   api.ExperimentOptions(control="none"), said.append)
    assert again.report is not None and again.report["control"] == "none"
    assert [d["pass_rate"] for d in again.report["lanes"]] == [
        lanes["a"]["pass_rate"], lanes["b"]["pass_rate"]]
    with pytest.raises(UsageError, match=r"^--recheck 'nope': an experiment id looks like"):
        api.recheck_experiment(git, "nope")


def test_an_experiment_whose_case_does_not_lint_runs_nothing(repo: Repo) -> None:
    repo.commit({"harness.py": EXPERIMENT_HARNESS, "pyproject.toml": SETTINGS,
                 "evals/cases/geo.yaml": GEO + "    bogus_key: 1\n"})
    said: list[str] = []
    result = api.experiment(require_repo(repo.path), api.ExperimentOptions(
        ("a=HEAD,env:MODEL=a", "b=HEAD,env:MODEL=b")), say=said.append)
    assert (result.report, result.path) == (None, None)
    assert "gitevals: lane a: case 'geo' does not lint" in said
    assert not (repo.path / "evals/results/experiments").exists()


def test_run_plans_and_the_sequential_design_through_the_api(repo: Repo) -> None:
    from gitevals.git.trees import RevisionTree

    first = repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                         "evals/cases/capital.yaml": CASE})
    assert run_cli("run", cwd=repo.path).code == 0
    repo.commit({"README": "a change the cases do not see\n"})
    git = require_repo(repo.path)
    tree = RevisionTree(git, "HEAD")
    plans = api.run_plans(tree, api.RunSelection(trials=3))
    assert [c.name for c in plans.plan.cases] == ["capital"] and plans.plan.trials == 3
    assert (plans.suite, plans.sendable, plans.notes, plans.suite_notes) == (None, None, (), ())
    rounds = api.sequential_design(git, plans.plan,
                                   api.AgainstOptions(first, max_trials=6, looks=3, drop=10))
    assert (rounds.settings.against, rounds.settings.max_trials, rounds.settings.looks,
            rounds.settings.drop) == (first, 6, 3, 0.1)
    assert rounds.settings.alpha == 0.05  # one scenario has a base: alpha / 1
    with pytest.raises(UsageError, match=r"^no run of HEAD \(.*\) to run against"):
        api.sequential_design(git, plans.plan, api.AgainstOptions("HEAD"))
    with pytest.raises(UsageError, match=r"^--goldens-only runs no case"):
        api.run_plans(tree, api.RunSelection(cases=("capital",), goldens_only=True))


def test_run_plans_send_the_goldens_alone_and_refuse_ones_that_do_not_lint(repo: Repo) -> None:
    from gitevals.git.trees import RevisionTree

    gate.commit(repo, 15, 10)
    tree = RevisionTree(require_repo(repo.path), "HEAD")
    plans = api.run_plans(tree, api.RunSelection())  # no case: the goldens alone
    assert plans.plan.cases == () and plans.suite is not None
    assert plans.sendable is plans.suite and len(plans.suite.items) == 40
    assert plans.notes == ("gitevals: no case in evals/cases/ nor task in evals/tasks/ of "
                           f"{tree.label}: sending the goldens alone, as --goldens-only does",)
    tone = api.run_plans(tree, api.RunSelection(goldens_only=True, buckets=("tone",)))
    assert tone.suite is not None and {i.slice for i in tone.suite.items} == {"tone"}
    rows = gate.goldens()
    repo.commit({"evals/goldens.jsonl": rows + rows.splitlines(keepends=True)[0]})
    broken = api.run_plans(RevisionTree(require_repo(repo.path), "HEAD"),
                           api.RunSelection(goldens_only=True))
    assert broken.suite is not None and broken.sendable is None  # a duplicate id: not sent
    assert broken.suite_notes[-1] == ("gitevals: the goldens do not lint and were not run; "
                                      "fix them (`gitevals lint`)")
    assert any("f00" in line for line in broken.suite_notes[:-1])
