"""Two runs to diff: a harness whose passes per scenario are committed (``passes.json``),
case files, and a commit-then-run step."""

from __future__ import annotations

import json

from tests.conftest import Repo, run_cli

# A harness whose every scenario passes with probability rates.json[scenario], seeded by
# seed.txt (different at each commit) so two commits draw independent trials. A python
# target (RANDOM_SETTINGS): imported once per run and forked per conversation, where a
# command harness started a Python per conversation (thousands in the diff tests that
# use it, none of which is about command targets); the draw per (seed, scenario, trial)
# is the one the command harness made, so every seeded outcome is the same.
RANDOM_HARNESS = """\
import json, random
from pathlib import Path
here = Path(__file__).parent
rates = json.loads((here / "rates.json").read_text())
seed = (here / "seed.txt").read_text().strip()


def respond(messages):
    msg = messages[-1]
    rng = random.Random(f"{seed}/{msg['scenario']}/{msg['trial']}")
    ok = rng.random() < rates[msg["scenario"]]
    return {"final_answer": "Paris" if ok else "Lyon", "tool_calls": [], "hooks": [],
            "error": None}
"""
RANDOM_SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'

# A deterministic harness: scenario s passes on trials below passes.json[s]. A python
# target too (SETTINGS), for the same reason as RANDOM_HARNESS: the diff, notes, hints and
# action tests that run it are not about command targets, and it answers as the command
# harness did (same passes.json rule per scenario and trial).
HARNESS = """\
import json
from pathlib import Path
passes = json.loads((Path(__file__).parent / "passes.json").read_text())


def respond(messages):
    msg = messages[-1]
    ok = msg["trial"] < passes.get(msg["scenario"], 0)
    return {"final_answer": "Paris" if ok else "Lyon", "tool_calls": [], "hooks": [],
            "error": None}
"""


SETTINGS = RANDOM_SETTINGS


IDS = ("capital", "steady", "better", "retired")


def case(trials: int, ids: tuple[str, ...] = IDS, **expect: str) -> str:
    """A case file: every scenario expects Paris unless ``expect`` says otherwise."""
    body = "".join(f"  - id: {i}\n    user: What is the capital of France?\n"
                   f"    expect: [{{final_answer_contains: {expect.get(i, 'Paris')}}}]\n"
                   for i in ids)
    return f"defaults: {{trials: {trials}, timeout: 10s}}\nscenarios:\n{body}"


def commit_and_run(repo: Repo, passes: dict[str, int], case_text: str, msg: str) -> str:
    sha = repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                       "passes.json": json.dumps(passes), "evals/cases/geo.yaml": case_text}, msg)
    r = run_cli("run", cwd=repo.path)
    assert r.code in (0, 1), r.err
    return sha
