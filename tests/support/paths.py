"""Where things are, from the checkout's root: a test module may move between folders."""

from __future__ import annotations

import sys
from pathlib import Path

#: The checkout (the folder holding ``gitevals/`` and ``tests/``).
PROJECT = Path(__file__).resolve().parents[2]
#: Harnesses and launchers the tests commit or start (``tests/data``).
DATA = PROJECT / "tests" / "data"
SCHEMAS = PROJECT / "schemas"
DOCS = PROJECT / "docs"
#: The example harnesses, as text to commit.
RUN_HARNESS = (DATA / "run_harness.py").read_text()
TASK_HARNESS = (DATA / "task_harness.py").read_text()
EXPERIMENT_HARNESS = (DATA / "experiment_harness.py").read_text()
#: Settings whose target is ``harness.py`` run by this interpreter started with ``-S``: no
#: site (the venv's .pth files, about a third of a start), for the example harnesses, which
#: import only the standard library. (Tests about command targets write the plain command.)
HARNESS_SETTINGS_NO_SITE = (f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", '
                            '"harness.py"]\n')
