"""The calibration record: ``<root>/calibration/<file>.<function>.json``.

One record per grader: the numbers of its latest calibration (dev or final), and
``sealed``, every final measurement of the sealed test split with the items it consumed
-- kept across rewrites, so a dev run after a final one cannot reopen it. The split is
spent per grader name: whatever the grader blob or judge model later, an item a final
consumed is never measured by another final (``spent``).
The record is committed with the tree: lint and run read it from the revision they
check. Building and reading are pure; ``calibrate`` writes it (``files.write_atomic``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from gitevals import jsontext
from gitevals.calibration.metrics import MIN_ITEMS, RATIOS, Measured, Rate, split_of, wilson
from gitevals.jsontypes import JSON, JSONObject

FORMAT = "gitevals-calibration/2"
#: Records written before items and the grader's closure were kept: read for their
#: ``sealed`` list (a split once spent stays spent), never as a calibration.
OLD_FORMATS = frozenset({"gitevals-calibration/1"})
DIR = "calibration"
#: A record dated this much after the moment it is read is from the future.
CLOCK_SKEW = timedelta(minutes=5)


def path_of(root: str, grader: str) -> str:
    """Where the record of ``grader`` (``file.function``) lives in the tree."""
    return f"{root}/{DIR}/{grader}.json" if root else f"{DIR}/{grader}.json"


@dataclass(frozen=True)
class Context:
    """What one calibration measured: which grader, blob, judge and labels, when."""

    grader: str
    grader_blob: str
    commit: str
    judge_model: str
    base_url: str
    judge_family: str | None
    date: str  # UTC, 2026-11-30T21:00:00Z
    labels_path: str
    labels_sha256: str
    sizes: dict[str, int]
    #: The grader module and every tree file it imports: path -> blob (graderimports.py).
    closure: dict[str, str]


def item_rows(labels: Mapping[str, bool], said: Mapping[str, bool | str]) -> list[JSON]:
    """The measured items as the record lists them, sorted by id: id, the human label,
    what the grader said (``pass``/``fail``/``error``). The rates are recounted from
    these when the record is read."""
    rows: list[JSON] = [{"id": i, "label": "pass" if labels[i] else "fail",
                         "said": "error" if isinstance(said[i], str)
                         else "pass" if said[i] else "fail"} for i in sorted(said)]
    return rows


def items_digest(items: list[JSON]) -> str:
    """The SHA-256 of the listed items' canonical JSON: the content hash of the labels
    (and answers) the rates stand on."""
    text = json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def build(ctx: Context, measured: Measured, final: bool, previous: JSONObject | None,
          items: list[JSON], consumed: Mapping[str, str] | None = None) -> JSONObject:
    """The record of one calibration, carrying forward the ``sealed`` list of ``previous``;
    a final one adds its use of the split with the items it ``consumed`` (id -> content,
    ``labels.Item.content``)."""
    sealed = sealed_uses(previous)
    if final:
        rows: list[JSON] = [{"id": i, "content": c} for i, c in sorted((consumed or {}).items())]
        sealed.append({"grader_blob": ctx.grader_blob, "judge_model": ctx.judge_model,
                       "date": ctx.date, "labels_sha256": ctx.labels_sha256,
                       "consumed": rows})
    return {
        "format": FORMAT, "grader": ctx.grader, "grader_blob": ctx.grader_blob,
        "commit": ctx.commit, "judge_model": ctx.judge_model, "base_url": ctx.base_url,
        "judge_family": ctx.judge_family, "date": ctx.date, "final": final,
        "split": "test" if final else "dev",
        "labels": {"path": ctx.labels_path, "sha256": ctx.labels_sha256,
                   "items_sha256": items_digest(items)},
        "items": items, "grader_closure": dict(sorted(ctx.closure.items())),
        "splits": dict(ctx.sizes),
        "tpr": _rate(measured.tpr), "tnr": _rate(measured.tnr),
        "errors": {"count": len(measured.errors),
                   "items": [{"id": i, "message": m} for i, m in measured.errors]},
        "sealed": _sorted(sealed),
    }


def _sorted(uses: list[JSONObject]) -> list[JSON]:
    """By date; within a day in the order they were measured (the sort is stable and
    each new final is appended), not by blob id, which says nothing of time."""
    def key(u: JSONObject) -> str:
        return str(u.get("date"))

    ordered: list[JSON] = [*sorted(uses, key=key)]
    return ordered


def _rate(rate: Rate) -> JSONObject:
    out: JSONObject = json.loads(json.dumps(rate.as_dict()))  # plain JSON values
    return out


def dumps(record: JSONObject) -> str:
    """The canonical text of a record (sorted keys, so a re-run diffs cleanly)."""
    return jsontext.dumps(record) + "\n"


def sealed_uses(record: JSONObject | None) -> list[JSONObject]:
    """Every earlier measurement of the sealed test split the record remembers."""
    uses = record.get("sealed") if record is not None else None
    if not isinstance(uses, list):
        return []
    return [dict(u) for u in uses if isinstance(u, dict)]


def already_sealed(record: JSONObject | None, grader_blob: str, judge_model: str
                   ) -> JSONObject | None:
    """The earlier final measurement of this grader blob with this judge model, or None."""
    for use in sealed_uses(record):
        if use.get("grader_blob") == grader_blob and use.get("judge_model") == judge_model:
            return use
    return None


def final_use(record: JSONObject | None) -> JSONObject | None:
    """A final record's own measurement as a use of the sealed split, consuming the test
    items it lists (so a version whose ``sealed`` list was stripped still spends them);
    None for a dev record. A ``/1`` record lists no items: its use is matched by blob and
    judge model only (``spent``)."""
    if record is None or record.get("final") is not True:
        return None
    use: JSONObject = {k: record.get(k) for k in ("grader_blob", "judge_model", "date")}
    items = record.get("items")
    if isinstance(items, list):
        use["consumed"] = [{"id": r["id"]} for r in items
                           if isinstance(r, dict) and isinstance(r.get("id"), str)]
    return use


@dataclass(frozen=True)
class Spent:
    """A final measurement that consumed some of the items a new final would measure."""

    use: JSONObject
    items: tuple[str, ...]  # the ids asked for that it consumed (by id or by content)


def spent(uses: Iterable[JSONObject], grader_blob: str, judge_model: str,
          asked: Mapping[str, str]) -> Spent | None:
    """The earliest of ``uses`` (uses of one grader's sealed split, read from an untrusted
    record) that consumed an item of ``asked`` (test item id -> content), or None.

    Whatever the grader blob or judge model since: the split is spent per grader name,
    so a new final needs items never measured, by id or by content (an item renamed is
    still the item). A use written before consumed items were kept has no ``consumed``:
    it spends what it did then, its grader blob with its judge model."""
    for use in sorted(uses, key=lambda u: str(u.get("date"))):
        rows = use.get("consumed")
        if isinstance(rows, list):
            done = [r for r in rows if isinstance(r, dict)]
            ids = {r.get("id") for r in done}
            contents = {r.get("content") for r in done if isinstance(r.get("content"), str)}
            hits = tuple(sorted(i for i, c in asked.items() if i in ids or c in contents))
        elif use.get("grader_blob") == grader_blob and use.get("judge_model") == judge_model:
            hits = tuple(sorted(asked))
        else:
            hits = ()
        if hits:
            return Spent(use, hits)
    return None


def parse(data: bytes) -> tuple[JSONObject | None, str | None]:
    """A record read from a tree (untrusted): the record, or None and why it is unusable."""
    try:
        doc: JSON = json.loads(data)
    except (ValueError, RecursionError):
        return None, "it is not JSON"
    if not isinstance(doc, dict) or (doc.get("format") != FORMAT
                                     and doc.get("format") not in OLD_FORMATS):
        return None, f"it is not a {FORMAT} record"
    for key, kind in (("grader_blob", str), ("judge_model", str), ("date", str),
                      ("final", bool), ("tpr", dict), ("tnr", dict)):
        if not isinstance(doc.get(key), kind):
            return None, f"its {key!r} is missing or of the wrong type"
    return doc, None


# -- checking a record against what it claims ------------------------------------------

_SHA = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def verify(record: JSONObject, grader: str, now: datetime) -> str | None:
    """Why a parsed record cannot stand as a calibration, or None. Untrusted: a record is
    a JSON file anyone can commit, so every number is recounted from the items it lists
    (each id in the split it claims, the split's size, TPR/TNR hits and counts, the
    Wilson bounds, the errors), the labels' content hash is recomputed, and its date may
    not lie in the future. Forging one then takes a labelled item list consistent with
    every number, not an edited rate; see docs/calibration.md for what stays open."""
    checks = (_shape, _items_consistent, _rates_consistent)
    for check in checks:
        why = check(record, grader, now)
        if why is not None:
            return why
    return None


def _shape(record: JSONObject, grader: str, now: datetime) -> str | None:
    if record.get("format") in OLD_FORMATS:
        return (f"it was written by an older gitevals ({record.get('format')}) without "
                "its items and the grader's imports")
    if record.get("grader") != grader:
        return f"it is the record of {record.get('grader')!r}, not of {grader!r}"
    closure = record.get("grader_closure")
    blob = record.get("grader_blob")
    if not isinstance(blob, str) or not _SHA.match(blob) or not isinstance(closure, dict) \
            or not all(isinstance(v, str) and _SHA.match(v) for v in closure.values()) \
            or blob not in closure.values():
        return "its grader_blob or grader_closure is not a set of git blob ids holding it"
    if not record.get("judge_model") or record.get("split") != (
            "test" if record.get("final") is True else "dev"):
        return "its judge_model or split is missing or does not match final"
    when = _date(record.get("date"))
    if when is None:
        return "its date is not a UTC time like 2026-11-30T21:00:00Z"
    if when > now + CLOCK_SKEW:
        return f"it is dated {record.get('date')}, in the future"
    labels = record.get("labels")
    if not isinstance(labels, dict) or not all(
            isinstance(labels.get(k), str) and _SHA256.match(str(labels.get(k)))
            for k in ("sha256", "items_sha256")):
        return "its labels hashes are missing"
    return None


def _date(value: JSON) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _items_consistent(record: JSONObject, grader: str, now: datetime) -> str | None:
    items, split, splits = record.get("items"), record.get("split"), record.get("splits")
    if not isinstance(items, list) or not isinstance(splits, dict):
        return "it lists no measured items"
    names = [name for name, _ in RATIOS]
    counts = {n: v for n in names if type(v := splits.get(n)) is int and v >= 0}
    if sorted(splits) != sorted(names) or len(counts) != len(names):
        return "its splits are not counts of train, dev and test"
    if sum(counts.values()) < MIN_ITEMS:
        return f"it claims fewer than {MIN_ITEMS} labelled items"
    ids = []
    for row in items:
        if not (isinstance(row, dict) and isinstance(row.get("id"), str)
                and row.get("label") in ("pass", "fail")
                and row.get("said") in ("pass", "fail", "error")):
            return "an item is not {id, label pass|fail, said pass|fail|error}"
        if split_of(str(row["id"])) != split:
            return f"item {str(row['id'])[:40]!r} is not in the {split} split"
        ids.append(str(row["id"]))
    if ids != sorted(set(ids)):
        return "its items are not unique ids in order"
    if len(ids) != splits.get(str(split)):
        return (f"it lists {len(ids)} items of the {split} split, not the "
                f"{splits.get(str(split))} it counts")
    labels = record.get("labels")
    if not isinstance(labels, dict) or labels.get("items_sha256") != items_digest(items):
        return "the content hash of its items is not theirs"
    return None


def _rates_consistent(record: JSONObject, grader: str, now: datetime) -> str | None:
    listed = record.get("items")
    items = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
    judged = [r for r in items if r.get("said") != "error"]
    expect = {
        "tpr": Rate(sum(r["label"] == "pass" and r["said"] == "pass" for r in judged),
                    sum(r["label"] == "pass" for r in judged)),
        "tnr": Rate(sum(r["label"] == "fail" and r["said"] == "fail" for r in judged),
                    sum(r["label"] == "fail" for r in judged))}
    for key, rate in expect.items():
        got = record.get(key)
        if not isinstance(got, dict) or not _same_rate(got, rate):
            return (f"its {key.upper()} is not what its items give ({rate.hits} of {rate.of})")
    if not expect["tpr"].of and not expect["tnr"].of:
        return "no item was judged (0 of 0)"
    errors = record.get("errors")
    if not isinstance(errors, dict) or errors.get("count") != len(items) - len(judged):
        return "its error count is not what its items give"
    return None


def _same_rate(got: JSONObject, rate: Rate) -> bool:
    """``got`` (a record's rate) is ``rate``: counts exact, value and bounds finite,
    within [0, 1] and equal to what the counts give."""
    if got.get("hits") != rate.hits or got.get("of") != rate.of:
        return False
    bounds = wilson(rate.hits, rate.of)
    want = (rate.value, *(bounds or (None, None)))
    for key, value in zip(("value", "low", "high"), want, strict=True):
        have = got.get(key)
        if value is None:
            if have is not None:
                return False
        elif not (isinstance(have, int | float) and not isinstance(have, bool)
                  and math.isfinite(have) and 0 <= have <= 1
                  and math.isclose(have, value, abs_tol=1e-9)):
            return False
    return True


def labels_path(record: JSONObject) -> str | None:
    """The labels file a record says it was measured on (a path in the repository)."""
    labels = record.get("labels")
    path = labels.get("path") if isinstance(labels, dict) else None
    return path if isinstance(path, str) and path else None


def against_labels(record: JSONObject, data: bytes | None, where: str) -> str | None:
    """Why a record (``where``, already ``verify``-ed) does not stand on the committed
    labels ``data`` (None: its labels file is not in the tree), or None. Every item it
    lists must be a labelled item of that file, with the same label, and its ``splits``
    must be the file's own counts: a record cannot claim 200 items of a file of 120."""
    from gitevals.calibration.labels import LabelsError, read_labels
    from gitevals.calibration.metrics import sizes

    path = labels_path(record) or "?"
    fix = "commit the labels file it was measured on, or calibrate again"
    if data is None:
        return f"{where} was measured on {path}, which is not in the tree; {fix}"
    try:
        labels = read_labels(data, path)
    except LabelsError as exc:
        return f"{where} was measured on {path}, which does not read ({exc}); {fix}"
    by_id = {item.id: item.label for item in labels.items}
    splits, held = record.get("splits"), sizes(by_id)
    if splits != held and isinstance(splits, dict):
        claimed = {name: int(v) if isinstance(v, int) else 0 for name, v in splits.items()}
        return (f"{where} counts {sum(claimed.values())} labelled items ({_counts(claimed)}), "
                f"{path} holds {sum(held.values())} ({_counts(held)}); {fix}")
    listed = record.get("items")
    for row in listed if isinstance(listed, list) else []:
        if not isinstance(row, dict):
            continue
        item = str(row.get("id"))
        if item not in by_id:
            return f"{where} lists item {item[:40]!r}, which {path} does not hold; {fix}"
        if ("pass" if by_id[item] else "fail") != row.get("label"):
            return (f"{where} has item {item[:40]!r} labelled {row.get('label')}, {path} "
                    f"labels it {'pass' if by_id[item] else 'fail'}; {fix}")
    return None


def _counts(splits: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {splits.get(name, 0)}" for name, _ in RATIOS)
