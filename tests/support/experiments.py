"""``gitevals experiment``: the example harness whose lanes differ by settings."""

from __future__ import annotations

import sys

from tests.support.paths import EXPERIMENT_HARNESS

HARNESS = EXPERIMENT_HARNESS


#: The harness as a command target, its interpreter started with ``-S``: the harness
#: imports only the standard library, so site's work (the venv's .pth files, about
#: two thirds of a start) is spared on each conversation's start.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'


GEO = ("scenarios:\n  - id: capital\n    user: What is the capital of France?\n"
       "    expect:\n      - final_answer_contains: Paris\n")
