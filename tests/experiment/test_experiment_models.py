"""Issue #23 item 3: the model is a control of an experiment. The target's replies say
which model and driver answered (optional protocol fields); the after-check fails a
sample that used another model than its lane's, and two lanes that used different models
though their ``env:`` declares no difference."""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.conftest import Repo, run_cli

# Answers Paris, naming its model: $MODEL (default m-a), or ODD for the trial of odd.json.
HARNESS = """\
import json, os, sys
odd = json.load(open("odd.json"))
for line in sys.stdin:
    msg = json.loads(line)
    model = os.environ.get("MODEL", "m-a")
    if msg["trial"] == odd.get("trial"):
        model = odd["model"]
    print(json.dumps({"final_answer": "Paris", "tool_calls": [], "hooks": [], "error": None,
                      "model": model, "driver": "loop/1"}), flush=True)
"""
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
GEO = ("scenarios:\n  - id: capital\n    user: What is the capital of France?\n"
       "    expect:\n      - final_answer_contains: Paris\n")


def _commit(repo: Repo, odd: dict[str, Any] | None = None, harness: str = HARNESS) -> str:
    return repo.commit({"harness.py": harness, "pyproject.toml": SETTINGS,
                        "odd.json": json.dumps(odd or {}), "evals/cases/geo.yaml": GEO})


def _experiment(repo: Repo, *lanes: str) -> tuple[int, dict[str, Any]]:
    args = [a for lane in lanes for a in ("--lane", lane)]
    r = run_cli("experiment", *args, "--repeat", "3", "--format", "json", cwd=repo.path)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def _lanes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in doc["lanes"]}


def test_lanes_whose_env_declares_the_model_may_differ_in_it(repo: Repo) -> None:
    c = _commit(repo)
    code, doc = _experiment(repo, f"a={c},env:MODEL=m-a", f"b={c},env:MODEL=m-b")
    assert code == 0 and doc["controls_held"], doc
    a, b = _lanes(doc)["a"], _lanes(doc)["b"]
    assert a["realized"] == {"model": "m-a", "driver": "loop/1", "models": {"m-a": 3},
                             "drivers": {"loop/1": 3}, "model_unreported": 0,
                             "driver_unreported": 0}
    assert b["realized"]["model"] == "m-b"
    # recorded per trial: every reply of the lane's artifact names it
    art = json.loads((repo.path / a["artifact"]).read_text())
    turns = [r for s in art["cases"][0]["scenarios"] for t in s["results"]
             for r in t["transcript"]["turns"]]
    assert {(r["model"], r["driver"]) for r in turns} == {("m-a", "loop/1")}


def test_a_sample_that_used_another_model_fails_control_equivalence(repo: Repo) -> None:
    c = _commit(repo, {"trial": 2, "model": "m-sneaky"})
    code, doc = _experiment(repo, f"a={c},env:MODEL=m-a", f"b={c},env:MODEL=m-b")
    assert code == 1 and not doc["controls_held"]
    problems = {name: d["controls"]["problems"] for name, d in _lanes(doc).items()}
    assert problems == {
        "a": ["sample geo/capital#2 used model 'm-sneaky', not the lane's 'm-a'"],
        "b": ["sample geo/capital#2 used model 'm-sneaky', not the lane's 'm-b'"]}
    text = run_cli("experiment", "--recheck", doc["id"], cwd=repo.path)
    assert text.code == 1
    assert "lane a: sample geo/capital#2 used model 'm-sneaky', not the lane's 'm-a'" in text.out
    assert "lane a: model m-a (3 samples), driver loop/1 (3 samples)" in text.out


def test_lanes_with_the_same_env_must_use_the_same_model(repo: Repo) -> None:
    # the harness of the second commit picks another model in its code: with the same
    # env, that is a difference no lane declared
    c1 = _commit(repo)
    c2 = _commit(repo, harness=HARNESS.replace('"m-a")', '"m-z")'))
    code, doc = _experiment(repo, f"old={c1}", f"new={c2}")
    assert code == 1 and not doc["controls_held"]
    lanes = _lanes(doc)
    assert lanes["old"]["controls"]["problems"] == []
    assert lanes["new"]["controls"]["problems"] == [
        "used model 'm-z' where lane old used 'm-a', though their env: declares no "
        "difference (the model is a control: declare it with --lane NAME=REV,env:KEY=VALUE)"]
