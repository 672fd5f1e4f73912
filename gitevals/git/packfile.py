"""Blobs read straight from git's pack files, a delta base shared by several inflated once.

libgit2 keeps no delta base larger than 1 MiB in its cache (hard-coded), so after
``git gc`` -- goldens.jsonl at A stored as a delta of it at B -- reading both through
pygit2 inflates the 44 MB base twice. ``read_packed`` reads the pack files directly
(index v2, SHA-1) and inflates a base shared by the requested blobs once. Anything it
does not expect (another index version, a base in another pack, a size that does not
add up) is left out, and the caller (``tree.read_blobs_unverified``) reads it through
libgit2.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

_PackEntry = tuple[int, int, int, int]  # (offset, type, data offset, inflated size)
_OFS_DELTA, _REF_DELTA, _BLOB = 6, 7, 3
_MAX_CHAIN = 10_000


class _Pack:
    """One ``pack-*.idx`` / ``pack-*.pack`` pair, memory-mapped read-only."""

    def __init__(self, idx_path: Path) -> None:
        import mmap

        with open(idx_path, "rb") as f:
            self.idx = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        with open(idx_path.with_suffix(".pack"), "rb") as f:
            self.pack = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.idx[:8] != b"\377tOc\0\0\0\2" or self.pack[:4] != b"PACK":
            raise ValueError("not a version 2 pack index")
        self.count = int.from_bytes(self.idx[8 + 255 * 4:8 + 256 * 4], "big")

    def _fanout(self, i: int) -> int:
        return 0 if i < 0 else int.from_bytes(self.idx[8 + i * 4:12 + i * 4], "big")

    def offset(self, raw: bytes) -> int | None:
        """Where object ``raw`` (20-byte SHA-1) starts in the pack; None when not in it."""
        names = 8 + 256 * 4
        lo, hi = self._fanout(raw[0] - 1), self._fanout(raw[0])
        while lo < hi:
            mid = (lo + hi) // 2
            if self.idx[names + mid * 20:names + mid * 20 + 20] < raw:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self.count or self.idx[names + lo * 20:names + lo * 20 + 20] != raw:
            return None
        table = names + self.count * 24
        off = int.from_bytes(self.idx[table + lo * 4:table + lo * 4 + 4], "big")
        if off & 0x80000000:  # an index into the table of 8-byte offsets
            big = table + self.count * 4 + (off & 0x7FFFFFFF) * 8
            off = int.from_bytes(self.idx[big:big + 8], "big")
        return off

    def entry(self, off: int) -> tuple[_PackEntry, int | None]:
        """The entry at ``off`` and the offset of its delta base (None for a whole object)."""
        pack, p = self.pack, off + 1
        c = pack[off]
        kind, size, shift = (c >> 4) & 7, c & 15, 4
        while c & 0x80:
            c = pack[p]
            p, size, shift = p + 1, size | (c & 0x7F) << shift, shift + 7
        base: int | None = None
        if kind == _OFS_DELTA:
            c = pack[p]
            p, rel = p + 1, c & 0x7F
            while c & 0x80:
                c = pack[p]
                p, rel = p + 1, ((rel + 1) << 7) | (c & 0x7F)
            base = off - rel
        elif kind == _REF_DELTA:
            base = self.offset(pack[p:p + 20])
            if base is None:
                raise ValueError("delta base in another pack")
            p += 20
        elif kind not in (1, 2, 3, 4):
            raise ValueError(f"pack entry type {kind}")
        return (off, kind, p, size), base

    def chain(self, off: int) -> list[_PackEntry]:
        """The entry at ``off`` and its delta bases, the whole object last."""
        out: list[_PackEntry] = []
        base: int | None = off
        while base is not None:
            if len(out) > _MAX_CHAIN or not 12 <= base < len(self.pack):
                raise ValueError("bad delta chain")
            e, base = self.entry(base)
            out.append(e)
        return out

    def inflate(self, e: _PackEntry) -> bytes:
        """The entry's data. One-shot ``zlib.decompress`` into a buffer of the exact size:
        a decompressor object would grow its output in blocks and copy them at the end."""
        import zlib

        _, _, start, size = e
        most = size + (size >> 10) + 64  # deflate's worst case is far below this
        data = zlib.decompress(memoryview(self.pack)[start:start + most], bufsize=max(size, 1))
        if len(data) != size:
            raise ValueError("entry size")
        return data


def _varint(data: bytes, p: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        c = data[p]
        p, value, shift = p + 1, value | (c & 0x7F) << shift, shift + 7
        if not c & 0x80:
            return value, p


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: copies from ``base`` and inserted bytes, joined in one copy."""
    src, p = _varint(delta, 0)
    dst, p = _varint(delta, p)
    if src != len(base):
        raise ValueError("delta base size")
    view, n = memoryview(base), len(delta)
    pieces: list[bytes | memoryview] = []
    while p < n:
        c = delta[p]
        p += 1
        if c & 0x80:  # copy: bits 0-3 say which offset bytes follow, bits 4-6 size bytes
            off = size = 0
            if c & 0x01:
                off, p = delta[p], p + 1
            if c & 0x02:
                off, p = off | delta[p] << 8, p + 1
            if c & 0x04:
                off, p = off | delta[p] << 16, p + 1
            if c & 0x08:
                off, p = off | delta[p] << 24, p + 1
            if c & 0x10:
                size, p = delta[p], p + 1
            if c & 0x20:
                size, p = size | delta[p] << 8, p + 1
            if c & 0x40:
                size, p = size | delta[p] << 16, p + 1
            pieces.append(view[off:off + (size or 0x10000)])
        elif c:  # insert the next c bytes
            pieces.append(delta[p:p + c])
            p += c
        else:
            raise ValueError("delta opcode 0")
    out = b"".join(pieces)
    if len(out) != dst:
        raise ValueError("delta result size")
    return out


