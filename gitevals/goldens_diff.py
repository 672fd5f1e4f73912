"""goldens.jsonl at A vs at B, keyed by ``id``: fast because only differing lines are parsed.

A golden set is large (hundreds of thousands of lines) and changes little between
two revisions, so parsing every line would cost far more than reading the blobs.
``diff_goldens`` instead:

1. splits both blobs into lines and walks them in step, skipping equal runs a
   block at a time (list slices compare in C) and re-synchronising after an edit
   within a small window; every line it cannot pair with an identical line on the
   other side is "differing" -- an imperfect resync only makes more lines differ,
   never hides a change, because differing lines are paired again by id below;
2. parses only the differing lines (json), pairs them by id: same id on both
   sides -> changed (field by field) or unchanged (moved, reformatted), one side
   only -> removed / added;
3. finds duplicate ids over *all* lines with one regex pass over each blob that
   reads the leading ``{"id": ...`` of every line (C speed, no JSON parse); a
   line that does not start that way has its id read by a full parse instead.

A line that is byte-identical on both sides is not a change and is not parsed:
whether such a line is valid JSON is the linter's question, not the diff's.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_LEAD_ID = re.compile(rb'\n\{"id": ?("[^"\\\n]*"|-?\d+)[,}]')
_LINE_ID = re.compile(rb'\{\s*"id"\s*:\s*("[^"\\\n]*"|-?\d+)\s*[,}]')
_BLOCK = 16      # first slice compared while skipping an equal run (then doubled)
_NEAR = 3        # edits this close are found by direct compares, before any hashing
_WINDOW = 64     # lines looked ahead on each side to re-synchronise after an edit


@dataclass(frozen=True)
class FieldChange:
    """One top-level field of a changed item; ``None`` side = field absent there."""

    field: str
    before: Any
    after: Any
    absent_before: bool = False
    absent_after: bool = False


@dataclass(frozen=True)
class GoldenChange:
    """An added, removed or changed item. Line numbers are 1-based, None on the missing side."""

    id: str
    kind: str  # "added" | "removed" | "changed"
    bucket: str | None
    line_a: int | None
    line_b: int | None
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class GoldensProblem:
    """A line that does not parse, or an id held by more than one line, on side a or b."""

    side: str
    lines: tuple[int, ...]
    kind: str  # "unparsable" | "duplicate-id"
    message: str


@dataclass(frozen=True)
class BucketCount:
    bucket: str
    added: int = 0
    removed: int = 0
    changed: int = 0


@dataclass(frozen=True)
class GoldensDiff:
    path_a: str | None
    path_b: str | None
    changes: tuple[GoldenChange, ...] = ()
    buckets: tuple[BucketCount, ...] = ()
    problems: tuple[GoldensProblem, ...] = ()
    lines_parsed: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)


# -- 1. lines that differ ---------------------------------------------------


def _split(blob: bytes) -> list[bytes]:
    lines = blob.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _equal_run(la: list[bytes], lb: list[bytes], i: int, j: int) -> int:
    """How many lines from (i, j) are equal on both sides (galloping slice compares)."""
    start, step = i, _BLOCK
    while True:
        n = min(step, len(la) - i, len(lb) - j)
        if n <= 0:
            break
        if la[i:i + n] == lb[j:j + n]:
            i, j = i + n, j + n
            step = n * 2
        elif n == 1:
            break
        else:
            step = n // 2
    return i - start


def _near(la: list[bytes], lb: list[bytes], i: int, j: int) -> tuple[int, int] | None:
    """The closest equal pair within _NEAR lines (one edited, inserted or deleted line)."""
    for s in range(1, 2 * _NEAR + 1):
        for da in sorted(range(max(0, s - _NEAR), min(s, _NEAR) + 1), key=lambda d: abs(2 * d - s)):
            ia, jb = i + da, j + s - da
            if ia < len(la) and jb < len(lb) and la[ia] == lb[jb]:
                return ia, jb
    return None


def _resync(la: list[bytes], lb: list[bytes], i: int, j: int) -> tuple[int, int]:
    """The nearest (i', j') at or after (i, j) where both sides hold the same line."""
    near = _near(la, lb, i, j)
    if near is not None:
        return near
    wa = {line: k for k, line in reversed(list(enumerate(la[i:i + _WINDOW], i)))}
    wb = {line: k for k, line in reversed(list(enumerate(lb[j:j + _WINDOW], j)))}
    for d in range(_WINDOW):
        if i + d < len(la):
            k = wb.get(la[i + d])
            if k is not None and k - j <= d:
                return i + d, k
        if j + d < len(lb):
            k = wa.get(lb[j + d])
            if k is not None and k - i <= d:
                return k, j + d
    return min(i + _WINDOW, len(la)), min(j + _WINDOW, len(lb))


def differing_lines(
    la: list[bytes], lb: list[bytes]
) -> tuple[list[int], list[int]]:
    """0-based indexes of lines of ``la`` and of ``lb`` not paired with an equal line."""
    only_a: list[int] = []
    only_b: list[int] = []
    i = j = 0
    while i < len(la) and j < len(lb):
        run = _equal_run(la, lb, i, j)
        i, j = i + run, j + run
        if i >= len(la) or j >= len(lb):
            break
        ni, nj = _resync(la, lb, i, j)
        only_a.extend(range(i, ni))
        only_b.extend(range(j, nj))
        i, j = ni, nj
    only_a.extend(range(i, len(la)))
    only_b.extend(range(j, len(lb)))
    return only_a, only_b


# -- 2. ids -------------------------------------------------------------------


def _key(value: Any) -> bytes:
    """The id's identity: its JSON text (the same bytes the fast scan reads)."""
    return json.dumps(value, ensure_ascii=False).encode()


