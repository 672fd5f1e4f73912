"""A bug writes a log (issue 22, item 4): versions, the command line and the traceback in
a file of the cache directory whose path the one error line names, as pre-commit does."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from gitevals import __version__, cli
from gitevals.commands import show


def test_an_internal_error_names_a_bug_log_with_the_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ZeroDivisionError("a bug in show")

    monkeypatch.setattr(show, "run", broken)
    monkeypatch.delenv("GITEVALS_TRACEBACK", raising=False)
    code = cli.main(["show", "HEAD"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    found = re.search(r"the traceback and versions are in (\S+);", err)
    assert err.startswith("gitevals: internal error: ZeroDivisionError: a bug in show (")
    assert found, err
    log = Path(found.group(1))
    assert log.parent == Path(os.environ["XDG_CACHE_HOME"]) / "gitevals" / "bugs"
    text = log.read_text()
    assert text.startswith(f"gitevals {__version__}\npython ")
    assert "argv: 'show' 'HEAD'" in text
    assert "Traceback (most recent call last)" in text and "a bug in show" in text
    assert log.stat().st_mode & 0o077 == 0  # the command line may hold private names


def test_an_unwritable_cache_still_gives_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise KeyError("x")

    monkeypatch.setattr(show, "run", broken)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert cli.main(["show", "HEAD"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set GITEVALS_TRACEBACK=1 to see where" in err
