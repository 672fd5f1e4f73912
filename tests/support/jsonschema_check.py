"""check-jsonschema's built-in schemas (GitHub Actions, GitLab CI) over a file, offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: No network: a proxy nothing listens on, and no user namespace tricks needed.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": ""}


def check(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "check-jsonschema"
    if not exe.is_file():
        pytest.skip("check-jsonschema is not installed: pip install -e '.[test]'")
    argv = [str(exe), "--builtin-schema", schema, str(path)]
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"],
                                                 capture_output=True).returncode == 0:
        argv = ["unshare", "-rn", *argv]  # no network namespace at all where allowed
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **OFFLINE})
