"""A labels file: one JSON object a line, ``id``, ``label`` (pass|fail), and what the
grader receives. Goldens rows with a ``label`` qualify as they are.

A row becomes the ``case`` and ``run`` a grader is called with (DESIGN §3):
``case = {"id", "user": [input...], "expect": []}`` (plus ``expected`` when the row
has one); ``run`` is the row's ``run`` object (missing transcript keys are null or
empty), else ``{"final_answer": output}``, else ``{"final_answer": expected}`` (a
goldens row labelled for its own expected answer).

Pure: bytes in, items out; the first bad line is a ``LabelsError`` naming its
``path:line:col``, what is wrong and what to write instead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from gitevals.errors import UsageError
from gitevals.jsontypes import JSON, JSONObject

#: The labels read as pass and as fail (strings compared without case).
PASS_LABELS = frozenset(("pass", "true"))
FAIL_LABELS = frozenset(("fail", "false"))


class LabelsError(UsageError):
    """A labels file calibrate cannot use (exit 2, one line)."""


@dataclass(frozen=True)
class Item:
    """One labelled item: its id (as text), the human label and the grader's arguments."""

    id: str
    label: bool  # True: pass
    case: JSONObject
    run: JSONObject
    line: int

    def content(self) -> str:
        """What the grader is shown of this item, its id left out, as the first 16 hex
        digits of a SHA-256: an item copied under a new id is the same item, so a
        sealed split it was measured on stays spent (``record.spent``)."""
        shown = {"case": {k: v for k, v in self.case.items() if k != "id"}, "run": self.run}
        text = json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Labels:
    """The items of a labels file, and how many rows had no label (skipped)."""

    items: tuple[Item, ...]
    unlabelled: int


def read_labels(data: bytes, path: str) -> Labels:
    """Every labelled row of ``data``, in file order; ``LabelsError`` at the first bad one."""
    from gitevals import jsonlimits

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise LabelsError(f"{path}:{at}:{col}: not UTF-8; save the labels file as UTF-8") \
            from None
    items: list[Item] = []
    seen: dict[str, int] = {}
    unlabelled = 0
    for n, row_text in enumerate(text.split("\n"), 1):
        if not row_text.strip():
            continue
        try:
            row = jsonlimits.loads(row_text)
        except json.JSONDecodeError as exc:
            raise LabelsError(f"{path}:{n}:{exc.colno}: not JSON ({exc.msg}); write one "
                              "JSON object a line") from None
        except ValueError as exc:
            raise LabelsError(f"{path}:{n}:1: cannot use this row: {exc}") from None
        item = _item(row, path, n)
        if item is None:
            unlabelled += 1
            continue
        if item.id in seen:
            raise LabelsError(f"{path}:{n}:1: id {item.id!r} is already used on line "
                              f"{seen[item.id]}; give every item its own id")
        seen[item.id] = n
        items.append(item)
    return Labels(tuple(items), unlabelled)


def _item(row: JSON, path: str, n: int) -> Item | None:
    """The item of one row, or None when it carries no ``label``."""
    where = f"{path}:{n}:1"
    if not isinstance(row, dict):
        raise LabelsError(f"{where}: a {type(row).__name__}, not an object; write "
                          '{"id": ..., "input": ..., "output": ..., "label": "pass"}')
    if "label" not in row:
        return None
    item_id = row.get("id")
    if isinstance(item_id, bool) or not isinstance(item_id, str | int) or item_id == "":
        raise LabelsError(f"{where}: the row has no usable id (a non-empty string or an "
                          "integer); give every item a unique id")
    return Item(str(item_id), _label(row["label"], where), _case(row), _run(row, where), n)


def _label(value: JSON, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in PASS_LABELS | FAIL_LABELS:
        return value.strip().casefold() in PASS_LABELS
    raise LabelsError(f"{where}: label {value!r} is neither pass nor fail; write "
                      '"label": "pass" or "label": "fail"')


def _case(row: JSONObject) -> JSONObject:
    given = row.get("input")
    if given is None:
        user: list[JSON] = []
    elif isinstance(given, str):
        user = [given]
    elif isinstance(given, list) and all(isinstance(u, str) for u in given):
        user = list(given)
    else:  # structured input (a tool call's arguments...) is passed as JSON text
        user = [json.dumps(given, sort_keys=True, ensure_ascii=False)]
    case: JSONObject = {"id": str(row["id"]), "user": user, "expect": []}
    if "expected" in row:
        case["expected"] = row["expected"]
    return case


def _run(row: JSONObject, where: str) -> JSONObject:
    from gitevals.run.artifact import TRANSCRIPT_KEYS

    given = row.get("run")
    if given is not None and not isinstance(given, dict):
        raise LabelsError(f"{where}: run is a {type(given).__name__}, not an object; write "
                          '"run": {"final_answer": ..., "tool_calls": [...]} or use "output"')
    base: JSONObject = {"final_answer": None, "tool_calls": [], "hooks": [], "error": None,
                        "turns": [], "duration_ms": 0}
    if isinstance(given, dict):
        return {k: given.get(k, base[k]) for k in TRANSCRIPT_KEYS}
    answer = row.get("output", row.get("expected"))
    if answer is not None and not isinstance(answer, str):
        answer = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    return {**base, "final_answer": answer}
