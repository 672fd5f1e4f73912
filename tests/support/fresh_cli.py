"""Several ``gitevals`` calls in ONE fresh Python process, each from the top of its stack.

What only a fresh process shows but does not need a process per call (how deep Python's
parser gets depends on the stack a call starts with; a pytest worker's is deep) is run
here: the child imports gitevals once and calls ``cli.main`` for each argv at the depth
``python -m gitevals`` would, with its own stdout and stderr files, so each call is seen
as a separate ``python -m gitevals`` would be, for one start and one import of the
package instead of one per call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import GIT_ENV, Result

#: The child: argv lists as JSON on stdin, one [code, out, err] per call as JSON into the
#: file named by its first argument.
#: Each call gets fds 1 and 2 of its own (temporary files), as a process of its own would.
CHILD = """\
import json, os, sys, tempfile
from gitevals import cli


def one(argv):
    sys.stdout.flush(); sys.stderr.flush()
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    saved = [os.dup(1), os.dup(2)]
    os.dup2(files[0].fileno(), 1); os.dup2(files[1].fileno(), 2)
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(saved[0], 1); os.dup2(saved[1], 2)
    texts = []
    for f in files:
        f.seek(0)
        texts.append(f.read().decode("utf-8", "surrogateescape"))
    return [code, *texts]


done = [one(argv) for argv in json.loads(sys.stdin.read())]
with open(sys.argv[1], "w", encoding="utf-8") as report:
    json.dump(done, report)
"""


def run_cli_fresh(*calls: list[str], cwd: Path, timeout: float = 120) -> list[Result]:
    """Each argv of ``calls`` through the real CLI in one fresh child, in order; a
    Result per call, as ``run_cli(..., subprocess_=True)`` would give it."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        proc = subprocess.run([sys.executable, "-c", CHILD, str(report)], cwd=cwd,
                              input=json.dumps([list(c) for c in calls]), capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, **GIT_ENV})
        assert proc.returncode == 0 and not proc.stdout, (proc.returncode, proc.stderr)
        done = json.loads(report.read_text(encoding="utf-8"))
    return [Result(code, _text(o), _text(e)) for code, o, e in done]


def _text(text: str) -> str:
    """Universal newlines, as ``subprocess.run(text=True)`` gives a child's output."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
