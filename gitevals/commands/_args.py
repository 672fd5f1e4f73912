"""Argument types shared by the commands: one line of argparse error per bad value."""

from __future__ import annotations

import argparse
from collections.abc import Callable

#: The bounds live in ``gitevals.bounds``, which the API checks its values against too.
from gitevals.bounds import (
    MAX_JOBS,
    MAX_ROWS,
    alpha_problem,
    points_problem,
    whole_problem,
)


def positive(text: str) -> int:
    """A whole number of at least 1 (at most ``MAX_ROWS``)."""
    return _whole(text, 1, MAX_ROWS)


def _whole(text: str, least: int, most: int) -> int:
    shown = repr(text if len(text) <= 24 else f"{text[:20]}…")
    try:
        value = int(text)
    except ValueError:
        digits = text.strip().removeprefix("+")
        if not (digits.isascii() and digits.isdigit()):
            raise argparse.ArgumentTypeError(f"{shown} is not a whole number") from None
        value = most + 1  # more digits than Python converts: past any bound
    problem = whole_problem(value, least, most, shown)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def count(most: int, least: int = 1) -> Callable[[str], int]:
    """The argparse type of a whole number from ``least`` to ``most``."""
    def parse(text: str) -> int:
        return _whole(text, least, most)

    return parse


def _number(text: str, what: str = "a number") -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def points(text: str) -> float:
    """Percentage points: above 0, at most 100."""
    value = _number(text, "a number of points")
    problem = points_problem(value, repr(text))
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def level(text: str) -> float:
    """A probability strictly between 0 and 1 (a level, a power)."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def rate(text: str) -> float:
    """A pass rate: 0 to 1, both included."""
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def alpha(text: str) -> float:
    """A test's level: from 1e-6 to 0.5."""
    value = _number(text)
    problem = alpha_problem(value, repr(text))
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def add_control(parser: argparse._ActionsContainer, what: str) -> None:
    """``--control`` and ``--alpha``, defaulting to ``[tool.gitevals.statistics]``."""
    parser.add_argument("--control", choices=("fdr", "fwer", "none"), default=None,
                        help=f"multiple-comparison control across {what}: fdr "
                             "(Benjamini-Hochberg, the default), fwer (Holm) or none; "
                             "default from [tool.gitevals.statistics] control")
    parser.add_argument("--alpha", type=alpha, default=None, metavar="A",
                        help="the level: an unchanged harness is called regressed in at most "
                             "this share of comparisons (1e-6 to 0.5; default 0.05, or "
                             "[tool.gitevals.statistics] alpha)")


# -- options many commands share: one declaration each -------------------------------------


def add_format(parser: argparse._ActionsContainer, choices: tuple[str, ...],
               help: str | None = None, required: bool = False) -> None:
    """``--format`` (default text, unless ``required``): the document a command writes."""
    if required:
        parser.add_argument("--format", choices=choices, required=True, help=help)
    else:
        parser.add_argument("--format", choices=choices, default="text", help=help)


def add_rev(parser: argparse._ActionsContainer, help: str, default: str | None = None,
            metavar: str = "REV") -> None:
    """``--rev``: the revision a command reads (``default`` None: the working tree)."""
    parser.add_argument("--rev", default=default, metavar=metavar, help=help)


#: diff's exact tests on pass counts and its default (``gitevals.diff.stats``'s, written
#: here: importing gitevals.diff at every start costs ~40 ms; tests/test_shared_options.py
#: checks they agree).
TESTS = ("boschloo", "fisher")
DEFAULT_TEST = "boschloo"


def add_test(parser: argparse._ActionsContainer, help: str) -> None:
    """``--test``: the two-sided exact test on pass counts, as ``diff`` runs it."""
    parser.add_argument("--test", choices=TESTS, default=DEFAULT_TEST, help=help)


def add_jobs(parser: argparse._ActionsContainer, help: str, default: int | None = None,
             least: int = 1, short: bool = True) -> None:
    """``--jobs N`` (``-j``), bounded by ``MAX_JOBS``: how much runs at once."""
    flags = ("--jobs", "-j") if short else ("--jobs",)
    parser.add_argument(*flags, type=count(MAX_JOBS, least=least), default=default,
                        metavar="N", help=help)
