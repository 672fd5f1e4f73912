"""goldens.jsonl at A vs at B, keyed by ``id``: fast because only differing lines are parsed.

A golden set is large (hundreds of thousands of lines) and changes little between
two revisions, so parsing every line would cost far more than reading the blobs.
``diff_goldens`` instead:

1. walks both blobs in step without splitting them, skipping equal stretches
   with ever larger byte compares (memcmp in place), bisecting only the chunk where they
   part, and re-synchronising after an edit within a few lines (then within
   windows of hashed lines that grow 4x, for blocks of inserted or removed rows);
   every line it cannot pair with an identical line on the other side is
   "differing" -- an imperfect resync only makes more lines differ, never hides a
   change, because differing lines are paired again by id below; line numbers
   are counted on the way (an equal stretch once, on A);
2. parses only the differing lines (json), pairs them by id: same id on both
   sides -> changed (field by field) or unchanged (moved, reformatted), one side
   only -> removed / added;
3. finds duplicate ids over *all* lines with one regex pass over B that reads
   the leading ``{"id": ...`` of every line (C speed, no JSON parse; a line that
   does not start that way has its id read by a full parse instead). A needs no
   pass of its own: it is B's shared lines plus its own differing lines, so only
   those are checked, and A is scanned in full only when that finds a suspect.

A line that is byte-identical on both sides is not a change and is not parsed:
whether such a line is valid JSON is the linter's question, not the diff's.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from gitevals import jsonlimits
from gitevals.jsontypes import JSON, JSONObject

_LEAD_ID = re.compile(rb'\n\{"id": ?("[^"\\\n]*"|-?\d+)[,}]')
_LINE_ID = re.compile(rb'\{\s*"id"\s*:\s*("[^"\\\n]*"|-?\d+)\s*[,}]')
_CHUNK = 8192    # bytes first compared while skipping an equal run (then doubled)
_MAX_CHUNK = 1 << 20  # ...up to this many
_EXACT = 128     # a differing chunk is bisected down to this many bytes
_NEAR = 3        # edits this close are found by direct compares, before any hashing
_WINDOW = 64     # lines first looked ahead on each side to re-synchronise after an edit
_MAX_WINDOW = 1 << 16  # ...growing 4x up to this many
# (lines skipped on A, on B) to try after a differing line: fewest first, edits before moves
_NEAR_ORDER = sorted(((da, s - da) for s in range(1, 2 * _NEAR + 1)
                      for da in range(max(0, s - _NEAR), min(s, _NEAR) + 1)),
                     key=lambda d: (d[0] + d[1], abs(d[0] - d[1])))


@dataclass(frozen=True)
class FieldChange:
    """One top-level field of a changed item; ``None`` side = field absent there."""

    field: str
    before: JSON
    after: JSON
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

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)


# -- 1. lines that differ ---------------------------------------------------

Span = tuple[int, int]  # (start, end) byte offsets of one line, newline excluded


def _split(blob: bytes) -> list[bytes]:
    lines = blob.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _count_lines(blob: bytes) -> int:
    return blob.count(b"\n") + (1 if blob and not blob.endswith(b"\n") else 0)


def _lines_from(blob: bytes, p: int, n: int) -> list[Span]:
    """Up to ``n`` lines starting at offset ``p`` (a line start)."""
    out: list[Span] = []
    size = len(blob)
    while p < size and len(out) < n:
        e = blob.find(b"\n", p)
        e = size if e < 0 else e
        out.append((p, e))
        p = e + 1
    return out


def _equal_bytes(a: bytes, p: int, b: bytes, q: int) -> int:
    """How many bytes from (p, q) are equal, give or take the last line (<= _EXACT bytes).

    Gallops over equal stretches with ever larger compares, then bisects the chunk
    that differs. Each compare is ``a.startswith(view of b, p)``: a memcmp in place,
    no slice of either blob is copied. Stopping short of the exact byte is safe: the
    caller backs up to a line start, and a line found equal there is just skipped.
    """
    start, step, vb = p, _CHUNK, memoryview(b)
    while True:
        m = min(step, len(a) - p, len(b) - q)
        if m <= 0:
            return p - start
        if a.startswith(vb[q:q + m], p):
            p, q, step = p + m, q + m, min(step * 2, _MAX_CHUNK)
            continue
        lo, hi = 0, m  # a[p:p+lo] == b[q:q+lo]; they part before hi
        while hi - lo > _EXACT:
            mid = (lo + hi) // 2
            if a.startswith(vb[q + lo:q + mid], p + lo):
                lo = mid
            else:
                hi = mid
        return p + lo - start


def _near(a: bytes, ra: list[Span], b: bytes, rb: list[Span]) -> tuple[int, int] | None:
    """The closest equal pair within _NEAR lines (one edited, inserted or deleted line)."""
    for da, db in _NEAR_ORDER:
        if da < len(ra) and db < len(rb):
            (sa, ea), (sb, eb) = ra[da], rb[db]
            if ea - sa == eb - sb and a[sa:ea] == b[sb:eb]:
                return da, db
    return None


def _window(a: bytes, ra: list[Span], b: bytes, rb: list[Span]) -> tuple[int, int] | None:
    """The nearest equal pair within the given lines, by hashing them; None if there is none."""
    la, lb = [a[s:e] for s, e in ra], [b[s:e] for s, e in rb]
    wa = {line: k for k, line in reversed(list(enumerate(la)))}
    wb = {line: k for k, line in reversed(list(enumerate(lb)))}
    for d in range(max(len(la), len(lb))):
        k = wb.get(la[d]) if d < len(la) else None
        if k is not None and k <= d:
            return d, k
        k = wa.get(lb[d]) if d < len(lb) else None
        if k is not None and k <= d:
            return k, d
    return None


def _resync(a: bytes, p: int, b: bytes, q: int) -> tuple[list[Span], list[Span], int, int]:
    """From two differing line starts: the lines skipped on each side and where to go on.

    Tries the next few lines directly, then windows of hashed lines that grow 4x
    (so a block of thousands of inserted or removed lines is still found cheaply);
    with no equal pair within the largest window, that whole window differs.
    """
    ra, rb = _lines_from(a, p, _NEAR + 1), _lines_from(b, q, _NEAR + 1)
    near = (0, 0) if a[ra[0][0]:ra[0][1]] == b[rb[0][0]:rb[0][1]] else _near(a, ra, b, rb)
    size = _WINDOW
    while near is None:
        ra, rb = _lines_from(a, p, size), _lines_from(b, q, size)
        near = _window(a, ra, b, rb)
        if near is None and (size >= _MAX_WINDOW or (len(ra) < size and len(rb) < size)):
            near = len(ra), len(rb)
        size *= 4
    da, db = near
    if da == db == 0:  # the same line, told apart only by a missing final newline
        return [], [], ra[0][1] + 1, rb[0][1] + 1
    next_p = ra[da][0] if da < len(ra) else (ra[-1][1] + 1 if ra else p)
    next_q = rb[db][0] if db < len(rb) else (rb[-1][1] + 1 if rb else q)
    return ra[:da], rb[:db], next_p, next_q


Numbered = list[tuple[int, bytes]]  # (0-based line index, content)


def differing(a: bytes, b: bytes) -> tuple[Numbered, Numbered]:
    """(0-based line index, content) of the lines of ``a`` and of ``b`` left unpaired."""
    only_a, only_b, _, _ = walk(a, b)
    return only_a, only_b


def walk(a: bytes, b: bytes) -> tuple[Numbered, Numbered, int, int]:
    """``differing`` plus the number of lines of ``a`` and of ``b``.

    Line numbers are kept while walking: an equal stretch holds the same number of
    newlines on both sides, so it is counted once (C ``bytes.count``), on A.
    """
    only_a: list[tuple[int, bytes]] = []
    only_b: list[tuple[int, bytes]] = []
    p = q = ia = ib = 0
    while p < len(a) and q < len(b):
        n = _equal_bytes(a, p, b, q)
        if n:  # keep whole lines only: a partial line is not known to be equal
            n = max(0, a.rfind(b"\n", p, p + n) + 1 - p)
        lines = a.count(b"\n", p, p + n)
        p, q, ia, ib = p + n, q + n, ia + lines, ib + lines
        if p >= len(a) or q >= len(b):
            break
        skipped_a, skipped_b, p2, q2 = _resync(a, p, b, q)
        only_a += [(ia + k, a[s:e]) for k, (s, e) in enumerate(skipped_a)]
        only_b += [(ib + k, b[s:e]) for k, (s, e) in enumerate(skipped_b)]
        ia += a.count(b"\n", p, p2)
        ib += b.count(b"\n", q, q2)
        p, q = p2, q2
    tail_a, tail_b = _lines_from(a, p, len(a)), _lines_from(b, q, len(b))
    only_a += [(ia + k, a[s:e]) for k, (s, e) in enumerate(tail_a)]
    only_b += [(ib + k, b[s:e]) for k, (s, e) in enumerate(tail_b)]
    # past the end = an unterminated last line was consumed (it holds no newline)
    return (only_a, only_b, ia + len(tail_a) + (p > len(a)), ib + len(tail_b) + (q > len(b)))


def differing_lines(a: bytes, b: bytes) -> tuple[list[int], list[int]]:
    """0-based indexes of the lines of ``a`` and of ``b`` not paired with an equal line."""
    da, db = differing(a, b)
    return [i for i, _ in da], [i for i, _ in db]


# -- 2. ids -------------------------------------------------------------------


def _key(value: JSON) -> bytes:
    """The id's identity: its JSON text (the same bytes the fast scan reads)."""
    if type(value) is str and value.isprintable() and '"' not in value and "\\" not in value:
        return b'"' + value.encode() + b'"'  # what json.dumps would say, without the call
    # surrogatepass: a row read here holds none (jsonlimits), but an identity never fails
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _display(key: bytes) -> str:
    if key[:1] == b'"' and b"\\" not in key:
        return key[1:-1].decode("utf-8", "replace")
    try:
        value = json.loads(key.decode("utf-8", "surrogatepass"))
    except ValueError:  # an integer id past int_max_str_digits (read by the fast scan)
        return f"{key[:20].decode()}…({len(key)} digits)"
    return value if isinstance(value, str) else key.decode("utf-8", "replace")