def _display(key: bytes) -> str:
    value = json.loads(key)
    return value if isinstance(value, str) else key.decode()


def _line_id(line: bytes) -> bytes | None:
    m = _LINE_ID.match(line.lstrip())
    if m:
        return m.group(1)
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return _key(obj["id"]) if isinstance(obj, dict) and "id" in obj else None


def _all_ids(blob: bytes, lines: list[bytes]) -> list[bytes | None]:
    """The id of every line (None for blank or id-less lines), fast when lines lead with it."""
    if not lines:
        return []
    first = _line_id(lines[0])
    rest = _LEAD_ID.findall(blob)  # lines 2..n that start with {"id": ...
    if first is not None and len(rest) == len(lines) - 1:
        return [first, *rest]
    return [_line_id(line) if line.strip() else None for line in lines]


def _duplicates(side: str, ids: list[bytes | None]) -> list[GoldensProblem]:
    counts = Counter(ids)
    counts.pop(None, None)
    dup = {k for k, n in counts.items() if n > 1}
    if not dup:
        return []
    where: dict[bytes, list[int]] = {}
    for n, key in enumerate(ids, 1):
        if key is not None and key in dup:
            where.setdefault(key, []).append(n)
    return [
        GoldensProblem(side, tuple(ns), "duplicate-id",
                       f"id {_display(k)!r} is held by {len(ns)} lines; ids are unique: "
                       "give each item its own id")
        for k, ns in sorted(where.items(), key=lambda kv: kv[1][0])
    ]


def _has_duplicates(ids: list[bytes | None]) -> bool:
    present = [k for k in ids if k is not None] if None in ids else ids
    return len(set(present)) != len(present)


def _a_may_have_duplicates(ids_b: list[bytes | None], la: list[bytes], only_a: list[int],
                           only_b: list[int]) -> bool:
    """Whether A can hold a duplicate id, knowing B holds none.

    A = (B minus its differing lines) + A's differing lines, and the shared lines
    are identical, so only A's differing ids need checking against the rest.
    """
    ids_a = [_line_id(la[i]) for i in only_a]
    if _has_duplicates(ids_a):
        return True
    shared = set(ids_b) - {ids_b[i] for i in only_b}
    return any(k is not None and k in shared for k in ids_a)


