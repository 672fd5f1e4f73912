"""JSON lines -> rows with their line numbers; a row's input as the turns of a conversation.

Lint reports every line that is not a JSON object (``gitevals.lint.goldens``); here
such lines are skipped, so readers of a linted file see every row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from gitevals.jsontypes import JSON, JSONObject


def rows(data: bytes) -> Iterator[tuple[int, JSONObject]]:
    """``(line number, row)`` of every line of ``data`` that is a JSON object."""
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            yield n, row


def turns(row: JSONObject) -> tuple[str, ...] | None:
    """The user turns a row's ``input`` holds: a string is one turn, a non-empty list of
    strings is one turn each; anything else is None (the row cannot be sent)."""
    value: JSON = row.get("input")
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
        return tuple(str(t) for t in value)
    return None


def row_id(row: JSONObject, line: int) -> str:
    """A row's id as text (``7`` and ``"7"`` are one id, as lint says); ``L<line>`` for a
    benchmark row without one."""
    value = row.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return f"L{line}"
    return str(value)


def bucket(row: JSONObject) -> str | None:
    """The row's bucket, or None when it has none (or not a non-empty string)."""
    value = row.get("bucket")
    return value if isinstance(value, str) and value else None
