"""Split labelled items by id and measure a grader on them: TPR and TNR, never one
blended accuracy (a judge that always says PASS scores 90 % on a 90 %-pass set).

Pure: values in, values out.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Split = Literal["train", "dev", "test"]
#: The share of items in train and dev (the rest is the sealed test split). Train is
#: where few-shot examples may come from, dev is measured as often as you like, test
#: is measured once per grader blob and judge model (``calibrate --final``).
RATIOS: tuple[tuple[Split, float], ...] = (("train", 0.2), ("dev", 0.4), ("test", 0.4))
#: The fewest labelled items calibrate accepts.
MIN_ITEMS = 100
#: The normal quantile of a two-sided 95 % interval.
Z95 = 1.959963984540054


def split_of(item_id: str) -> Split:
    """The split of an id: a hash of the id alone, so an item never changes split when
    others are added or removed, and two machines split the same file alike."""
    digest = hashlib.sha256(f"gitevals-calibration/1:{item_id}".encode()).digest()
    x = int.from_bytes(digest[:8], "big") / 2**64
    edge = 0.0
    for name, share in RATIOS:
        edge += share
        if x < edge:
            return name
    return RATIOS[-1][0]


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``hits`` successes in ``n`` trials (None when n is 0).

    Unlike the normal interval it stays inside 0..1 and is not zero-width at 0/n or n/n,
    which is exactly where a skewed judge lands."""
    if n <= 0:
        return None
    p = hits / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``of`` (TPR: labelled pass and judged pass, of those labelled pass and
    judged at all), with its Wilson 95 % interval; ``value`` None when ``of`` is 0."""

    hits: int
    of: int

    @property
    def value(self) -> float | None:
        return self.hits / self.of if self.of else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.hits, self.of)

    def as_dict(self) -> dict[str, object]:
        low_high = self.interval
        return {"value": self.value, "hits": self.hits, "of": self.of,
                "low": low_high[0] if low_high else None,
                "high": low_high[1] if low_high else None}


@dataclass(frozen=True)
class Measured:
    """A grader measured on one split: TPR and TNR apart, and the items it could not
    decide (an error or an unparseable answer: listed, never counted as a FAIL)."""

    tpr: Rate
    tnr: Rate
    errors: tuple[tuple[str, str], ...]  # (id, what went wrong), sorted by id


def measure(labels: Mapping[str, bool], said: Mapping[str, bool | str]) -> Measured:
    """TPR/TNR of ``said`` (id -> the grader's pass/fail, or an error message) against
    ``labels`` (id -> the human label, True for pass) over the ids of ``said``."""
    tp = pos = tn = neg = 0
    errors = []
    for item_id in sorted(said):
        answer = said[item_id]
        if isinstance(answer, str):
            errors.append((item_id, answer))
        elif labels[item_id]:
            pos += 1
            tp += answer
        else:
            neg += 1
            tn += not answer
    return Measured(Rate(tp, pos), Rate(tn, neg), tuple(errors))


def sizes(ids: Iterable[str]) -> dict[str, int]:
    """Items per split, every split present."""
    out: dict[str, int] = {name: 0 for name, _ in RATIOS}
    for item_id in ids:
        out[split_of(item_id)] += 1
    return out