def _line_id(line: bytes) -> bytes | None:
    """The id of one line; None for a line without one, or one gitevals cannot read
    (that line is the linter's to report, or a diff problem when it differs)."""
    m = _LINE_ID.match(line.lstrip())
    if m:
        return m.group(1)
    try:
        obj = jsonlimits.loads(line)
    except ValueError:
        return None
    return _key(obj["id"]) if isinstance(obj, dict) and "id" in obj else None


def _all_ids(blob: bytes, count: int | None = None) -> list[bytes | None]:
    """The id of every line (None for blank or id-less lines), fast when lines lead with it."""
    count = _count_lines(blob) if count is None else count
    if not count:
        return []
    end = blob.find(b"\n")
    first = _line_id(blob[: end if end >= 0 else len(blob)])
    rest: list[bytes | None] = _LEAD_ID.findall(blob)  # lines 2..n that start {"id": ...
    if first is not None and len(rest) == count - 1:
        rest.insert(0, first)
        return rest
    return [_line_id(line) if line.strip() else None for line in _split(blob)]


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


def _a_may_have_duplicates(ids_b: list[bytes | None], set_b: set[bytes | None],
                           only_a: list[tuple[int, bytes]],
                           only_b: list[tuple[int, bytes]]) -> bool:
    """Whether A can hold a duplicate id, knowing B holds none.

    A = (B minus its differing lines) + A's differing lines, and the shared lines
    are identical, so only A's differing ids need checking against the rest.
    """
    ids_a = [k for k in (_line_id(line) for _, line in only_a) if k is not None]
    if len(set(ids_a)) != len(ids_a):
        return True
    leaving = {ids_b[i] for i, _ in only_b}
    return any(k in set_b and k not in leaving for k in ids_a)


