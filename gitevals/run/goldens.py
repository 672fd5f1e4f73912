"""The artifact's ``goldens`` part: per-item results and a pass rate per slice.

Pure. A slice is a bucket of the goldens, a frozen benchmark or the domain-adjacent
slice of the drift suite; its rate is never blended with another's. An item lost to
an infrastructure error (the target crashed, the grader raised) counts as not
passed, and the slice says how many were (docs/choices.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from gitevals.jsontypes import JSONObject

if TYPE_CHECKING:
    from gitevals.run.artifact import AssertionOutcome, ErrorRecord, GraderAnswer, Transcript

KINDS = ("bucket", "benchmark", "domain")


class _SuiteItemKeys(TypedDict):

    kind: str
    slice: str
    id: str
    path: str
    line: int
    row: JSONObject
    grader: str
    transcript: Transcript
    error: ErrorRecord | None
    answer: GraderAnswer | None
    outcome: AssertionOutcome | None
    passed: bool


class SuiteItem(_SuiteItemKeys, total=False):
    """One golden (or drift row) as run: its row, what the target said, the grader's answer;
    a multiple-choice drift row also its ``choice``: the choices, the expected label and
    every attempt (token budget, method, label chosen; the unparsed first one's answer
    when it was retried)."""

    choice: JSONObject


class SliceRate(TypedDict):
    """Pass count of one slice: ``passed`` of ``total`` (``errors`` of them lost to errors)."""

    kind: str
    name: str
    grader: str | None
    passed: int
    total: int
    errors: int


class Goldens(TypedDict):
    """The goldens part of a run: what was mapped and pinned, items, a rate per slice."""

    graders: dict[str, str]
    buckets: list[str] | None
    budget: JSONObject | None
    files: dict[str, str]
    items: list[SuiteItem]
    slices: list[SliceRate]


def key(kind: str, name: str) -> str:
    """``bucket:format``, ``benchmark:mmlu-subset``, ``domain:domain_adjacent``."""
    return f"{kind}:{name}"


def case_of(kind: str, slice_: str) -> str:
    """The ``case`` a target is sent for an item: ``goldens`` for a golden of a bucket,
    ``drift:<name>`` for a row of a drift slice (``show --trial`` reads it back)."""
    return "goldens" if kind == "bucket" else f"drift:{slice_}"


def decide(item: SuiteItem) -> SuiteItem:
    """``item`` with its outcome and ``passed`` from its stored answer (pure scoring)."""
    from gitevals.run.scoring import decide_grader

    if item["error"] is not None:
        return {**item, "outcome": None, "passed": False}
    outcome = decide_grader({"name": item["grader"]}, item["answer"])
    return {**item, "outcome": outcome, "passed": outcome["passed"]}


def slices(items: list[SuiteItem]) -> list[SliceRate]:
    """One rate per slice, sorted by kind (buckets first) then name."""
    out: dict[tuple[int, str], SliceRate] = {}
    for it in items:
        k = (KINDS.index(it["kind"]) if it["kind"] in KINDS else len(KINDS), it["slice"])
        s = out.setdefault(k, {"kind": it["kind"], "name": it["slice"], "grader": it["grader"],
                               "passed": 0, "total": 0, "errors": 0})
        if s["grader"] != it["grader"]:
            s["grader"] = None  # a drift slice graded per row by its bucket's grader
        s["total"] += 1
        s["passed"] += it["passed"]
        s["errors"] += _lost(it)
    return [out[k] for k in sorted(out)]


def _lost(item: SuiteItem) -> int:
    outcome = item["outcome"]
    return int(item["error"] is not None or (outcome is not None and outcome["error"] is not None))


def rescore(part: Goldens, mapping: Mapping[str, str] | None = None) -> Goldens:
    """Every item decided again from its stored answer; with ``mapping`` (the goldens
    graders of ``score --rules REV``), a golden whose bucket REV grades with another
    grader has no answer to decide by: it fails as ``grader_missing``."""
    items = []
    for it in part["items"]:
        want = mapping.get(it["slice"]) if mapping is not None and it["kind"] == "bucket" else None
        if want is not None and want != it["grader"]:
            it = {**it, "grader": want, "answer": None}
        items.append(decide(it))
    graders = dict(mapping) if mapping is not None else part["graders"]
    return {**part, "graders": graders, "items": items, "slices": slices(items)}


def failing(part: Goldens, advisory: frozenset[str] = frozenset()) -> bool:
    """True when any item did not pass (``run``/``show``/``score`` exit 1), leaving out
    what an ``advisory`` (uncalibrated) judge grader decided."""
    return any(not it["passed"] and not not_counted(it, advisory) for it in part["items"])


def not_counted(item: SuiteItem, advisory: frozenset[str]) -> bool:
    """An item that failed by the answer of an ``advisory`` grader (not by an error of
    the target): shown, never counted, as a case's advisory grader is."""
    return item["error"] is None and item["grader"] in advisory


def rate(s: SliceRate) -> float | None:
    """The slice's pass rate (0..1), None when it has no item."""
    return s["passed"] / s["total"] if s["total"] else None
