"""Every number handed to ``gitevals.api`` is bounded as the command line bounds it: a
value ``gitevals run`` (``experiment``, ``log``, ``report``, ``diff``, ``gate``, ``lint``)
refuses is refused when the API's option value is made, in the same words (a
``UsageError``, one line), before anything runs or is written (``gitevals/bounds.py``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gitevals import api
from gitevals.errors import UsageError
from tests.conftest import Repo, run_cli

#: (the command line, the API value the same ask makes, where the API says it is)
SAME_ASK: list[tuple[list[str], Callable[[], object], str]] = [
    (["run", "--jobs", "300"], lambda: api.RunRequest(jobs=300), "RunRequest.jobs"),
    (["run", "--jobs", "0"], lambda: api.RunRequest(jobs=0), "RunRequest.jobs"),
    (["run", "--trials", "10001"], lambda: api.RunRequest(trials=10001), "RunRequest.trials"),
    (["run", "--trials", "0"], lambda: api.RunRequest(trials=0), "RunRequest.trials"),
    (["run", "--against", "HEAD", "--max-trials", "1001"],
     lambda: api.RunRequest(against="HEAD", max_trials=1001), "RunRequest.max_trials"),
    (["run", "--looks", "101"], lambda: api.RunRequest(looks=101), "RunRequest.looks"),
    (["run", "--drop", "0"], lambda: api.RunRequest(drop=0), "RunRequest.drop"),
    (["run", "--drop", "100.5"], lambda: api.RunRequest(drop=100.5), "RunRequest.drop"),
    (["run", "--alpha", "0.9"], lambda: api.RunRequest(alpha=0.9), "RunRequest.alpha"),
    (["run", "--cost-limit", "0"], lambda: api.RunRequest(cost_limit=0),
     "RunRequest.cost_limit"),
    (["run", "--cost-limit", "2000000"], lambda: api.RunRequest(cost_limit=2_000_000),
     "RunRequest.cost_limit"),
    (["run", "--max-trials", "1001"],
     lambda: api.AgainstOptions("HEAD", max_trials=1001), "AgainstOptions.max_trials"),
    (["run", "--looks", "0"], lambda: api.AgainstOptions("HEAD", looks=0),
     "AgainstOptions.looks"),
    (["run", "--jobs", "257"], lambda: api.RunOptions(jobs=257), "RunOptions.jobs"),
    (["run", "--trials", "10001"], lambda: api.RunSelection(trials=10001),
     "RunSelection.trials"),
    (["experiment", "a=HEAD", "b=HEAD", "--repeat", "10001"],
     lambda: api.ExperimentOptions(repeat=10001), "ExperimentOptions.repeat"),
    (["experiment", "a=HEAD", "b=HEAD", "--max-samples", "1000001"],
     lambda: api.ExperimentOptions(max_samples=1_000_001), "ExperimentOptions.max_samples"),
    (["experiment", "a=HEAD", "b=HEAD", "--jobs", "300"],
     lambda: api.ExperimentOptions(jobs=300), "ExperimentOptions.jobs"),
    (["log", "--limit", "0"], lambda: api.HistoryOptions(limit=0), "HistoryOptions.limit"),
    (["log", "--alpha", "0.6"], lambda: api.HistoryOptions(20, alpha=0.6),
     "HistoryOptions.alpha"),
    (["report", "--limit", "1000001"], lambda: api.ReportOptions(1_000_001, 0),
     "ReportOptions.limit"),
    (["report", "--static-transcripts", "1000001"], lambda: api.ReportOptions(20, 1_000_001),
     "ReportOptions.static"),
    (["diff", "HEAD", "HEAD", "--equivalence", "101"],
     lambda: api.DiffOptions(equivalence=101), "DiffOptions.equivalence"),
    (["diff", "HEAD", "HEAD", "--alpha", "0"], lambda: api.DiffOptions(alpha=0),
     "DiffOptions.alpha"),
    (["gate", "HEAD", "--baseline", "m", "--alpha", "0.51"],
     lambda: api.GateOptions("m", alpha=0.51), "GateOptions.alpha"),
    (["lint", "--jobs", "0"], lambda: api.LintOptions(jobs=0), "LintOptions.jobs"),
]


def cli_refusal(args: list[str], cwd: Path) -> tuple[str, str]:
    """(the value as typed, what is wrong with it) of the CLI's one-line refusal."""
    got = run_cli(*args, cwd=cwd)
    assert got.code == 2 and got.out == "", got
    line, = got.err.strip().splitlines()
    found = re.fullmatch(r"gitevals \S+: error: argument [^:]+: ('[^']*') (.*); see "
                         r"`gitevals \S+ --help`", line)
    assert found, line
    return found.group(1), found.group(2)


