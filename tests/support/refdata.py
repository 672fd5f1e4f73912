"""Where the published reference data lives (``shared/data/``, read in place, never copied
into the repository), and one skip line naming the missing file when it is not there.

The data sits in ``shared/data/`` beside the repository, or beside a directory above it (a
git worktree one level further down still finds it). A plain clone has neither, and the
tests that need a file skip with one line naming it instead of failing, so the README's
test command passes there too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def find(name: str) -> Path | None:
    """``shared/data/<name>`` in the nearest directory above the repository that has it."""
    for above in ROOT.parents:
        path = above / "shared" / "data" / name
        if path.exists():
            return path
    return None


def why_missing(name: str) -> str:
    """The one skip line: which file is missing, where it was looked for, what to do."""
    return (f"../shared/data/{name} is missing (looked beside {ROOT} and the directories "
            "above it): the published reference data is not in this checkout; put it there "
            "to run this test")


def require(name: str) -> Path:
    """The path of ``shared/data/<name>``; skips the calling test when it is absent. A
    module that needs the file for every test skips itself at its top instead, so that the
    skip is one line naming that module::

        DATA = refdata.find(NAME)
        if DATA is None:
            pytest.skip(refdata.why_missing(NAME), allow_module_level=True)
    """
    path = find(name)
    if path is None:
        pytest.skip(why_missing(name))
    return path
