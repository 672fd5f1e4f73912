"""Training rows that hold a golden: by its ``id``, or by the same input once normalized.

``normalize`` is the one normalization, applied to both sides: NFKC (composed accents,
fullwidth and other compatibility forms become their plain letters), Unicode format
characters (category Cf: zero-width spaces and joiners, soft hyphens, bidi marks)
removed, case folded, every run of characters that are not letters or digits
(whitespace, punctuation, symbols, ``_``) made one space, ends stripped. Ids compare as
text (NFKC, format characters removed) and, when they read as a number, as that number
(``7``, ``7.0`` and ``"7.0"`` are one id). A value that is not a string becomes text first
(``text_of``): a list of turns is its turns one a line; a chat transcript (messages
with a ``role``) is its user turns, which is what a golden's ``input`` holds.

The training side is streamed (``scan`` takes an iterable of lines: a file opened in
binary, read a buffered line at a time), so its memory does not grow with the file;
only the goldens are held, as two dicts. A line that does not read as a JSON object
is reported with its number and the scan goes on. ``benchmarks/bench_leak.py``
measures both claims (time against a bare ``json.loads`` loop, peak RSS at 1 M and
4 M rows).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from gitevals.jsontypes import JSON, JSONObject

_NOT_WORD = re.compile(r"[\W_]+")
#: ``normalize`` for ASCII text, byte by byte: digits and lower-case letters kept, upper
#: case lowered, everything else a space. Several times faster than the regex on the
#: text a training file mostly holds (benchmarks/bench_leak.py); same result.
_ASCII = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32
               for c in range(256))


def normalize(text: str) -> str:
    """``text`` as leak checks compare it: NFKC, format characters removed, casefolded,
    punctuation and whitespace runs one space, trimmed (``"  Hello,   World!"`` ->
    ``"hello world"``). ASCII text is already NFKC and holds no format character."""
    if text.isascii():
        return _key(text).decode()
    return _NOT_WORD.sub(" ", _plain(text).casefold()).strip()


def _plain(text: str) -> str:
    """``text`` in NFKC without format characters: what a disguised copy (decomposed
    accents, fullwidth letters, a zero-width space inside a word) reads as. NFKC again
    after the removal, since a removed joiner may leave two parts that compose."""
    text = unicodedata.normalize("NFKC", text)
    if any(unicodedata.category(c) == "Cf" for c in text):
        text = unicodedata.normalize(
            "NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf"))
    return text


def _key(text: str) -> bytes:
    """``normalize(text)`` as UTF-8, the form the index keeps (ASCII text never becomes
    a str again: one allocation less per training row)."""
    if text.isascii():
        return b" ".join(text.encode().translate(_ASCII).split())
    return normalize(text).encode()


def text_of(value: JSON) -> str:
    """The text of an input: a string as is; turns one a line; a chat transcript's user
    turns; a message's ``content`` (or ``text``); anything else as JSON."""
    if type(value) is str:
        return value
    if isinstance(value, list):
        if any(isinstance(v, dict) and "role" in v for v in value):
            value = [v for v in value if isinstance(v, dict) and v.get("role") == "user"]
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("content", "text"):
            if key in value:
                return text_of(value[key])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def id_key(value: JSON) -> str:
    """An id as lint compares ids: a string as is, anything else as its JSON."""
    return value if type(value) is str else json.dumps(value, sort_keys=True)


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def id_keys(value: JSON) -> tuple[str, ...]:
    """The keys an id is looked up by: as text (NFKC, format characters removed) and,
    when it reads as a finite number, as that number (``7``, ``7.0``, ``"7.0"``, ``"７"``
    -> ``"7"``), so a renumbered copy of a golden id is still caught."""
    if type(value) is str:
        text = value if value.isascii() else _plain(value).strip()
    elif type(value) in (int, float):
        text = repr(value)
    else:
        return (id_key(value),)
    keys = [text] if type(value) is str else []
    if text[:1] in _NUMERIC_START and _NUMBER.fullmatch(text):
        keys.append(_number_key(text))
    return tuple(dict.fromkeys(keys)) or (id_key(value),)


_NUMERIC_START = frozenset("0123456789+-.")


def _lookup(ids: dict[str, int], id_: JSON) -> int | None:
    """The line of the golden whose id matches ``id_`` by any of its keys, or None."""
    return next((hit for k in id_keys(id_) if (hit := ids.get(k)) is not None), None)


def _number_key(text: str) -> str:
    """The canonical text of a decimal number: an integral value as an integer."""
    try:
        x = float(text)
    except (ValueError, OverflowError):
        return text
    if not math.isfinite(x):
        return text
    if x == int(x):
        return str(int(x)) if abs(x) < 2**63 else repr(x)
    return repr(x)


