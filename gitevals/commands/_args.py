"""Argument types shared by the commands: one line of argparse error per bad value."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return value


def _number(text: str, what: str = "a number") -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def points(text: str) -> float:
    """Percentage points: above 0, at most 100."""
    value = _number(text, "a number of points")
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0 and at most 100 points")
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
