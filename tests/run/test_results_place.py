"""Issue #23 item 7: each scenario's duration in show's and diff's tables, and the
``results`` setting that places run artifacts."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from tests.conftest import Repo, run_cli
from tests.support.artifacts import PARIS, artifact, result, scenario, transcript


def _timed(ms: int) -> dict[str, Any]:
    t = transcript("Paris")
    t["duration_ms"] = ms
    return result(0, PARIS, t)


def test_show_gives_each_scenario_its_duration_in_every_table(repo: Repo) -> None:
    doc = artifact({"geo": [scenario("quick", PARIS, [_timed(400), _timed(450)]),
                            scenario("slow", PARIS, [_timed(61_000), _timed(64_400)]),
                            scenario("mid", PARIS, [_timed(12_345)])]})
    path = repo.path / "run.json"
    path.write_text(json.dumps(doc))
    text = run_cli("show", str(path), cwd=repo.path)
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[1].split() == ["case", "scenario", "verdict", "passes", "duration", "first",
                                "failure"]
    assert [" ".join(line.split()[4:]) for line in lines[2:5]] == [
        "850 ms", "2 min 05 s", "12.3 s"]  # the sum of the scenario's trials
    md = run_cli("show", str(path), "--format", "markdown", cwd=repo.path).out
    assert "| geo | slow | ✅ pass | 2/2 | 2 min 05 s |  |" in md
    js = json.loads(run_cli("show", str(path), "--format", "json", cwd=repo.path).out)
    assert [s["duration_ms"] for s in js["scenarios"]] == [850, 125_400, 12_345]


HARNESS = """\
import json, sys, time
for line in sys.stdin:
    time.sleep(0.05)
    print(json.dumps({"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None}),
          flush=True)
"""
CASE = ("defaults: {trials: 2, timeout: 10s}\nscenarios:\n"
        "  - id: capital\n    user: What is the capital of France?\n"
        "    expect: [{final_answer_contains: Paris}]\n")


def _settings(extra: str = "") -> str:
    # the harness imports only the standard library: -S skips site at each start
    return (f"[tool.gitevals]\n{extra}\n[tool.gitevals.target]\n"
            f'command = ["{sys.executable}", "-S", "harness.py"]\n')


def test_diff_shows_each_sides_duration(repo: Repo) -> None:
    files: dict[str, str | bytes] = {"pyproject.toml": _settings(), "harness.py": HARNESS,
                                     "evals/cases/geo.yaml": CASE}
    a = repo.commit(files, "a")
    assert run_cli("run", cwd=repo.path).code == 0
    b = repo.commit({"harness.py": HARNESS.replace('"Paris"', '"Lyon"', 1)}, "b")
    assert run_cli("run", cwd=repo.path).code == 1
    out = run_cli("diff", a, b, cwd=repo.path).out
    header, row = out.split("\n\n")[1].splitlines()[1:3]
    assert header.split()[-5:] == ["noise", "duration", "A", "->", "B"]
    # two trials of at least 50 ms each side
    assert re.search(r"regressed .* (\d{3,} ms|\d+\.\d s) -> (\d{3,} ms|\d+\.\d s)$", row), row


def test_results_setting_places_runs_outside_the_eval_tree(repo: Repo) -> None:
    repo.commit({"pyproject.toml": _settings('results = "runs"'), "harness.py": HARNESS,
                 "evals/cases/geo.yaml": CASE}, "a")
    ran = run_cli("run", "--no-note", cwd=repo.path)
    assert ran.code == 0, ran.err
    [art] = (repo.path / "runs").glob("*.json")
    assert f"artifact runs/{art.name}" in ran.out
    assert not (repo.path / "evals/results").exists()
    # the directory gitevals made is git-ignored, as init's <root>/results is
    assert (repo.path / "runs/.gitignore").read_text().splitlines()[-1] == "*"
    assert repo.git("status", "--porcelain") == ""
    # every reader looks there (no note was written: the file is the only copy)
    shown = run_cli("show", cwd=repo.path)
    assert shown.code == 0 and art.stem in shown.out, shown.err
    logged = run_cli("log", "--format", "json", cwd=repo.path)
    assert logged.code == 0, logged.err
    assert art.stem in logged.out
    b = repo.commit({"harness.py": HARNESS.replace('"Paris"', '"Lyon"', 1)}, "b")
    assert run_cli("run", "--no-note", cwd=repo.path).code == 1
    diffed = run_cli("diff", "HEAD~1", b, "--format", "json", cwd=repo.path)
    doc = json.loads(diffed.out)
    assert diffed.code == 0, diffed.err  # 2 trials: a drop within noise
    assert doc["a"]["run_source"] == doc["b"]["run_source"] == "results"
    assert [v["change"] for v in doc["verdicts"]] == ["regressed"]
    # a second run of a dirty-looking results directory is not "uncommitted changes"
    assert run_cli("run", "--no-note", cwd=repo.path).code == 1


def test_without_the_setting_runs_stay_in_root_results(repo: Repo) -> None:
    repo.commit({"pyproject.toml": _settings(), "harness.py": HARNESS,
                 "evals/cases/geo.yaml": CASE}, "a")
    assert run_cli("run", "--no-note", cwd=repo.path).code == 0
    assert len(list((repo.path / "evals/results").glob("*.json"))) == 1
    assert not (repo.path / "evals/results/.gitignore").exists()  # init writes that one


def test_a_results_setting_among_the_cases_is_refused(repo: Repo) -> None:
    for value, why in (("evals", "is the eval root 'evals' or holds it"),
                       ("runs/../..", "leaves the repository"),
                       ("./runs", "is not in normal form")):
        repo.commit({"pyproject.toml": _settings(f'results = "{value}"'),
                     "evals/cases/geo.yaml": CASE}, value)
        res = run_cli("lint", cwd=repo.path)
        assert res.code == 1, res.out
        assert (f"pyproject.toml:2:1: GE705 results {value!r} {why}: run artifacts go to a "
                "directory of their own") in res.out, res.out