@dataclass(frozen=True)
class Golden:
    """Where a golden is: its id (as written), line in goldens.jsonl, and split."""

    id: str
    line: int
    split: str | None


@dataclass(frozen=True)
class Index:
    """The goldens as a scan looks them up: line by id key, line by normalized input,
    and (id, split) by line (a ``Golden`` is made only for a hit: 100,000 of them would
    cost more than the lookups, benchmarks/bench_leak.py)."""

    ids: dict[str, int]
    inputs: dict[bytes, int]
    rows: dict[int, tuple[str, str | None]]

    @property
    def size(self) -> int:
        return len(self.ids)

    def golden(self, line: int) -> Golden:
        id_, split = self.rows[line]
        return Golden(id_, line, split)


def index_goldens(data: bytes) -> Index:
    """The index of a goldens file (rows without a usable id are left out: lint says why)."""
    ids: dict[str, int] = {}
    inputs: dict[bytes, int] = {}
    rows: dict[int, tuple[str, str | None]] = {}
    for n, line in enumerate(data.split(b"\n"), 1):
        try:
            row: JSON = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if type(row) is not dict or type(row.get("id")) not in (str, int):
            continue
        split = row.get("split")
        rows[n] = (str(row["id"]), split if type(split) is str else None)
        for k in id_keys(row["id"]):
            ids.setdefault(k, n)
        if row.get("input") is not None:
            norm = _key(text_of(row["input"]))
            if norm:
                inputs.setdefault(norm, n)
    return Index(ids, inputs, rows)


@dataclass(frozen=True)
class Leak:
    """A training row at ``path:line`` holding a golden: ``by`` ``"id"`` or ``"input"``."""

    path: str
    line: int
    by: str
    golden: Golden

    def as_dict(self) -> JSONObject:
        return {"path": self.path, "line": self.line, "by": self.by,
                "golden_id": self.golden.id, "golden_line": self.golden.line,
                "split": self.golden.split}


@dataclass(frozen=True)
class Unreadable:
    """A training line that is not a JSON object: not checked, and said so."""

    path: str
    line: int
    why: str

    def as_dict(self) -> JSONObject:
        return {"path": self.path, "line": self.line, "why": self.why}


class Lines(NamedTuple):
    """How much of a training file a scan read: lines, and rows that had the field."""

    read: int
    with_field: int


#: The longest training line read (bytes): a longer one is cut there by ``bounded`` and
#: reported unreadable, so one giant line cannot take the memory a stream saves.
MAX_LINE = 16 << 20


def bounded(f: BinaryIO, limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of ``f``, each at most ``limit`` bytes: the rest of a longer line is
    read and dropped (its prefix, which never parses, is reported by ``scan``)."""
    readline = f.readline
    while line := readline(limit):
        yield line
        if len(line) == limit and not line.endswith(b"\n"):
            while (rest := readline(limit)) and not rest.endswith(b"\n"):
                pass


def scan(lines: Iterable[bytes], path: str, index: Index, field: str = "input"
         ) -> Iterator[Leak | Unreadable | Lines]:
    """Every leak and unreadable line of one training file, in line order; last, the
    number of lines read and of rows that had ``field``. Pure over the lines given (they
    may come from a stream)."""
    ids, inputs = index.ids, index.inputs
    loads, key = json.loads, _key
    n = seen = 0
    for n, line in enumerate(lines, 1):
        try:
            row = loads(line)
        except (ValueError, RecursionError) as exc:
            if len(line) >= MAX_LINE and not line.endswith(b"\n"):
                yield Unreadable(path, n, f"longer than {MAX_LINE >> 20} MiB")
            elif line.strip():
                yield Unreadable(path, n, _why(exc))
            continue
        if type(row) is not dict:
            yield Unreadable(path, n, f"{_kind(row)}, not a JSON object")
            continue
        id_ = row.get("id")
        if id_ is not None:
            hit = ids.get(id_) if type(id_) is str else None
            # Most training ids are plain text that is no number: one lookup is enough.
            if hit is None and (type(id_) is not str or id_[:1] in _NUMERIC_START
                                or not id_.isascii()):
                hit = _lookup(ids, id_)
            if hit is not None:
                yield Leak(path, n, "id", index.golden(hit))
                continue
        value = row.get(field)
        if value is not None:
            seen += 1
            hit = inputs.get(key(value if type(value) is str else text_of(value)))
            if hit is not None:
                yield Leak(path, n, "input", index.golden(hit))
    yield Lines(n, seen)


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, RecursionError):
        return "nested too deep to read"
    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return f"not valid JSON ({msg})"


def _kind(row: JSON) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(row), "a number")
