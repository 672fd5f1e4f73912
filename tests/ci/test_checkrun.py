"""``python -m gitevals.ci check-run``: JUnit results as a GitHub check run, sent to a fake
Checks API on 127.0.0.1 that refuses what GitHub refuses (over 50 annotations a request,
a summary over 65,535 characters). The end-to-end case through the action's own step is
in test_action_local."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitevals.ci import checkrun
from gitevals.ci.__main__ import main as ci_main
from tests.conftest import Repo, run_main
from tests.support import fake_checks

PR_HEAD, MERGE = "a" * 40, "f" * 40


def _case(n: int) -> str:
    """A case file whose scenario ``s<i>`` is on line 3 + 3i."""
    return "defaults: {trials: 2}\nscenarios:\n" + "".join(
        f"  - id: s{i:03d}\n    user: hi\n    expect: [{{final_answer_contains: x}}]\n"
        for i in range(n))


def _diff_junit(failing: range, total: int) -> str:
    cases = "".join(
        f'<testcase classname="big" name="s{i:03d}" time="0.000">'
        + (f'<failure message="s{i:03d}: 10/10 -&gt; 1/10, q=0.001 (BH)" type="regressed">'
           "detail</failure>" if i in failing else "") + "</testcase>"
        for i in range(total))
    return ('<?xml version="1.0"?><testsuites name="gitevals diff main..HEAD">'
            '<testsuite name="suite"><testcase classname="suite" name="suite">'
            '<failure message="suite: -40 pts">x</failure></testcase></testsuite>'
            f'<testsuite name="big">{cases}</testsuite></testsuites>')


def check(cwd: Path, api: fake_checks.FakeChecks, *files: str, code: int = 1,
          markdown: str = "| s000 | 10/10 → 1/10 ▼ |\n") -> subprocess.CompletedProcess[str]:
    (cwd / "diff.md").write_text(markdown)
    event = cwd / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3, "head": {"sha": PR_HEAD}}}))
    env = {"GITHUB_API_URL": api.url, "GITHUB_TOKEN": "t0ken", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_SHA": MERGE, "GITHUB_EVENT_PATH": str(event), "PATH": "/usr/bin:/bin",
           "HOME": str(cwd)}
    args = ["check-run", *files, "--markdown", "diff.md", "--exit-code", str(code)]
    r = run_main(ci_main, args, env, cwd)  # in this process: test_action_local runs the step
    return subprocess.CompletedProcess(["gitevals.ci", *args], r.code, r.out, r.err)


def test_many_annotations_go_50_a_request_and_the_summary_fits(repo: Repo) -> None:
    repo.commit({"evals/cases/big.yaml": _case(130)})
    (repo.path / "diff-junit.xml").write_text(_diff_junit(range(120), 130))
    huge = "".join(f"| s{i:05d} | 10/10 → 1/10 ▼ |\n" for i in range(20_000))
    with fake_checks.serve() as api:
        r = check(repo.path, api, "diff-junit.xml", markdown=huge)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"gitevals: check run 'gitevals' on {PR_HEAD[:12]}: failure, 120 " \
                       "annotations\n"
    assert api.refused == []  # nothing GitHub would refuse
    sent = [(m, p, len(b["output"]["annotations"]), b.get("status")) for m, p, b, _ in api.calls]
    assert sent == [("POST", "/repos/o/r/check-runs", 50, "in_progress"),
                    ("PATCH", "/repos/o/r/check-runs/100", 50, "in_progress"),
                    ("PATCH", "/repos/o/r/check-runs/100", 20, "completed")]
    run = api.runs[100]
    assert (run["head_sha"], run["conclusion"]) == (PR_HEAD, "failure")
    assert [(a["path"], a["start_line"]) for a in run["annotations"]] == [
        ("evals/cases/big.yaml", 3 + 3 * i) for i in range(120)]
    summary = run["output"]["summary"]
    assert checkrun.SUMMARY_LIMIT - 200 < len(summary) <= checkrun.SUMMARY_LIMIT
    assert "cut to fit the 65," in summary and summary.startswith("**gitevals diff: failed.**")
    assert run["output"]["title"] == ("gitevals diff failed: 121 of 131 diff results "
                                      "regressed beyond noise")


def test_a_passing_diff_is_a_successful_check_without_annotations(repo: Repo) -> None:
    repo.commit({"evals/cases/big.yaml": _case(2)})
    (repo.path / "diff-junit.xml").write_text(_diff_junit(range(0), 2).replace(
        '<failure message="suite: -40 pts">x</failure>', ""))
    with fake_checks.serve() as api:
        r = check(repo.path, api, "diff-junit.xml", code=0)
    assert r.returncode == 0 and api.refused == [], r.stderr
    ((method, _, body, _),) = api.calls
    assert method == "POST" and body["conclusion"] == "success"
    assert body["output"]["annotations"] == []


def test_a_read_only_token_is_one_line_and_the_job_goes_on(repo: Repo) -> None:
    repo.commit({"evals/cases/big.yaml": _case(2)})
    (repo.path / "diff-junit.xml").write_text(_diff_junit(range(1), 2))
    with fake_checks.serve() as api:
        api.forbid = True
        r = check(repo.path, api, "diff-junit.xml")
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr == ("gitevals: could not publish the check run: POST /repos/o/r/"
                        "check-runs: 403 Forbidden; the job needs `checks: write`; the results "
                        "are in the summary and the artifact\n")


def test_a_file_that_is_not_junit_is_one_line(repo: Repo) -> None:
    repo.commit({"evals/cases/big.yaml": _case(1)})
    (repo.path / "diff-junit.xml").write_text("<testsuites")
    with fake_checks.serve() as api:
        r = check(repo.path, api, "diff-junit.xml")
        missing = check(repo.path, api, "nope.xml")
    assert r.returncode == 2 and r.stderr.startswith("gitevals: error: diff-junit.xml: not "
                                                     "JUnit XML (")
    assert r.stderr.count("\n") == 1 and api.calls == []
    assert missing.returncode == 2 and missing.stderr == (
        "gitevals: error: nope.xml: not a regular file; give a JUnit file gitevals wrote\n")


@pytest.mark.parametrize(("text", "line"), [
    ("scenarios:\n  - id: a\n  - id: b\n", 3),
    ("scenarios:\n  - user: hi\n    id: 'b'  # quoted\n", 3),
    ("scenarios:\n  - id: bb\n", 1),
], ids=["plain", "quoted-after-user", "absent"])
def test_scenario_line(text: str, line: int) -> None:
    assert checkrun.scenario_line(text, "b") == line


def test_the_head_of_a_pull_request_not_its_merge_commit() -> None:
    event = {"pull_request": {"head": {"sha": PR_HEAD}}}
    assert checkrun.head_sha(event, {"GITHUB_SHA": MERGE}) == PR_HEAD
    assert checkrun.head_sha({"ref": "refs/heads/main"}, {"GITHUB_SHA": MERGE}) == MERGE
