"""``goldens.jsonl``: one JSON object a line, valid against ``schemas/golden.schema.json``,
with an ``id`` present and unique.

Blank (whitespace-only) lines hold no row and are allowed. Codes:

- GE601 not UTF-8                        - GE604 no ``id``
- GE602 a line that is not valid JSON    - GE605 a schema violation (``label`` not a string...)
- GE603 a line that is not an object     - GE606 an ``id`` already used on an earlier line
- GE607 nested too deep to hold         - GE608 a lone UTF-16 surrogate
- GE609 a number too large to read or hold (``gitevals.jsonlimits`` says why)

Speed matters (200,000 rows must lint in well under a second): each line goes
through ``json.loads`` and the schema's quick check (:func:`fast_check`); only rows
that check rejects ask the full validator why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NoReturn

from gitevals import jsonlimits
from gitevals.findings import Finding
from gitevals.jsontypes import JSON, JSONObject

SCHEMA = "golden"


def lint_goldens(data: bytes, path: str) -> list[Finding]:
    """Every finding of one goldens file (pure: bytes in, findings out)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        lineno = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        return [Finding(path, lineno, col, "GE601", f"not UTF-8 (byte 0x{data[exc.start]:02x}); "
                        "save goldens.jsonl as UTF-8")]
    loads: Callable[[str], JSON] = (
        _strict_loads if ("NaN" in text or "Infinity" in text) else _finite_loads)
    check = fast_check()
    out: list[Finding] = []
    seen: dict[str, int] = {}  # id (a string id as is, any other as JSON) -> first line
    setdefault = seen.setdefault
    # Rows gitevals cannot hold (jsonlimits) are walked only where they can be: a line
    # with a surrogate escape, or long enough to nest deep (floats past 1.8e308 are
    # refused as they are read, long integers by json itself).
    for n, line in enumerate(text.split("\n"), 1):
        try:
            row: JSON = loads(line)
        except RecursionError:
            out.append(_unholdable(path, n, line, jsonlimits.DEEP))
            continue
        except ValueError as exc:
            if line and not line.isspace():  # a blank line holds no row: allowed
                out.append(_bad_json(path, n, line, exc))
            continue
        if (len(line) > _DEEP_LINE or "\\ud" in line or "\\uD" in line) \
                and jsonlimits.problem(row) is not None:
            out.append(_unholdable(path, n, line, jsonlimits.problem(row) or ""))
            continue
        if type(row) is dict and check(row):  # the common case, kept lean
            id_ = row["id"]
            if setdefault(id_ if type(id_) is str else _id_key(id_), n) != n:
                out.append(_duplicate(path, n, line, id_, seen))
            continue
        out.extend(_explain(path, n, line, row))
        if type(row) is dict and "id" in row:
            id_ = row["id"]
            if setdefault(id_ if type(id_) is str else _id_key(id_), n) != n:
                out.append(_duplicate(path, n, line, id_, seen))
    return out


#: A line shorter than this cannot nest past ``jsonlimits.MAX_DEPTH``.
_DEEP_LINE = 2 * jsonlimits.MAX_DEPTH
#: jsonlimits' kinds as codes.
CODES = {jsonlimits.DEEP: "GE607", jsonlimits.SURROGATE: "GE608", jsonlimits.NUMBER: "GE609"}


def _unholdable(path: str, n: int, line: str, kind: str) -> Finding:
    return Finding(path, n, _first_col(line), CODES[kind],
                   f"row cannot be read: {jsonlimits.ADVICE[kind]}")


def _id_key(id_: JSON) -> str:
    # 7 and "7" are the same id to a reader of the diff: refuse both spellings.
    return json.dumps(id_, sort_keys=True)


def _duplicate(path: str, n: int, line: str, id_: JSON, seen: dict[str, int]) -> Finding:
    first = seen[id_ if type(id_) is str else _id_key(id_)]
    return Finding(path, n, _key_col(line, "id"), "GE606",
                   f"duplicate id {_show(id_)}: also on line {first} (and here, line {n}); "
                   "ids are never reused, give this row a new one")


def _bad_json(path: str, n: int, line: str, exc: ValueError) -> Finding:
    col = exc.colno if isinstance(exc, json.JSONDecodeError) else 1
    if isinstance(exc, _Constant):
        # Outside any string, as the decoder only calls back for a bare constant.
        col = _bare_constant_col(line, exc.name)
    if isinstance(exc, jsonlimits.Unholdable):
        return _unholdable(path, n, line, exc.kind)
    if "Exceeds the limit" in str(exc):  # a long integer past int_max_str_digits
        return _unholdable(path, n, line, jsonlimits.NUMBER)
    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return Finding(path, n, col, "GE602", f"not valid JSON: {msg}; each line is one JSON object")


def _explain(path: str, n: int, line: str, row: JSON) -> list[Finding]:
    if type(row) is not dict:
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(row), "a number")
        return [Finding(path, n, _first_col(line), "GE603",
                        f"line is {kind}, not a JSON object; write {{\"id\": ..., ...}}")]
    if "id" not in row:
        return [Finding(path, n, _first_col(line), "GE604",
                        'row has no "id"; give every golden a unique, never-reused id')]
    from gitevals.schema import validate

    return [Finding(path, n, _key_col(line, str(e.path[0])) if e.path else _first_col(line),
                    "GE605", f"{e.message} (golden schema)")
            for e in validate(SCHEMA, row)]


def _bare_constant_col(line: str, name: str) -> int:
    at = line.find(": " + name)
    at = at + 2 if at >= 0 else line.find(name)
    return at + 1 if at >= 0 else 1


def _first_col(line: str) -> int:
    return len(line) - len(line.lstrip()) + 1


def _key_col(line: str, key: str) -> int:
    """Column of ``"key"`` in the line (best effort: JSON keeps no positions)."""
    at = line.find(json.dumps(key) + ":")
    if at < 0:
        at = line.find(json.dumps(key))
    return at + 1 if at >= 0 else _first_col(line)


def _show(value: JSON) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not JSON (write null or a number)")
        self.name = name


def _refuse_constant(name: str) -> NoReturn:
    raise _Constant(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf (NaN is a constant, refused on its own)
        raise jsonlimits.Unholdable(jsonlimits.NUMBER)
    return value


_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_FINITE = json.JSONDecoder(parse_float=_finite_float)


def _finite_loads(line: str) -> JSON:
    row: JSON = _FINITE.decode(line)
    return row


def _strict_loads(line: str) -> JSON:
    row: JSON = _STRICT.decode(line)
    return row


def fast_check() -> Callable[[JSONObject], bool]:
    """The golden schema's quick check: accepts a row only if the schema does (a row
    it refuses may still be valid: the full validator decides)."""
    from gitevals.validation import quick_check

    return quick_check(SCHEMA)