def read_packed(objects: Path, shas: list[str]) -> dict[str, bytes]:
    """The blobs among ``shas`` found in this repository's packs (others left out)."""
    import zlib

    out: dict[str, bytes] = {}
    try:
        packs = [_Pack(p) for p in sorted((objects / "pack").glob("pack-*.idx"))]
    except (OSError, ValueError):
        return out
    found: list[tuple[str, _Pack, list[_PackEntry]]] = []
    for sha in shas:
        for pack in packs:
            try:
                off = pack.offset(bytes.fromhex(sha)) if len(sha) == 40 else None
                if off is not None:
                    found.append((sha, pack, pack.chain(off)))
                    break
            except (ValueError, IndexError):
                break
    # an entry in the chains of two requested blobs is kept once built (shared base)
    seen = Counter((id(pack), e[0]) for _, pack, chain in found for e in chain)
    built: dict[tuple[int, int], bytes] = {}
    for sha, pack, chain in found:
        try:
            data = _build(pack, chain, built, seen)
        except (ValueError, IndexError, zlib.error):
            continue
        if data is not None:
            out[sha] = data
    return out


def _build(pack: _Pack, chain: list[_PackEntry], built: dict[tuple[int, int], bytes],
           seen: Counter[tuple[int, int]]) -> bytes | None:
    """The object at ``chain[0]``: its whole base inflated, each delta applied in turn."""
    start = next((k for k, e in enumerate(chain) if (id(pack), e[0]) in built), len(chain) - 1)
    whole = chain[start]
    first = (id(pack), whole[0])
    data = built[first] if first in built else pack.inflate(whole)
    kind = chain[-1][1]
    for k in range(start, -1, -1):
        key = (id(pack), chain[k][0])
        if k < start:
            data = _apply_delta(data, pack.inflate(chain[k]))
        if seen[key] > 1:
            built[key] = data
    return data if kind == _BLOB else None
