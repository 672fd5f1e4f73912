"""The README's first quick-start command stays true: the demo runs end to end."""

from __future__ import annotations

import subprocess

from tests.conftest import DemoRun


def test_demo_lints_runs_and_diffs(demo_run: DemoRun) -> None:
    """``python examples/demo/run_demo.py --keep DIR`` as a user runs it (the shared
    ``demo_run``: exit 0 is asserted where it runs)."""
    keep, out = demo_run.repo, demo_run.stdout
    assert "demo: every step behaved as expected" in out
    assert "UNEXPECTED" not in out
    assert "$ gitevals diff v1 v2" in out
    assert "1 regressed beyond noise" in out
    assert "looks-up-the-weather" in out and "flaky" in out
    # the runs are pinned: one artifact per tag, and notes on both commits
    assert len(list((keep / "evals" / "results").glob("*.json"))) == 2
    notes = subprocess.run(["git", "notes", "--ref", "gitevals", "list"], cwd=keep,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    assert len([n for n in notes if n.strip()]) == 2