def _all_duplicates(a: bytes | None, b: bytes | None, only_a: Numbered, only_b: Numbered,
                    lines_b: int | None = None) -> list[GoldensProblem]:
    """Duplicate ids on each side: B scanned in full, A only where it differs from B."""
    ids_b = _all_ids(b, lines_b) if b else []
    set_b = set(ids_b)
    out: list[GoldensProblem] = []
    b_dup = len(set_b) != len(ids_b) and len(set_b - {None}) != len(ids_b) - ids_b.count(None)
    if b_dup:
        out.extend(_duplicates("b", ids_b))
    if a and (b_dup or not b or _a_may_have_duplicates(ids_b, set_b, only_a, only_b)):
        out.extend(_duplicates("a", _all_ids(a)))
    return out


# -- 3. pairing parsed lines ------------------------------------------------


@dataclass
class _Parsed:
    line: int
    item: JSONObject


def _parse(side: str, lines: list[tuple[int, bytes]],
           problems: list[GoldensProblem]) -> dict[bytes, list[_Parsed]]:
    out: dict[bytes, list[_Parsed]] = {}
    for i, raw in lines:
        if not raw.strip():
            continue
        obj = _row(raw)
        if isinstance(obj, str):
            problems.append(GoldensProblem(side, (i + 1,), "unparsable", obj))
            continue
        out.setdefault(_key(obj["id"]), []).append(_Parsed(i + 1, obj))
    return out


def _row(raw: bytes) -> JSONObject | str:
    """One line as an item with an ``id``, or why it is not one."""
    try:
        obj = jsonlimits.loads(raw)
    except jsonlimits.Unholdable as exc:
        return f"cannot be read: {exc}"
    except ValueError as exc:
        return f"not JSON ({exc}); write one JSON object per line"
    if not isinstance(obj, dict):
        return "not a JSON object; write one object per line"
    if "id" not in obj:
        return 'object without "id"; give every item a unique id'
    return obj


def _fields(before: JSONObject, after: JSONObject) -> tuple[FieldChange, ...]:
    out = []
    for name in sorted(set(before) | set(after)):
        if name in before and name in after and before[name] == after[name]:
            continue
        out.append(FieldChange(name, before.get(name), after.get(name),
                               name not in before, name not in after))
    return tuple(out)


def _bucket(item: JSONObject) -> str | None:
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
    blob_a, blob_b = a or b"", b or b""
    only_a, only_b, _, lines_b = walk(blob_a, blob_b)
    problems: list[GoldensProblem] = []
    changes = _pair(_parse("a", only_a, problems), _parse("b", only_b, problems))
    problems.extend(_all_duplicates(a, b, only_a, only_b, lines_b))
    problems.sort(key=lambda p: (p.side, p.lines, p.kind))
    return GoldensDiff(path_a if a is not None else None, path_b if b is not None else None,
                       tuple(changes), _buckets(changes), tuple(problems),
                       len(only_a) + len(only_b))