def _all_duplicates(a: bytes | None, b: bytes | None, la: list[bytes], lb: list[bytes],
                    only_a: list[int], only_b: list[int]) -> list[GoldensProblem]:
    """Duplicate ids on each side: B scanned in full, A only where it differs from B."""
    ids_b = _all_ids(b, lb) if b else []
    out: list[GoldensProblem] = []
    b_dup = _has_duplicates(ids_b)
    if b_dup:
        out.extend(_duplicates("b", ids_b))
    if a and (b_dup or not b or _a_may_have_duplicates(ids_b, la, only_a, only_b)):
        out.extend(_duplicates("a", _all_ids(a, la)))
    return out


# -- 3. pairing parsed lines ------------------------------------------------


@dataclass
class _Parsed:
    line: int
    item: dict[str, Any]


def _parse(side: str, lines: list[bytes], indexes: list[int],
           problems: list[GoldensProblem]) -> dict[bytes, list[_Parsed]]:
    out: dict[bytes, list[_Parsed]] = {}
    for i in indexes:
        raw = lines[i]
        if not raw.strip():
            continue
        why = None
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            why = f"not JSON ({exc}); write one JSON object per line"
        else:
            if not isinstance(obj, dict):
                why = "not a JSON object; write one object per line"
            elif "id" not in obj:
                why = 'object without "id"; give every item a unique id'
        if why is not None:
            problems.append(GoldensProblem(side, (i + 1,), "unparsable", why))
            continue
        out.setdefault(_key(obj["id"]), []).append(_Parsed(i + 1, obj))
    return out


def _fields(before: dict[str, Any], after: dict[str, Any]) -> tuple[FieldChange, ...]:
    out = []
    for name in sorted(set(before) | set(after)):
        if name in before and name in after and before[name] == after[name]:
            continue
        out.append(FieldChange(name, before.get(name), after.get(name),
                               name not in before, name not in after))
    return tuple(out)


def _bucket(item: dict[str, Any]) -> str | None:
    b = item.get("bucket")
    return None if b is None else str(b)


def _pair(a: dict[bytes, list[_Parsed]], b: dict[bytes, list[_Parsed]]) -> list[GoldenChange]:
    changes: list[GoldenChange] = []
    for key in sorted(set(a) | set(b)):
        olds, news = a.get(key, []), b.get(key, [])
        for old, new in zip(olds, news, strict=False):
            fields = _fields(old.item, new.item)
            if fields:
                changes.append(GoldenChange(_display(key), "changed", _bucket(new.item),
                                            old.line, new.line, fields))
        for old in olds[len(news):]:
            changes.append(GoldenChange(_display(key), "removed", _bucket(old.item),
                                        old.line, None))
        for new in news[len(olds):]:
            changes.append(GoldenChange(_display(key), "added", _bucket(new.item),
                                        None, new.line))
    changes.sort(key=lambda c: (c.line_b or c.line_a or 0, c.line_a or 0, c.id))
    return changes


def _buckets(changes: list[GoldenChange]) -> tuple[BucketCount, ...]:
    counts: dict[str, Counter[str]] = {}
    for c in changes:
        counts.setdefault(c.bucket or "", Counter())[c.kind] += 1
    return tuple(BucketCount(name, n["added"], n["removed"], n["changed"])
                 for name, n in sorted(counts.items()))


def diff_goldens(a: bytes | None, b: bytes | None, path_a: str | None = None,
                 path_b: str | None = None) -> GoldensDiff:
    """Compare two goldens.jsonl blobs (None = absent on that side)."""
    la, lb = _split(a or b""), _split(b or b"")
    only_a, only_b = differing_lines(la, lb)
    problems: list[GoldensProblem] = []
    parsed_a = _parse("a", la, only_a, problems)
    parsed_b = _parse("b", lb, only_b, problems)
    changes = _pair(parsed_a, parsed_b)
    problems.extend(_all_duplicates(a, b, la, lb, only_a, only_b))
    problems.sort(key=lambda p: (p.side, p.lines, p.kind))
    return GoldensDiff(path_a if a is not None else None, path_b if b is not None else None,
                       tuple(changes), _buckets(changes), tuple(problems),
                       len(only_a) + len(only_b),
                       {"lines_a": len(la), "lines_b": len(lb)})
