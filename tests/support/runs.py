"""``gitevals run`` on a real repository: the example harness (``tests/data/run_harness.py``)
and its settings, case texts, and the artifacts a run leaves."""

from __future__ import annotations

from typing import Any

from gitevals.run.artifact import load as load_artifact
from tests.conftest import Repo
from tests.support.paths import HARNESS_SETTINGS, HARNESS_SETTINGS_NO_SITE, RUN_HARNESS

HARNESS = RUN_HARNESS


SETTINGS = HARNESS_SETTINGS

#: ``SETTINGS`` with the harness's interpreter started with ``-S`` (it imports only the
#: standard library): still a command target, a cheaper start per conversation.
SETTINGS_NO_SITE = HARNESS_SETTINGS_NO_SITE


TONE = """\
defaults: {trials: 3, timeout: 5s}
scenarios:
  - id: ok-capital
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - no_error: true
  - id: ok-files
    user: [List the files., Now count them.]
    trials: 2
    expect:
      - tool_called: {name: shell__run}
      - hook_called: {name: guard, decision: allow}
"""


def scenario_case(sid: str, trials: int = 2, timeout: str = "20s") -> str:
    return (f"defaults: {{trials: {trials}, timeout: {timeout}}}\nscenarios:\n"
            f"  - id: {sid}\n    user: What is the capital of France?\n"
            "    expect: [{final_answer_contains: Paris}]\n")


def setup(repo: Repo, cases: dict[str, str], graders: dict[str, str] | None = None,
           settings: str = SETTINGS) -> str:
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": settings}
    files.update({f"evals/cases/{n}.yaml": c for n, c in cases.items()})
    files.update({f"evals/graders/{n}.py": g for n, g in (graders or {}).items()})
    return repo.commit(files)


def artifacts(repo: Repo) -> list[dict[str, Any]]:
    return [load_artifact(p) for p in sorted((repo.path / "evals" / "results").glob("*.json"))]


def only_artifact(repo: Repo) -> dict[str, Any]:
    (artifact,) = artifacts(repo)
    return artifact


def scenarios(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{c['name']}/{s['id']}": s for c in artifact["cases"] for s in c["scenarios"]}
