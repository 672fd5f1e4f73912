"""A full run artifact packed for keeping: compressed, deduplicated, indexed (pure).

What the note no longer holds (``gitevals.run.summary``) is kept once per run in this
form, content-addressed by the sha256 of the run's canonical text (``artifact.dumps``),
where ``gitevals.run.runstore`` puts it. Three things make it small and quick to open:

- **No duplicated fields.** A transcript's ``final_answer``, ``tool_calls`` and
  ``hooks`` are what its ``turns`` give (``artifact.transcript``); when they are
  exactly that, only ``turns`` and ``duration_ms`` are kept and the rest is rebuilt.
- **Repeated texts once.** A string of at least ``INTERN_MIN`` characters met twice
  or more in the run (a tool's result every trial gets, a long system prompt) is kept
  once in a table and referred to by number.
- **An index.** Trials are compressed (zstd) in chunks of ``PER_CHUNK``; the header
  says where each chunk lies and where each scenario's trials start, so one trial is
  read by inflating the header, its chunk and the table, never the run.

Layout: ``MAGIC``, the header's length (8 bytes, big-endian), the header (zstd JSON),
then the table's frame and the chunks' frames. ``unpack`` rebuilds the run and checks
its text hashes to what the header claims: the artifact round-trips byte for byte.

zstd (the ``zstandard`` package) over the stdlib's zlib or lzma: on the issue's
realistic trials it packs 12-15x, zlib about 2/3 of that, and lzma comes close at
several times the time (``benchmarks/bench_notes.py`` prints the three).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from gitevals.errors import ArtifactError
from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import Run, Trial, dumps, is_item, is_trial, transcript

if TYPE_CHECKING:
    from gitevals.run.goldens import SuiteItem

MAGIC = b"gitevals-archive/1\n"
FORMAT = "gitevals-archive/1"
#: Trials per compressed chunk: one trial read inflates at most this many.
PER_CHUNK = 16
#: Strings shorter than this are never worth a table entry.
INTERN_MIN = 64
#: zstd's level: 9 packs within a few percent of 19 at a fraction of the time.
LEVEL = 9
_REF = "\u0000"  # a table reference is {"\u0000": n}; a run holding that key is not interned


class Header(TypedDict):
    format: str
    sha256: str
    bytes: int
    skeleton: JSONObject           # the run with every trial and golden item left out
    scenarios: list[list[int]]     # [case index, scenario index, first record, count]
    items: list[int]               # [first record, count] of the goldens' items
    table: list[int] | None        # [offset, length] of the strings' frame
    chunks: list[list[int]]        # [offset, length] of each chunk's frame


def digest(run: Run) -> tuple[str, int, str]:
    """``(sha256, size, text)`` of the run's canonical text: its content address."""
    text = dumps(run)
    data = text.encode()
    return hashlib.sha256(data).hexdigest(), len(data), text


# -- packing --------------------------------------------------------------------


def pack(run: Run) -> tuple[str, int, bytes]:
    """``(sha256 and size of the run's canonical text, the packed artifact)``."""
    import zstandard

    sha, size, _ = digest(run)
    skeleton, records, scen, items = _split(run)
    table = _table(records)
    if table:
        index = {s: i for i, s in enumerate(table)}
        records = [_interned(r, index) for r in records]
    zc = zstandard.ZstdCompressor(level=LEVEL)
    frames: list[bytes] = []
    table_at = None
    if table:
        frames.append(zc.compress(_json(table)))
    chunks = []
    for start in range(0, len(records), PER_CHUNK):
        lines = b"\n".join(_json(r) for r in records[start:start + PER_CHUNK])
        frames.append(zc.compress(lines))
    offset = 0
    for i, frame in enumerate(frames):
        if table and i == 0:
            table_at = [offset, len(frame)]
        else:
            chunks.append([offset, len(frame)])
        offset += len(frame)
    header: Header = {"format": FORMAT, "sha256": sha, "bytes": size,
                      "skeleton": skeleton, "scenarios": scen, "items": items,
                      "table": table_at, "chunks": chunks}
    head = zc.compress(_json(header))
    return sha, size, b"".join([MAGIC, len(head).to_bytes(8, "big"), head, *frames])


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def _split(run: Run) -> tuple[JSONObject, list[JSON], list[list[int]], list[int]]:
    """The run as its skeleton (every trial and golden item left out) and its records:
    every trial, then every golden item, each ``[derived, record]`` (``_slim``)."""
    doc: JSONObject = json.loads(_json(run))  # plain JSON values from here on
    records: list[JSON] = []
    scen = []
    for ci, case in enumerate(_objects(doc.get("cases"))):
        for si, sc in enumerate(_objects(case.get("scenarios"))):
            results = _objects(sc.get("results"))
            scen.append([ci, si, len(records), len(results)])
            records += [_slim(t) for t in results]
            sc["results"] = []
    part = doc.get("goldens")
    first = len(records)
    if isinstance(part, dict):
        records += [_slim(it) for it in _objects(part.get("items"))]
        part["items"] = []
    return doc, records, scen, [first, len(records) - first]


