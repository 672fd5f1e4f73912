"""``gitevals show --trial``, ``show --all`` and the line that ends ``gitevals run``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gitevals.errors import UsageError
from gitevals.report import trial
from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo, built_once, git, run_cli
from tests.support.artifacts import artifact as make_artifact
from tests.support.artifacts import grader_answer, result, scenario, transcript

EXPECT = [{"tool_called": {"name": "shell__run"}}, {"grader": {"name": "quality.answers"}},
          {"final_answer_contains": "Paris"}]


def conversation(answer: str) -> dict[str, Any]:
    first = {"final_answer": "looking", "error": None,
             "tool_calls": [{"name": "shell__run", "args": {"cmd": "ls\x1b[2J"},
                             "result": "a\nb"}],
             "hooks": [{"name": "guard", "decision": "allow"}],
             "usage": {"prompt_tokens": 1200, "completion_tokens": 30}, "cost": 0.5}
    second = {"final_answer": answer, "error": None, "tool_calls": [], "hooks": [],
              "usage": {"prompt_tokens": 34, "completion_tokens": 7}, "cost": 0.25}
    t = transcript(answer, calls=first["tool_calls"])
    t.update(turns=[first, second], hooks=first["hooks"], duration_ms=1500)
    return t


def trial_run() -> dict[str, Any]:
    graders = [grader_answer({"pass": False, "score": 0.25, "why": "wrong city"}, index=1)]
    results = [result(0, EXPECT, conversation("Paris"), [grader_answer(True, index=1)]),
               result(1, EXPECT, conversation("Lyon " + "x" * 600), graders)]
    s = scenario("capital", EXPECT, results)
    s["user"] = ["List the files.", "What is the capital of France?", "Thanks!"]
    return make_artifact({"geo": [s]})


TEXT = """\
geo/capital/1: FAILED (trial 1, one of 2 run)
run 20261129T220000Z-111111111111-a1b2c3 of HEAD (111111111111), case file evals/cases/geo.yaml

[1] user: List the files.
    tool shell__run {"cmd": "ls\\u001b[2J"}
      -> a
         b
    hook guard: allow
    answer: looking

[2] user: What is the capital of France?
    answer: Lyon {x500}… (105 more)

[3] user: Thanks!
    (no reply: the conversation ended before this turn)

final answer: Lyon {x500}… (105 more)

assertions
  pass  tool_called shell__run: called 1 time
  FAIL  grader quality.answers: judged fail (score 0.25) (wrong city)
  FAIL  final_answer_contains 'Paris': not in the answer 'Lyon {x54}…'

graders
  quality.answers (1 ms): pass false, score 0.25, why: wrong city

