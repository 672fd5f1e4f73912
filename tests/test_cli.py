from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_cli


def test_version(tmp_path: Path) -> None:
    r = run_cli("--version", cwd=tmp_path)
    assert r.code == 0 and r.out.startswith("gitevals ")


def test_unknown_command_is_usage_error(tmp_path: Path) -> None:
    r = run_cli("frobnicate", cwd=tmp_path)
    assert r.code == 2 and "invalid choice" in r.err and "Traceback" not in r.err
    assert r.err.count("\n") == 1


def test_chdir_to_missing_dir_is_one_line(tmp_path: Path) -> None:
    r = run_cli("-C", str(tmp_path / "nope"), "lint", cwd=tmp_path)
    assert r.code == 2
    assert r.err == f"gitevals: error: -C {tmp_path / 'nope'}: No such file or directory; " \
        "name an existing directory\n"


def test_lint_of_a_dir_without_an_eval_tree_says_how_to_start(tmp_path: Path) -> None:
    r = run_cli("lint", cwd=tmp_path)
    assert r.code == 0
    assert "gitevals init" in r.err


def test_revision_in_a_repo_without_commits(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    r = run_cli("lint", "--rev", "HEAD", cwd=tmp_path)
    assert r.code == 2
    assert r.err.strip() == ("gitevals: error: HEAD names no commit: this repository has no "
                             "commits yet; commit first")


def test_only_the_invoked_command_is_built() -> None:
    """A start builds the arguments of the command it runs, all of them only for help."""
    from gitevals.cli import _invoked, build_parser

    assert _invoked(["-C", "lint", "run", "--rev", "v1"]) == "run"
    assert _invoked(["-Cdir", "show"]) == "show"
    assert _invoked(["--help"]) is None and _invoked([]) is None
    one = build_parser("publish-check")
    assert one.parse_args(["publish-check", "--pre-push"]).pre_push
    assert "report" in build_parser().format_help()
    assert "report" not in one.format_help()


def test_an_unknown_flag_points_to_the_commands_help(tmp_path: Path) -> None:
    r = run_cli("run", "--no-such-flag", cwd=tmp_path)
    assert r.code == 2 and r.err == ("gitevals: error: unrecognized arguments: --no-such-flag; "
                                     "see `gitevals run --help`\n")


@pytest.mark.parametrize(("argv", "said"), [
    (("task", "compile", "sort-array", "--jsn"),
     "--jsn (did you mean --json?); see `gitevals task compile --help`"),
    (("goldens", "stats", "--bad"), "--bad; see `gitevals goldens stats --help`"),
    (("-C", "task", "task", "compile", "x", "--jsn", "--revv=v1"),
     "--jsn --revv=v1 (did you mean --json for --jsn, --rev for --revv?); "
     "see `gitevals task compile --help`"),
    (("show", "--trail", "a/b"), "--trail (did you mean --trial?); see `gitevals show --help`"),
], ids=["task-compile", "goldens-stats", "two-near", "show"])
def test_an_unknown_flag_of_a_subcommand_points_to_its_own_help(
        tmp_path: Path, argv: tuple[str, ...], said: str) -> None:
    (tmp_path / "task").mkdir()
    r = run_cli(*argv, cwd=tmp_path)
    assert r.code == 2 and r.out == ""
    assert r.err == f"gitevals: error: unrecognized arguments: {said}\n"


def test_the_program_ends_without_collecting_what_its_command_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `python -m gitevals` and the console script both end through `cli.entry`, which
    # freezes the collector's objects so the interpreter's exit does not walk them
    # (#27 item 4: a fifth of a one-case run's CPU went there).
    import gc
    import runpy
    import tomllib

    from gitevals import cli

    scripts = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert scripts["project"]["scripts"]["gitevals"] == "gitevals.cli:entry"
    from gitevals import commands

    monkeypatch.setattr(commands, "PROGRAM", False)  # put back after: the program sets it
    monkeypatch.setattr(cli, "_main", lambda: 3)
    try:
        with pytest.raises(SystemExit) as ended:
            runpy.run_module("gitevals", run_name="__main__")
        assert ended.value.code == 3
        assert commands.PROGRAM  # a run's start may freeze for good: the process ends
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_command_leaves_the_collector_as_the_caller_had_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], enabled: bool) -> None:
    import gc
    import subprocess

    from gitevals import cli
    from tests.conftest import GIT_ENV

    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "empty"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, env={**os.environ, **GIT_ENV})
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        code = cli.main(["-C", str(tmp_path), "show", "--all"])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    # it got as far as reading the runs (there are none), past where show turns it off
    assert code == 2 and "no run of HEAD" in capsys.readouterr().err


@pytest.mark.parametrize("closed, out_or_err", [("1", "err"), ("2", "out")])
def test_a_closed_standard_stream_is_written_to_nowhere_not_a_crash(
        tmp_path: Path, closed: str, out_or_err: str) -> None:
    """``gitevals lint >&-`` (or ``2>&-``, a caller that closed the stream): the command
    runs as on /dev/null, as git does, instead of an internal error on ``None.write``
    (printed to stdout when stderr was the closed one)."""
    import subprocess
    import sys

    from tests.conftest import GIT_ENV

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert run_cli("init", cwd=tmp_path).code == 0
    proc = subprocess.run(["sh", "-c", f'exec "$@" {closed}>&-', "sh", sys.executable, "-m",
                           "gitevals", "lint"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = {"out": proc.stdout, "err": proc.stderr}
    assert said[out_or_err] == ("2 files checked: no problems\n" if out_or_err == "out" else "")