def _objects(value: JSON) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _slim(record: JSONObject) -> JSON:
    t = record.get("transcript")
    turns = t.get("turns") if isinstance(t, dict) else None
    ms = t.get("duration_ms") if isinstance(t, dict) else None
    if not isinstance(turns, list) or not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return [0, record]
    rebuilt = transcript([r for r in turns if isinstance(r, dict)], 0)
    rebuilt["duration_ms"] = ms
    if len(turns) != len(rebuilt["turns"]) or _json(rebuilt) != _json(t):
        return [0, record]
    return [1, {**record, "transcript": {"turns": turns, "duration_ms": ms}}]


def _strings(value: JSON) -> Iterator[str | None]:
    """Every string of ``value``; None when a key would clash with a table reference."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        if _REF in value:
            yield None
        for v in value.values():
            yield from _strings(v)


def _table(records: list[JSON]) -> list[str]:
    """The long strings met at least twice, most frequent first; none when a record
    holds the reference key itself (nothing is interned then)."""
    seen: dict[str, int] = {}
    for r in records:
        for s in _strings(r):
            if s is None:
                return []
            if len(s) >= INTERN_MIN:
                seen[s] = seen.get(s, 0) + 1
    return sorted((s for s, n in seen.items() if n > 1), key=lambda s: (-seen[s], s))


def _interned(value: JSON, index: dict[str, int]) -> JSON:
    if isinstance(value, str):
        n = index.get(value) if len(value) >= INTERN_MIN else None
        return value if n is None else {_REF: n}
    if isinstance(value, list):
        return [_interned(v, index) for v in value]
    if isinstance(value, dict):
        return {k: _interned(v, index) for k, v in value.items()}
    return value


# -- reading ----------------------------------------------------------------------


def header(data: bytes, label: str) -> Header:
    """The header of the packed artifact ``data`` (``ArtifactError`` when it is none)."""
    doc = _frame(data, len(MAGIC) + 8, int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "big"),
                 label) if data.startswith(MAGIC) else None
    if not _is_header(doc):
        raise ArtifactError(f"{label}: not a gitevals archive ({FORMAT}): fetch it again "
                            "with `gitevals fetch-run REV`")
    return doc


def _is_header(doc: object) -> TypeGuard[Header]:
    return (isinstance(doc, dict) and doc.get("format") == FORMAT
            and all(isinstance(doc.get(k), list) for k in ("scenarios", "items", "chunks"))
            and isinstance(doc.get("skeleton"), dict) and isinstance(doc.get("sha256"), str))


def _frame(data: bytes, start: int, length: int, label: str) -> JSON:
    import zstandard

    try:
        raw = zstandard.ZstdDecompressor().decompress(data[start:start + length])
        parsed: JSON = json.loads(raw)
    except (zstandard.ZstdError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"{label}: a damaged gitevals archive ({exc}): fetch it again "
                            "with `gitevals fetch-run REV`") from exc
    return parsed


def _base(data: bytes) -> int:
    return len(MAGIC) + 8 + int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "big")


def _lines(data: bytes, head: Header, chunk: int, label: str) -> list[bytes]:
    import zstandard

    offset, length = head["chunks"][chunk]
    start = _base(data) + offset
    try:
        return zstandard.ZstdDecompressor().decompress(data[start:start + length]).split(b"\n")
    except zstandard.ZstdError as exc:
        raise ArtifactError(f"{label}: a damaged gitevals archive ({exc})") from exc


def _strings_table(data: bytes, head: Header, label: str) -> list[str]:
    if head["table"] is None:
        return []
    offset, length = head["table"]
    table = _frame(data, _base(data) + offset, length, label)
    return [s for s in table if isinstance(s, str)] if isinstance(table, list) else []


def _restored(value: JSON, table: list[str]) -> JSON:
    if isinstance(value, list):
        return [_restored(v, table) for v in value]
    if isinstance(value, dict):
        ref = value.get(_REF) if len(value) == 1 else None
        if isinstance(ref, int) and table:
            return table[ref]
        return {k: _restored(v, table) for k, v in value.items()}
    return value


def _record(raw: bytes, table: list[str], label: str) -> JSONObject:
    try:
        flag, body = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise ArtifactError(f"{label}: a damaged gitevals archive ({exc})") from exc
    record = _restored(body, table)
    if not isinstance(record, dict):
        raise ArtifactError(f"{label}: a damaged gitevals archive (a record is no object)")
    t = record.get("transcript")
    turns = t.get("turns") if isinstance(t, dict) else None
    if flag and isinstance(t, dict) and isinstance(turns, list):
        full = json.loads(_json(transcript([r for r in turns if isinstance(r, dict)], 0)))
        full["duration_ms"] = t["duration_ms"]
        record["transcript"] = full
    return record


def read_record(data: bytes, number: int, label: str) -> JSONObject:
    """Record ``number`` (trials in artifact order, then golden items) alone."""
    head = header(data, label)
    lines = _lines(data, head, number // PER_CHUNK, label)
    return _record(lines[number % PER_CHUNK], _strings_table(data, head, label), label)


def trial_number(head: Header, ci: int, si: int, ri: int) -> int | None:
    """The record number of trial ``ri`` of scenario ``si`` of case ``ci``, or None."""
    for c, s, first, count in head["scenarios"]:
        if (c, s) == (ci, si):
            return first + ri if 0 <= ri < count else None
    return None


def unpack(data: bytes, label: str) -> Run:
    """The whole run, checked against its content address (byte for byte)."""
    from gitevals.run.artifact import checked

    head = header(data, label)
    table = _strings_table(data, head, label)
    records = [_record(line, table, label) for chunk in range(len(head["chunks"]))
               for line in _lines(data, head, chunk, label)]
    doc = json.loads(_json(head["skeleton"]))
    for ci, si, first, count in head["scenarios"]:
        doc["cases"][ci]["scenarios"][si]["results"] = records[first:first + count]
    if "goldens" in doc:
        first, count = head["items"]
        doc["goldens"]["items"] = records[first:first + count]
    if hashlib.sha256(dumps(doc).encode()).hexdigest() != head["sha256"]:
        raise ArtifactError(f"{label}: the unpacked run does not hash to {head['sha256'][:12]}"
                            ": the archive is damaged; fetch it again")
    return checked(doc, label)


def trial_of(data: bytes, ci: int, si: int, ri: int, label: str) -> Trial | None:
    """Trial ``ri`` of scenario ``si`` of case ``ci``, read alone, or None."""
    head = header(data, label)
    number = trial_number(head, ci, si, ri)
    if number is None:
        return None
    record = read_record(data, number, label)
    if not is_trial(record):
        raise ArtifactError(f"{label}: a damaged gitevals archive (trial {ri} is no trial)")
    return record


def item_of(data: bytes, index: int, label: str) -> SuiteItem | None:
    """Golden item ``index``, read alone, or None."""
    head = header(data, label)
    first, count = head["items"]
    if not 0 <= index < count:
        return None
    record = read_record(data, first + index, label)
    if not is_item(record):
        raise ArtifactError(f"{label}: a damaged gitevals archive (item {index} is no item)")
    return record
