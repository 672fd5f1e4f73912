"""Issue #23 item 7: each scenario's duration in show's and diff's tables, and the
``results`` setting that places run artifacts."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from .conftest import Repo, run_cli
from .test_scoring import PARIS, artifact, result, scenario, transcript


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
    return (f"[tool.gitevals]\n{extra}\n[tool.gitevals.target]\n"
            f'command = ["{sys.executable}", "harness.py"]\n')


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
