"""Counts of a goldens file per bucket, split and tag, and the seed's floors.

The floors are the Phase 0 ones: at least ``MIN_ITEMS`` items, and ``MIN_BUCKETS`` to
``MAX_BUCKETS`` failure buckets; 1-2 buckets are expected for a single-failure-surface
task (strict-schema extraction: one grader with per-field sub-metrics), which only the
author can tell, so that case is noted rather than passed or failed.

Tags are the ``tags`` list (strings) and a ``tag`` string of each row. A row without a
bucket (or split) counts under ``None``; a line that is not a JSON object is counted as
unreadable (``gitevals lint`` says why).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

from gitevals.jsontypes import JSON, JSONObject

MIN_ITEMS = 100
MIN_BUCKETS, MAX_BUCKETS = 4, 8
SPLITS = ("train", "dev", "test", "holdout")


@dataclass(frozen=True)
class Floor:
    """One floor of the seed: what it asks, what the goldens have, and whether it holds
    (``None``: cannot be told from the file; ``note`` says what decides)."""

    name: str
    want: str
    have: int
    ok: bool | None
    note: str = ""

    def as_dict(self) -> JSONObject:
        return {"name": self.name, "want": self.want, "have": self.have, "ok": self.ok,
                "note": self.note}


@dataclass(frozen=True)
class Priority:
    """One bucket's rank: rows, mean severity and value (1 when none carried one), their
    product, and how many rows lacked each."""

    bucket: str | None
    rows: int
    severity: float
    value: float
    priority: float
    no_severity: int
    no_value: int

    def as_dict(self) -> JSONObject:
        return {"bucket": self.bucket or "", "rows": self.rows, "severity": self.severity,
                "value": self.value, "priority": self.priority,
                "without_severity": self.no_severity, "without_value": self.no_value}


@dataclass(frozen=True)
class Stats:
    """Counts of one goldens file."""

    items: int
    unreadable: int
    buckets: dict[str | None, int] = field(default_factory=dict)
    splits: dict[str | None, int] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    #: Per bucket: (severity sum, rows with one, value sum, rows with one).
    weights: dict[str | None, tuple[float, int, float, int]] = field(default_factory=dict)

    def priority(self) -> list[Priority]:
        """Buckets ranked by frequency x mean severity x mean value, greatest first; empty
        when no row carries a numeric ``severity`` or ``value`` (a missing one counts as
        1, and ``Priority`` says how many rows lacked it)."""
        if not any(n_s or n_v for _, n_s, _, n_v in self.weights.values()):
            return []
        out = []
        for name, n in self.buckets.items():
            s, n_s, v, n_v = self.weights.get(name, (0.0, 0, 0.0, 0))
            sev, val = (s / n_s if n_s else 1.0), (v / n_v if n_v else 1.0)
            out.append(Priority(name, n, sev, val, n * sev * val, n - n_s, n - n_v))
        return sorted(out, key=lambda p: (-p.priority, p.bucket is None, p.bucket or ""))

    @property
    def bucket_names(self) -> list[str]:
        return sorted(b for b in self.buckets if b is not None)

    def floors(self) -> list[Floor]:
        """The seed's floors against these counts."""
        return [items_floor(self.items), buckets_floor(len(self.bucket_names))]

    def as_dict(self) -> JSONObject:
        return {"items": self.items, "unreadable": self.unreadable,
                "buckets": _named(self.buckets), "splits": _named(self.splits),
                "tags": dict(sorted(self.tags.items())),
                "floors": [f.as_dict() for f in self.floors()],
                "floors_met": all(f.ok is not False for f in self.floors()),
                **({"priority": [p.as_dict() for p in ranked]}
                   if (ranked := self.priority()) else {})}


def _named(counts: dict[str | None, int]) -> JSONObject:
    """Counts keyed by name, sorted; the rows without one under ``""``."""
    out: JSONObject = {k: v for k, v in sorted((k, v) for k, v in counts.items()
                                               if k is not None)}
    if None in counts:
        out[""] = counts[None]
    return out


def items_floor(items: int) -> Floor:
    return Floor("items", f">= {MIN_ITEMS}", items, items >= MIN_ITEMS,
                 "" if items >= MIN_ITEMS else
                 f"label {MIN_ITEMS - items} more: error analysis needs >= {MIN_ITEMS} items")


def buckets_floor(n: int) -> Floor:
    want = f"{MIN_BUCKETS}-{MAX_BUCKETS}"
    if MIN_BUCKETS <= n <= MAX_BUCKETS:
        return Floor("buckets", want, n, True)
    if n > MAX_BUCKETS:
        return Floor("buckets", want, n, False,
                     f"merge buckets: more than {MAX_BUCKETS} means some are one failure mode")
    if n in (1, 2):
        return Floor("buckets", want, n, None,
                     "fewer than 4: fine only for a single-failure-surface task (e.g. "
                     "strict-schema extraction, one grader with per-field sub-metrics); "
                     "otherwise the coding pass was too shallow")
    return Floor("buckets", want, n, False, 'no row has a "bucket": name the failure '
                 "mode of each row (axial coding into 4-8 buckets)")


def stats_of(data: bytes) -> Stats:
    """Counts of a goldens file's bytes (pure; undecodable bytes count as unreadable)."""
    items = unreadable = 0
    buckets: Counter[str | None] = Counter()
    splits: Counter[str | None] = Counter()
    tags: Counter[str] = Counter()
    weights: dict[str | None, tuple[float, int, float, int]] = {}
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            row: JSON = json.loads(line)
        except (ValueError, RecursionError):
            row = None
        if type(row) is not dict:
            unreadable += 1
            continue
        items += 1
        buckets[_text(row.get("bucket"))] += 1
        splits[_text(row.get("split"))] += 1
        tags.update(_tags(row))
        _weigh(weights, _text(row.get("bucket")), row)
    return Stats(items, unreadable, dict(buckets), dict(splits), dict(tags), weights)


def _weigh(weights: dict[str | None, tuple[float, int, float, int]], bucket: str | None,
           row: JSONObject) -> None:
    s, n_s, v, n_v = weights.get(bucket, (0.0, 0, 0.0, 0))
    sev, val = _weight(row.get("severity")), _weight(row.get("value"))
    if sev is not None:
        s, n_s = s + sev, n_s + 1
    if val is not None:
        v, n_v = v + val, n_v + 1
    weights[bucket] = (s, n_s, v, n_v)


def _weight(value: JSON) -> float | None:
    """A finite number >= 0 (not a boolean); anything else is not a weight."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) and f >= 0 else None


def _text(value: JSON) -> str | None:
    return value if type(value) is str and value else None


def _tags(row: JSONObject) -> set[str]:
    found = row.get("tags")
    out = {t for t in found if type(t) is str and t} if isinstance(found, list) else set()
    one = _text(row.get("tag"))
    return out | {one} if one else out
