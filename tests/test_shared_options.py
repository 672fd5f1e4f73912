"""``--format``, ``--rev``, ``--jobs`` and ``--test`` are declared once (``commands/_args.py``): a
command that declares one by hand would drift from the others' bounds and spelling."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from gitevals.bounds import MAX_JOBS
from gitevals.commands._args import (
    DEFAULT_TEST,
    TESTS,
    add_format,
    add_jobs,
    add_rev,
    add_test,
)

COMMANDS = Path(__file__).resolve().parents[1] / "gitevals" / "commands"
SHARED = ("--format", "--rev", "--jobs", "--test")


def test_no_command_declares_a_shared_option_by_hand() -> None:
    found = [f"{path.name}:{node.lineno} {node.args[0].value}"
             for path in sorted(COMMANDS.glob("*.py")) if path.name != "_args.py"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "add_argument" and node.args
             and isinstance(node.args[0], ast.Constant) and node.args[0].value in SHARED]
    assert not found, f"declare these with add_format / add_rev / add_jobs / add_test: {found}"


def test_the_adders_bound_and_default_as_declared() -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_format(parser, ("text", "json"))
    add_rev(parser, "the revision", default="HEAD")
    add_jobs(parser, "at once")
    args = parser.parse_args(["-j", "3"])
    assert (args.format, args.rev, args.jobs) == ("text", "HEAD", 3)
    for bad in (["--jobs", "0"], ["--jobs", str(MAX_JOBS + 1)], ["--format", "xml"]):
        with pytest.raises((argparse.ArgumentError, SystemExit)):
            parser.parse_args(bad)


def test_the_test_adder_offers_diffs_tests() -> None:
    """``--test`` is written out (no gitevals.diff import at start-up): it must offer
    exactly the tests diff runs, with its default."""
    from gitevals.diff import stats

    assert (TESTS, DEFAULT_TEST) == (stats.TESTS, stats.DEFAULT_TEST)
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_test(parser, "the test")
    assert parser.parse_args([]).test == DEFAULT_TEST
    assert parser.parse_args(["--test", "fisher"]).test == "fisher"
