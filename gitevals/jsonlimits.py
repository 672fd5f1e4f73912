"""What JSON gitevals can hold: bounded nesting, no lone surrogates, finite numbers.

Valid JSON can still break a reader: a value nested 100,000 deep makes ``json.loads``
raise ``RecursionError`` (and one nested 500 deep makes ``json.dumps`` and every
recursive walk after it fragile); ``"\\ud800"`` decodes to a string no UTF-8 file or
terminal can take; ``1e400`` decodes to infinity and a 5,000-digit integer past
Python's ``int_max_str_digits`` does not decode at all. Lint (``lint/goldens.py``)
reports such a row, and diff (``diff/goldens.py``) shows it as unparsable, with the
same words: :func:`loads` and :func:`problem` are the one answer.
"""

from __future__ import annotations

import json
import math
import re

from gitevals.jsontypes import JSON

#: Deepest nesting a row may have (what run artifacts allow for replies, too).
MAX_DEPTH = 200

#: ``problem`` kinds, each with the words a message ends with.
DEEP, SURROGATE, NUMBER, CONSTANT = "deep", "surrogate", "number", "constant"
ADVICE = {
    DEEP: f"it is nested more than {MAX_DEPTH} levels deep; flatten it",
    SURROGATE: "it holds a lone UTF-16 surrogate (\\ud800-\\udfff), which UTF-8 cannot "
               "hold; write the character itself or a valid surrogate pair",
    NUMBER: "it holds a number too large to read or hold (an integer past 4,300 digits, a "
            "float past 1.8e308); write it as a string",
    CONSTANT: "it holds NaN or Infinity, which is not JSON (no number is not a number); "
              "write a finite number, or the value as a string",
}

_SURROGATE = re.compile("[\ud800-\udfff]")


class Unholdable(ValueError):
    """A line that is JSON (or nearly) but not JSON gitevals can hold; ``kind`` says why."""

    def __init__(self, kind: str) -> None:
        super().__init__(ADVICE[kind])
        self.kind = kind


def loads(text: str | bytes) -> JSON:
    """``json.loads`` that raises ``ValueError`` for anything it cannot hold:
    ``Unholdable`` for the cases above, ``JSONDecodeError`` for bad JSON."""
    try:
        value: JSON = json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise Unholdable(DEEP) from None
    except ValueError as exc:
        if "int_max_str_digits" in str(exc) or "Exceeds the limit" in str(exc):
            raise Unholdable(NUMBER) from None
        raise
    kind = problem(value)
    if kind is not None:
        raise Unholdable(kind)
    return value


def _constant(name: str) -> float:
    """``NaN``/``Infinity`` written as such: Python's json reads them, JSON has none."""
    raise Unholdable(CONSTANT)


def problem(value: object) -> str | None:
    """Why a parsed value cannot be held (a kind of ``ADVICE``), or None. Iterative:
    a value at the edge of what ``json.loads`` returns costs a walk, never a
    ``RecursionError``."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return SURROGATE
        elif isinstance(item, float):
            if not math.isfinite(item):
                return NUMBER
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return DEEP
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                stack.append((key, depth))
                stack.append((child, depth + 1))
    return None
