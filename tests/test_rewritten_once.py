"""Under xdist, with ``PYTHONDONTWRITEBYTECODE`` set, the test modules are assertion-rewritten
once by the controller and read by every worker (``tests/support/rewritten.py``): the
workers load rewritten modules (failures keep pytest's introspection), from a folder
outside the work tree that is gone when the run ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import PROJECT

PROBE = """\
import json, os, sys
from pathlib import Path

def pytest_collection_finish(session):
    from _pytest.assertion import rewrite
    from _pytest.assertion.rewrite import PYC_TAIL
    module = Path(os.environ["PROBED"])
    folder = rewrite.get_cache_dir(module)
    name = "tests." + module.stem
    with open(os.environ["PROBE_OUT"], "a") as out:
        out.write(json.dumps({
            "worker": os.environ.get("PYTEST_XDIST_WORKER"),
            "folder": str(folder),
            "cached": (folder / (module.stem + PYC_TAIL)).is_file(),
            "rewritten": "@pytest_ar" in vars(sys.modules[name]),
        }) + "\\n")
"""


def _pycs(root: Path) -> set[Path]:
    return set(root.rglob("*.pyc"))


def test_workers_read_the_modules_the_controller_rewrote(tmp_path: Path) -> None:
    (tmp_path / "rwprobe.py").write_text(PROBE)
    out = tmp_path / "probe.jsonl"
    module = PROJECT / "tests" / "test_files.py"
    before = _pycs(PROJECT / "tests")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PROBED": str(module),
           "PROBE_OUT": str(out), "PYTHONPATH": str(tmp_path),
           "TMPDIR": str(tmp_path)}  # the controller's folder is made here
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "rwprobe",
                           "-p", "no:cacheprovider", str(module)],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(s["worker"] for s in seen) == ["gw0", "gw1"]
    for s in seen:
        assert s["rewritten"], s
        assert s["cached"], s  # found where the controller wrote it, not rewritten anew
        assert Path(s["folder"]).is_relative_to(tmp_path), s
        assert not Path(s["folder"]).exists(), "the run's folder outlives it"
    assert _pycs(PROJECT / "tests") == before, "bytecode written into the work tree"

