"""The README's first quick-start command stays true: the demo runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo" / "run_demo.py"


def test_demo_lints_runs_and_diffs(tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    proc = subprocess.run([sys.executable, str(DEMO), "--keep", str(keep)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
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
