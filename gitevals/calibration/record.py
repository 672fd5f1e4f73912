"""The calibration record: ``<root>/calibration/<file>.<function>.json``.

One record per grader: the numbers of its latest calibration (dev or final), and
``sealed``, every (grader blob, judge model) whose sealed test split was already
measured -- kept across rewrites, so a dev run after a final one cannot reopen it.
The record is committed with the tree: lint and run read it from the revision they
check. Building and reading are pure; ``calibrate`` writes it (``files.write_atomic``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gitevals.calibration.metrics import Measured, Rate
from gitevals.jsontypes import JSON, JSONObject

FORMAT = "gitevals-calibration/1"
DIR = "calibration"


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


def build(ctx: Context, measured: Measured, final: bool, previous: JSONObject | None
          ) -> JSONObject:
    """The record of one calibration, carrying forward the ``sealed`` list of ``previous``."""
    sealed = sealed_uses(previous)
    if final:
        sealed.append({"grader_blob": ctx.grader_blob, "judge_model": ctx.judge_model,
                       "date": ctx.date})
    return {
        "format": FORMAT, "grader": ctx.grader, "grader_blob": ctx.grader_blob,
        "commit": ctx.commit, "judge_model": ctx.judge_model, "base_url": ctx.base_url,
        "judge_family": ctx.judge_family, "date": ctx.date, "final": final,
        "split": "test" if final else "dev",
        "labels": {"path": ctx.labels_path, "sha256": ctx.labels_sha256},
        "splits": dict(ctx.sizes),
        "tpr": _rate(measured.tpr), "tnr": _rate(measured.tnr),
        "errors": {"count": len(measured.errors),
                   "items": [{"id": i, "message": m} for i, m in measured.errors]},
        "sealed": _sorted(sealed),
    }


def _sorted(uses: list[JSONObject]) -> list[JSON]:
    def key(u: JSONObject) -> tuple[str, str]:
        return str(u.get("date")), str(u.get("grader_blob"))

    ordered: list[JSON] = [*sorted(uses, key=key)]
    return ordered


def _rate(rate: Rate) -> JSONObject:
    out: JSONObject = json.loads(json.dumps(rate.as_dict()))  # plain JSON values
    return out


def dumps(record: JSONObject) -> str:
    """The canonical text of a record (sorted keys, so a re-run diffs cleanly)."""
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


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


def parse(data: bytes) -> tuple[JSONObject | None, str | None]:
    """A record read from a tree (untrusted): the record, or None and why it is unusable."""
    try:
        doc: JSON = json.loads(data)
    except (ValueError, RecursionError):
        return None, "it is not JSON"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None, f"it is not a {FORMAT} record"
    for key, kind in (("grader_blob", str), ("judge_model", str), ("date", str),
                      ("final", bool), ("tpr", dict), ("tnr", dict)):
        if not isinstance(doc.get(key), kind):
            return None, f"its {key!r} is missing or of the wrong type"
    return doc, None