duration 1.5 s; tokens 1,234 in / 37 out; cost 0.75
""".replace("{x500}", "x" * 495).replace("{x54}", "x" * 54)


def test_text_reads_as_a_conversation() -> None:
    run = trial_run()
    doc = trial.document(run, *trial.pick(run, "geo/capital"))
    assert trial.render_text(doc) == TEXT


def test_json_is_the_same_data_whole() -> None:
    run = trial_run()
    doc = json.loads(trial.as_json(trial.document(run, *trial.pick(run, "geo/capital/1"))))
    stored = run["cases"][0]["scenarios"][0]["results"][1]
    assert doc["final_answer"] == stored["transcript"]["final_answer"]  # not folded
    assert [t["user"] for t in doc["conversation"]] == run["cases"][0]["scenarios"][0]["user"]
    assert doc["conversation"][2]["reply"] is None
    assert doc["graders"] == stored["graders"]
    assert [a["rule"] for a in doc["assertions"]] == EXPECT
    assert doc["usage"] == {"prompt_tokens": 1234, "completion_tokens": 37, "cost": 0.75,
                            "trials": 1, "reported": {"prompt_tokens": 1, "cost": 1,
                                                      "completion_tokens": 1}}


@pytest.mark.parametrize(("spec", "trial_no"), [
    ("geo/capital", 1),  # the first failing trial
    ("geo/capital/0", 0),
    ("geo/capital/1", 1),
], ids=["first-failing", "explicit-0", "explicit-1"])
def test_pick(spec: str, trial_no: int) -> None:
    assert trial.pick(trial_run(), spec)[2]["trial"] == trial_no


def test_pick_defaults_to_trial_0_when_all_passed() -> None:
    run = make_artifact({"a": [scenario("s", [], [result(0, [], transcript()),
                                                  result(1, [], transcript())])]})
    assert trial.pick(run, "a/s")[2]["trial"] == 0


@pytest.mark.parametrize(("spec", "message"), [
    ("nope/capital", "--trial nope/capital: no case 'nope' in this run; it has 'geo' "
                     "(give CASE/SCENARIO[/N])"),
    ("geo", "--trial geo: no scenario '' in case 'geo'; it has 'capital'"),
    ("geo/cap", "--trial geo/cap: no scenario 'cap' in case 'geo'; it has 'capital'"),
    ("geo/capital/5", "--trial geo/capital/5: no trial 5 of geo/capital; it has trials 0-1"),
    ("geo/capital/x\x1b", "--trial geo/capital/x\\x1b: no trial x\\x1b of geo/capital; "
                          "it has trials 0-1"),
], ids=["case", "no-scenario", "scenario", "trial", "escaped"])
def test_a_bad_spec_names_what_exists(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        trial.pick(trial_run(), spec)
    assert str(info.value) == message


def test_a_scenario_that_did_not_run() -> None:
    run = make_artifact({"a": [scenario("s", [], [])]})
    with pytest.raises(UsageError, match="no trial 0 of a/s; it has no trials: it was not run"):
        trial.pick(run, "a/s")


# -- through the CLI -------------------------------------------------------------------

AGENT = """\
def respond(messages):
    if messages[-1]["scenario"] == "raises":
        raise RuntimeError("kaboom")
    return {"final_answer": "Paris", "hooks": [{"name": "guard", "decision": "deny"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
"""
CASE = """\
defaults: {trials: 2, timeout: 20s}
scenarios:
  - id: fine
    user: What is the capital of France?
    expect: [{hook_called: {name: guard, decision: deny}}]
  - id: raises
    user: hi
    expect: [{hook_called: {name: guard, decision: deny}}]
"""


def _commit_and_run(root: Path) -> None:
    """The repository in ``root/repo`` after one run; what the run printed in ``root/out``."""
    (root / "repo").mkdir()
    git(root / "repo", "init", "-q", "-b", "main")
    repo = Repo(root / "repo")
    repo.commit({"agent.py": AGENT, "evals/cases/demo.yaml": CASE,
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n'})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.err
    (root / "out").write_text(res.out)


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Repo, str]:
    """A copy of the repository after its run (made once for the test run) and the run's
    stdout."""
    built = built_once(tmp_path_factory, "show-trial-ran", _commit_and_run)
    shutil.copytree(built / "repo", tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo"), (built / "out").read_text()


def test_an_errored_trial_shows_the_error_not_what_it_kept_from_happening(
        ran: tuple[Repo, str]) -> None:
    repo, out = ran
    assert re.search(r"demo  raises    fail     0/2 .* target error: RuntimeError: kaboom\n", out)
    res = run_cli("show", "--trial", "demo/raises", cwd=repo.path)
    assert res.code == 1
    assert res.out.startswith("demo/raises/0: FAILED (trial 0, one of 2 run)\n")
    assert "    error: RuntimeError: kaboom\n" in res.out
    assert "target error: RuntimeError: kaboom\n" in res.out
    assert "  FAIL  hook_called guard deny: never ran\n" in res.out


def test_run_ends_with_duration_artifact_and_note(ran: tuple[Repo, str]) -> None:
    repo, out = ran
    [path] = (repo.path / "evals" / "results").glob("*.json")
    assert re.fullmatch(r"1 pass, 0 flaky, 1 fail, 0 broken in \d+\.\d s; artifact "
                        + re.escape(f"evals/results/{path.name}, note refs/notes/gitevals"),
                        out.splitlines()[-1])
    assert out.splitlines()[-2] == "tokens 20 in / 4 out (2 of 4 trials reported none)"


def test_run_without_a_note_does_not_name_one(repo: Repo) -> None:
    repo.commit({"agent.py": AGENT, "evals/cases/demo.yaml": CASE,
                 "pyproject.toml": '[tool.gitevals.target]\npython = "agent:respond"\n'})
    res = run_cli("run", "--no-note", "demo", cwd=repo.path)
    assert re.search(r"; artifact evals/results/\S+\.json\n$", res.out)
    for fmt in ("json", "junit", "markdown"):  # the document alone on stdout
        res = run_cli("run", "--no-note", "--format", fmt, cwd=repo.path)
        assert "; artifact " not in res.out and res.err == ""


def test_show_trial_json_and_bad_specs(ran: tuple[Repo, str]) -> None:
    repo, _ = ran
    res = run_cli("show", "--trial", "demo/fine/1", "--format", "json", cwd=repo.path)
    assert res.code == 0
    assert json.loads(res.out)["trial"] == 1
    res = run_cli("show", "--trial", "demo/nope", cwd=repo.path)
    assert (res.code, res.out) == (2, "")
    assert res.err == ("gitevals: error: --trial demo/nope: no scenario 'nope' in case "
                       "'demo'; it has 'fine', 'raises'\n")
    res = run_cli("show", "--trial", "demo/fine", "--format", "junit", cwd=repo.path)
    assert res.code == 2 and "--trial prints text or json" in res.err


def test_show_all_lists_the_runs_of_a_commit(ran: tuple[Repo, str]) -> None:
    repo, _ = ran
    assert run_cli("run", "demo", "--no-note", cwd=repo.path).code == 1  # a partial run
    res = run_cli("show", "--all", cwd=repo.path)
    assert res.code == 0, res.err
    head, newer, older = res.out.splitlines()
    assert head.startswith("runs of HEAD (") and head.endswith("* marks the one show and diff read")
    full = [load_artifact(p) for p in (repo.path / "evals/results").glob("*.json")
            if not load_artifact(p)["options"]["cases"]]
    # the complete run is the one read, though the partial one is newer
    assert older.startswith(f"*  {full[0]['run_id']}  ")
    assert "complete" in older and older.endswith(", note refs/notes/gitevals")
    assert newer.startswith("   ") and "partial: demo" in newer
    doc = json.loads(run_cli("show", "--all", "--format", "json", cwd=repo.path).out)
    assert [r["picked"] for r in doc["runs"]] == [False, True]
    assert doc["runs"][1]["summary"] == {"pass": 1, "flaky": 0, "fail": 1, "broken": 0,
                                         "not_run": 0}


def test_show_all_reads_the_note_alone(ran: tuple[Repo, str], tmp_path: Path) -> None:
    repo, _ = ran
    for p in (repo.path / "evals/results").glob("*.json"):
        p.unlink()
    doc = json.loads(run_cli("show", "--all", "--format", "json", cwd=repo.path).out)
    assert [(r["picked"], r["sources"]) for r in doc["runs"]] == [
        (True, ["note refs/notes/gitevals"])]
