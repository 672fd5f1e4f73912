"""The composite action's own shell steps (action.yml), run locally as a runner would run
them, in a fresh clone of a real repository with a real origin: the notes are fetched,
the base's run is reused when the notes hold one and run when not, the head is run, the
diff's markdown reaches the step summary, and the last step fails on the diff's exit code.
Steps that call other actions (setup-python, cache, upload-artifact) and the install and
sandbox steps are the runner's business and are not run here."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import GIT_ENV, Repo, git
from tests.support import fake_checks
from tests.support.diffs import case, commit_and_run
from tests.support.runs import repo_copy

ROOT = Path(__file__).resolve().parents[2]
STEPS = ("Fetch the runs shared as notes", "Reuse or run the base", "Run the head", "Diff",
         "Step summary", "JUnit check run", "Fail on the diff's exit code")
EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def action() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return doc


def lookup(context: dict[str, Any], path: str) -> str:
    value: Any = context
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return str(value)


def fill(text: str, context: dict[str, Any]) -> str:
    """``text`` with each ``${{ a.b.c }}`` replaced by its value in ``context``."""
    return EXPR.sub(lambda m: lookup(context, m.group(1)), text)


def run_steps(checkout: Path, tmp: Path, base: str, runner_env: dict[str, str] | None = None
              ) -> tuple[dict[str, dict[str, str]], int]:
    """The named steps in order, as the runner would: each step's ``env`` with its
    ``${{ }}`` filled from the inputs' defaults (which may name ``github.token``), the
    event and earlier steps' outputs; ``runner_env`` is what the runner sets for every
    step (GITHUB_API_URL, GITHUB_EVENT_PATH, ...). Returns the steps' outputs and the
    last step's exit code."""
    doc = action()
    inputs = {k: v.get("default", "") for k, v in doc["inputs"].items()}
    inputs["run-args"] = ""
    outputs: dict[str, dict[str, str]] = {}
    summary = tmp / "summary.md"
    code = 0
    for step in doc["runs"]["steps"]:
        if step.get("name") not in STEPS:
            continue
        assert step["shell"] == "bash"
        context = {"inputs": inputs, "steps": {k: {"outputs": v} for k, v in outputs.items()},
                   "github": {"event": {"pull_request": {"base": {"sha": base}}, "before": ""},
                              "token": "t0ken"}}
        env = {k: fill(fill(str(v), context), context) for k, v in step.get("env", {}).items()}
        out = tmp / f"output-{len(outputs)}"
        out.write_text("")
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=checkout, capture_output=True, text=True, timeout=600,
            env={**os.environ, **GIT_ENV, **(runner_env or {}), **env, "GITHUB_OUTPUT": str(out),
                 "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"})
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in
                                       out.read_text().splitlines())
        code = proc.returncode
        if code != 0 and step["name"] != STEPS[-1]:
            raise AssertionError(f"{step['name']}: exit {code}\n{proc.stdout}{proc.stderr}")
    return outputs, code


def _commits(repo: Repo) -> None:
    """main at A (run, its note kept), branch ``change`` at B that made 'capital' worse."""
    repo.write({"evals/.gitignore": "results/\n"})  # runs are not committed
    commit_and_run(repo, {"capital": 10, "steady": 10}, case(10, ("capital", "steady")), "a")
    repo.git("checkout", "-q", "-b", "change")
    repo.commit({"passes.json": '{"capital": 1, "steady": 10}'}, "b")


@pytest.fixture
def commits(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of ``_commits``' repository, made once a run (A's run is the costly part):
    each test pushes from its own copy."""
    return repo_copy(tmp_path_factory, tmp_path, "action-local-commits", _commits)


def origin_and_checkout(repo: Repo, tmp: Path, share_notes: bool) -> tuple[str, Path]:
    """``repo`` (``commits``): main at A (run; its note pushed when ``share_notes``), a
    pull request head B that made 'capital' worse; a fresh clone checked out at B, as
    actions/checkout leaves it."""
    a = repo.git("rev-parse", "main")
    bare = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    if share_notes:
        repo.git("push", "-q", "origin", "refs/notes/gitevals")
    repo.git("push", "-q", "origin", "change")
    checkout = tmp / "checkout"
    git(tmp, "clone", "-q", "-b", "change", str(bare), str(checkout))
    return a, checkout


def test_a_regression_with_the_base_run_from_notes(commits: Repo, tmp_path: Path) -> None:
    repo = commits
    base, checkout = origin_and_checkout(repo, tmp_path, share_notes=True)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": "b" * 40}}}))
    with fake_checks.serve() as api:
        outputs, code = run_steps(checkout, tmp_path, base, {
            "GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "m" * 40,
            "GITHUB_EVENT_PATH": str(event)})
    # the JUnit results as a check run on the pull request's head, annotated at the
    # regressed scenario's line of its case file
    assert api.refused == [] and list(api.runs) == [100]
    run = api.runs[100]
    assert (run["name"], run["head_sha"], run["status"], run["conclusion"]) == (
        "gitevals", "b" * 40, "completed", "failure")
    assert run["output"]["title"] == ("gitevals diff failed: 1 of 3 diff results regressed "
                                      "beyond noise; head run: 1 of 2 scenarios passed")
    assert run["output"]["summary"].startswith("**gitevals diff: failed.**")
    (note,) = run["annotations"]
    assert (note["path"], note["start_line"], note["annotation_level"]) == (
        "evals/cases/geo.yaml", 3, "failure")
    assert note["title"] == "geo/capital: regressed beyond noise"
    assert api.calls[0][3]["Authorization"] == "Bearer t0ken"
    assert outputs["base"] == {"rev": base, "base": "reuse"}
    results = sorted((checkout / "evals" / "results").glob("*.json"))
    assert len(results) == 1  # the head's run only: the base's came with the notes
    assert outputs["diff"] == {"exit-code": "1"} and code == 1
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("**gitevals diff: failed.** A scenario or goldens bucket "
                              "regressed beyond noise (exit 1).")
    assert "capital" in summary
    junit = (checkout / "gitevals-junit.xml").read_text()
    assert junit.startswith("<?xml") and "capital" in junit
    # the diff's JUnit for test reporters: the suite's testcase first, the regressed
    # scenario a failure under the control (issue 21)
    import xml.etree.ElementTree as ET

    root = ET.fromstring((checkout / "gitevals-diff-junit.xml").read_text())
    assert root[0].get("name") == "suite" and root[0][1].get("name") == "suite"
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == ["capital"]


def test_without_notes_the_base_is_run(commits: Repo, tmp_path: Path) -> None:
    repo = commits
    base, checkout = origin_and_checkout(repo, tmp_path, share_notes=False)
    outputs, code = run_steps(checkout, tmp_path, base)
    assert outputs["base"] == {"rev": base, "base": "run"}
    assert len(list((checkout / "evals" / "results").glob("*.json"))) == 2  # base and head
    assert (outputs["diff"], code) == ({"exit-code": "1"}, 1)
