"""Outside this layout (a plain clone, no ``shared/data/`` above it) the tests that read the
published reference data skip with one line naming the missing file; nothing fails, and
nothing fails at collection."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import refdata

#: Every test module that reads ``shared/data/``; a new one belongs here too.
READERS = ["tests/report/test_junit.py", "tests/tasks/test_harbor_compat.py",
           "tests/lint/test_sarif_schema.py"]
#: Readers that need the rest of the checkout too (the docs pages they run), so they are
#: not run in the bare copy below; they reach the data through ``refdata.require`` alone,
#: which skips with the same one line.
CHECKOUT_READERS = ["tests/test_integration_docs.py"]
HERE = "tests/test_refdata.py"


def test_every_reader_of_the_data_goes_through_refdata() -> None:
    """No test builds a path to the data by hand (it would fail, not skip, without it)."""
    readers = []
    for path in sorted((refdata.ROOT / "tests").rglob("*.py")):
        if path.name in ("refdata.py", "test_refdata.py"):
            continue
        text = path.read_text(encoding="utf-8")
        if "refdata." in text:
            readers.append(path.relative_to(refdata.ROOT).as_posix())
        assert not re.search(r'"shared"\s*/\s*"data"|/work/shared', text), path
    assert readers == sorted(READERS + CHECKOUT_READERS)


def test_here_the_data_is_found() -> None:
    """In this layout the data is there, so the readers run instead of skipping."""
    if refdata.find("junit-10.xsd") is None:
        assert refdata.find("harbor-tasks") is None  # a plain clone: both absent
        return
    assert refdata.require("junit-10.xsd").is_file()
    assert (refdata.require("harbor-tasks") / "simple-task" / "task.toml").is_file()


def test_a_copy_with_no_data_beside_it_skips_with_one_line_each(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(refdata.ROOT / "tests", clone / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(refdata.ROOT / "pyproject.toml", clone)
    assert not any((p / "shared" / "data").exists() for p in clone.parents)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    proc = subprocess.run(  # the readers, and a test that passes, so that pytest exits 0
        [sys.executable, "-m", "pytest", *READERS, f"{HERE}::test_here_the_data_is_found",
         "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'basetemp'}"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    missing = {"tests/report/test_junit.py": "junit-10.xsd",
               "tests/tasks/test_harbor_compat.py": "harbor-tasks",
               "tests/lint/test_sarif_schema.py": "sarif-schema-2.1.0.json"}
    assert len(skips) == len(missing), proc.stdout
    for module, name in missing.items():  # one line each, naming the module and the file
        [line] = [s for s in skips if f" {module}:" in s]
        assert f"../shared/data/{name} is missing" in line
    assert re.search(r"\b1 passed, 3 skipped\b", proc.stdout) and "error" not in proc.stdout.lower()
