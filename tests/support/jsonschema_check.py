"""check-jsonschema's built-in schemas (GitHub Actions, GitLab CI) over a file, offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

#: No network: a proxy nothing listens on, and no user namespace tricks needed.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": ""}

#: Runs check-jsonschema's own command (the ``check-jsonschema`` script's ``main``) once per
#: argv read as JSON from stdin, in this one process: its imports (requests, jsonschema,
#: click, ~0.6 s of CPU) are paid once, not once per file. Prints each run's exit code,
#: stdout and stderr as JSON; an exception is the traceback and exit 1, as the script's.
_MANY = """\
import json, sys, traceback
from click.testing import CliRunner
from check_jsonschema import main
out = []
for argv in json.load(sys.stdin):
    r = CliRunner().invoke(main, argv, prog_name="check-jsonschema")
    err = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        err += "".join(traceback.format_exception(r.exception))
    out.append([r.exit_code, r.stdout, err])
print(json.dumps(out))
"""


def _exe() -> Path:
    exe = Path(sys.executable).parent / "check-jsonschema"
    if not exe.is_file():
        pytest.skip("check-jsonschema is not installed: pip install -e '.[test]'")
    return exe


def _offline(argv: list[str]) -> list[str]:
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"],
                                                 capture_output=True).returncode == 0:
        return ["unshare", "-rn", *argv]  # no network namespace at all where allowed
    return argv


def check(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    argv = _offline([str(_exe()), "--builtin-schema", schema, str(path)])
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **OFFLINE})


def check_many(checks: Sequence[tuple[str, Path]]) -> list[subprocess.CompletedProcess[str]]:
    """``check(schema, path)`` for each pair, as separate runs of check-jsonschema's command
    (each its own exit code and output), in one offline process."""
    _exe()
    argvs = [["--builtin-schema", schema, str(path)] for schema, path in checks]
    proc = subprocess.run(_offline([sys.executable, "-c", _MANY]), input=json.dumps(argvs),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **OFFLINE})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)
    return [subprocess.CompletedProcess(["check-jsonschema", *argv], code, out, err)
            for argv, (code, out, err) in zip(argvs, results, strict=True)]
