"""Task directories written for tests (in a test's own temporary repository)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

GOOD_TOML = ('version = "1.0"\n'
             "\n"
             "[agent]\n"
             "timeout_sec = 60.0\n"
             "[verifier]\n"
             "timeout_sec = 30.0\n"
             "\n"
             "[environment]\n"
             "cpus = 1\n"
             "memory_mb = 2048\n")
TEST_SH = "#!/bin/bash\necho 1.0 > /logs/verifier/reward.txt\n"
DOCKERFILE = "FROM python:3.12-slim\nWORKDIR /app\n"
#: A reference solution: without one lint warns (GE913).
SOLVE_SH = "#!/bin/bash\ntrue\n"

Extra = Mapping[str, "str | bytes | Callable[[Path], None] | None"]


def write_task(d: Path, toml: str, instruction: str | bytes | None,
               extra: Extra | None = None) -> None:
    """A task directory at ``d``: task.toml (unless empty), instruction.md (unless None),
    tests/test.sh and environment/Dockerfile, then ``extra``: a path -> content (None
    removes the file), or a callable making something (a link, a FIFO) in ``d``."""
    d.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | bytes | None] = {"tests/test.sh": TEST_SH,
                                            "environment/Dockerfile": DOCKERFILE,
                                            "solution/solve.sh": SOLVE_SH}
    if toml:
        files["task.toml"] = toml
    if instruction is not None:
        files["instruction.md"] = instruction
    makers = []
    for rel, content in (extra or {}).items():
        if callable(content):
            makers.append(content)
        else:
            files[rel] = content
    for rel, data in files.items():
        if data is None:
            continue
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data, encoding="utf-8")
    for make in makers:
        make(d)
