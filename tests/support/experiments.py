"""``gitevals experiment``: the example harness whose lanes differ by settings."""

from __future__ import annotations

from tests.support.paths import EXPERIMENT_HARNESS, HARNESS_SETTINGS

HARNESS = EXPERIMENT_HARNESS


SETTINGS = HARNESS_SETTINGS


GEO = ("scenarios:\n  - id: capital\n    user: What is the capital of France?\n"
       "    expect:\n      - final_answer_contains: Paris\n")