@pytest.mark.parametrize(("args", "make", "where"), SAME_ASK,
                         ids=[f"{w}={' '.join(a[-1:])}" for a, _, w in SAME_ASK])
def test_the_api_refuses_what_the_cli_refuses_in_its_words(
        args: list[str], make: Callable[[], object], where: str, tmp_path: Path) -> None:
    typed, wrong = cli_refusal(args, tmp_path)
    with pytest.raises(UsageError) as refused:
        make()
    # the API shows the value it was handed (repr), the CLI the text it was typed as
    assert str(refused.value) == f"{where}: {typed.strip(chr(39))} {wrong}"
    assert "\n" not in str(refused.value)


def test_the_bounds_themselves_still_pass(tmp_path: Path) -> None:
    """The largest and smallest values each flag takes are taken by the API too."""
    api.RunRequest(trials=10_000, jobs=256, against="HEAD", max_trials=1_000, looks=100,
                   drop=100, alpha=0.5, cost_limit=1_000_000)
    api.RunRequest(trials=1, jobs=1, max_trials=1, looks=1, drop=0.01, alpha=1e-6,
                   cost_limit=0.01)
    api.ExperimentOptions(repeat=10_000, jobs=256, max_samples=1_000_000)
    api.ReportOptions(1_000_000, 0)
    api.HistoryOptions(1)
    api.DiffOptions(equivalence=100, alpha=0.05)
    api.LintOptions(jobs=None)
    assert api.RunRequest().drop == 20.0 and api.RunOptions().jobs == 16


@pytest.mark.parametrize(("make", "said"), [
    (lambda: api.RunRequest(jobs=True), "RunRequest.jobs: True is not a whole number"),
    (lambda: api.RunRequest(jobs=2.5), "RunRequest.jobs: 2.5 is not a whole number"),
    (lambda: api.RunRequest(trials="3"), "RunRequest.trials: '3' is not a whole number"),
    (lambda: api.RunRequest(drop=math.nan),
     "RunRequest.drop: nan must be above 0 and at most 100 points"),
    (lambda: api.RunRequest(cost_limit=math.inf),
     "RunRequest.cost_limit: inf must be above 0 and at most 1,000,000 USD"),
    (lambda: api.RunRequest(alpha="0.05"), "RunRequest.alpha: '0.05' is not a number"),
    (lambda: api.HistoryOptions(None), "HistoryOptions.limit: None is not a whole number"),
])
def test_what_only_a_program_can_hand_in_is_refused_too(make: Callable[[], object],
                                                        said: str) -> None:
    """A notebook can pass what argparse never would: a bool, a float count, a string,
    NaN or infinity."""
    with pytest.raises(UsageError) as refused:
        make()
    assert str(refused.value) == said


def test_run_rev_with_too_many_jobs_runs_and_writes_nothing(repo: Repo) -> None:
    """Through the API as a notebook calls it, in a repository that would run: refused
    before anything runs, and no result file or note appears."""
    harness = (Path(__file__).parent / "data" / "run_harness.py").read_text()
    repo.commit({"harness.py": harness,
                 "pyproject.toml": '[tool.gitevals.target]\ncommand = ["python3", "harness.py"]\n',
                 "evals/cases/one.yaml": "scenarios:\n  - id: a\n    user: hi\n    expect: "
                                         "[{final_answer_contains: hi}]\n"})
    from gitevals.git.repo import require_repo

    with pytest.raises(UsageError, match=r"^RunRequest\.jobs: 1000 is past the bound of 256"):
        api.run_rev(api.RunRequest(jobs=1000), require_repo(repo.path))
    assert not (repo.path / "evals" / "results").exists()
    assert repo.git("notes", "--ref", "gitevals", "list").strip() == ""
