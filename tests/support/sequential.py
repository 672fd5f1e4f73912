"""A sequential run: a harness whose pass rates per scenario are committed, 40 trials."""

from __future__ import annotations

from tests.support.paths import HARNESS_SETTINGS_NO_SITE

# A harness whose pass pattern per scenario is set by rates.json: trial t passes when
# t % 10 < rate * 10, so every block of ten trials holds the rate exactly.
HARNESS = """\
import json, sys
from pathlib import Path
rates = json.loads((Path(__file__).parent / "rates.json").read_text())
for line in sys.stdin:
    msg = json.loads(line)
    ok = msg["trial"] % 10 < round(rates[msg["scenario"]] * 10)
    print(json.dumps({"final_answer": "Paris" if ok else "Lyon", "tool_calls": [],
                      "hooks": [], "error": None}), flush=True)
"""


#: The harness (standard library only) started with ``-S``: 40 trials a scenario start as
#: many Pythons, each without site's work.
SETTINGS = HARNESS_SETTINGS_NO_SITE


CASE = "defaults: {trials: 40, timeout: 10s}\nscenarios:\n" + "".join(
    f"  - id: {i}\n    user: What is the capital of France?\n"
    "    expect: [{final_answer_contains: Paris}]\n" for i in ("stable", "dropped", "uncertain"))
