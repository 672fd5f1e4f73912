"""The bounds of every number a user gives, and the one line that refuses one past them.

The command line (``commands/_args.py``, argparse types) and the Python API
(``gitevals.api``'s option values, checked when one is made) read the same limits and
word a refusal the same way, so a notebook cannot ask for what ``gitevals run`` would
refuse (docs/run.md, "Bounds"). Each limit keeps a typo (an extra zero or three) from
building a work list, a pool or a bill no machine holds.
"""

from __future__ import annotations

import math

from gitevals.errors import UsageError

#: A scenario's trials, as a case file may set them (``run --trials``).
MAX_TRIALS = 10_000
#: A scenario's trials in a sequential run: its design is computed exactly.
MAX_SEQUENTIAL_TRIALS = 1_000
#: The looks (rounds) of a sequential run.
MAX_LOOKS = 100
#: Conversations, grader calls or processes at once (``--jobs``).
MAX_JOBS = 256
#: ``experiment --repeat``.
MAX_REPEAT = 10_000
#: ``experiment --max-samples``: conversations an experiment may plan.
MOST_SAMPLES = 1_000_000
#: Rows and commits a report lists (``--limit``, ``--static-transcripts``).
MAX_ROWS = 1_000_000
#: ``run --cost-limit``, in USD.
MAX_COST_LIMIT = 1_000_000.0
#: The bounds of ``--alpha``: below 1e-6 no trial count a run can afford reaches it (and
#: the exact tests' floats stop meaning anything); above 0.5 a "beyond noise" call is a
#: coin toss.
ALPHA_MIN, ALPHA_MAX = 1e-6, 0.5


def whole_problem(value: int, least: int, most: int, shown: str) -> str | None:
    """Why ``value`` (written ``shown``) is not a whole number from ``least`` to
    ``most``, or None."""
    if value < least:
        return f"{shown} must be {least} or more"
    if value > most:
        return f"{shown} is past the bound of {most:,}: give {least} to {most:,}"
    return None


def points_problem(value: float, shown: str) -> str | None:
    """Why ``value`` is not a number of percentage points above 0 and at most 100."""
    return None if 0 < value <= 100 else f"{shown} must be above 0 and at most 100 points"


def alpha_problem(value: float, shown: str) -> str | None:
    """Why ``value`` is not a test's level (``ALPHA_MIN`` to ``ALPHA_MAX``)."""
    if ALPHA_MIN <= value <= ALPHA_MAX:
        return None
    return f"{shown} must be from {ALPHA_MIN:g} to {ALPHA_MAX:g} (e.g. 0.05)"


def usd_problem(value: float, shown: str) -> str | None:
    """Why ``value`` is not a cost limit: above 0, at most ``MAX_COST_LIMIT`` USD."""
    if math.isfinite(value) and 0 < value <= MAX_COST_LIMIT:
        return None
    return f"{shown} must be above 0 and at most {MAX_COST_LIMIT:,.0f} USD"


# -- the API's side: a value handed in by a program, not typed on a command line ------------


def check_whole(where: str, value: object, least: int, most: int,
                optional: bool = True) -> None:
    """``UsageError`` (``where: <the command line's words>``) unless ``value`` is a whole
    number from ``least`` to ``most`` (or None, when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"{where}: {value!r} is not a whole number")
    _refuse(where, whole_problem(value, least, most, repr(value)))


def check_points(where: str, value: object, optional: bool = False) -> None:
    """``UsageError`` unless ``value`` is a number of points above 0 and at most 100."""
    if value is None and optional:
        return
    _refuse(where, points_problem(_real(where, value), repr(value)))


def check_alpha(where: str, value: object) -> None:
    """``UsageError`` unless ``value`` is None or a level from ``ALPHA_MIN`` to ``ALPHA_MAX``."""
    if value is not None:
        _refuse(where, alpha_problem(_real(where, value), repr(value)))


def check_usd(where: str, value: object) -> None:
    """``UsageError`` unless ``value`` is None or a cost limit in USD."""
    if value is not None:
        _refuse(where, usd_problem(_real(where, value), repr(value)))


def _real(where: str, value: object) -> float:
    """``value`` as a float; ``UsageError`` unless it is a real number (NaN fails every
    bound after)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise UsageError(f"{where}: {value!r} is not a number")
    return float(value)


def _refuse(where: str, problem: str | None) -> None:
    if problem is not None:
        raise UsageError(f"{where}: {problem}")
