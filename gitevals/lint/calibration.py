"""GE510-GE516: a case (or a goldens bucket) gates on a judge grader that is advisory
(``calibration.status``).

Warnings, at the grader name in the case (or at the bucket's grader in the settings): the
case still lints, but its judge's verdicts (the bucket's pass rate in the goldens gate)
will not count until the grader is calibrated. Read from the linted tree (the grader's
source and blob, the committed record), never imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from gitevals.findings import Finding
from gitevals.git.trees import Tree
from gitevals.lint.graders import RefLike
from gitevals.settings import Settings


def advisory_findings(tree: Tree, settings: Settings, refs: Sequence[RefLike],
                      now: datetime | None = None,
                      effect: str = "its failures will not count") -> list[Finding]:
    """One warning per grader reference whose grader is advisory at ``now`` (default: now);
    ``effect`` says what is not counted."""
    from gitevals.calibration.tree import statuses

    found = statuses(tree, settings, {r.name for r in refs}, now or datetime.now(UTC))
    out = []
    for r in refs:
        st = found.get(r.name)
        if st is not None and st.advisory and st.code is not None:
            out.append(Finding(r.path, r.line, r.col, st.code,
                               f"grader {r.name} asks the judge and is advisory ({effect}): "
                               f"{st.reason}", "warning"))
    return out


def cache_key(tree: Tree, settings: Settings | None, today: str) -> list[str]:
    """What the calibration warnings depend on beyond the linted files: the day, the
    judge settings and the committed records (part of the whole-run cache key)."""
    if settings is None:
        return []
    from gitevals.calibration.record import DIR

    prefix = f"{settings.root}/{DIR}" if settings.root else DIR
    records = sorted(tree.blob_shas(prefix).items())
    return [f"calibration:{today}:{settings.judge!r}",
            *(f"record:{path}:{sha}" for path, sha in records),
            *(f"imports:{path}:{tree.blob_sha(path)}" for path in _closures(tree, records))]


def _closures(tree: Tree, records: list[tuple[str, str]]) -> list[str]:
    """Every file the records' graders imported when calibrated (``grader_closure``): an
    edit to one changes the warnings, so it is part of the key; so is the labels file
    each record was measured on (the record is checked against it)."""
    from gitevals.calibration.record import labels_path, parse

    paths: set[str] = set()
    for path, _ in records:
        data = tree.read(path)
        record = parse(data)[0] if data is not None else None
        pinned = record.get("grader_closure") if record is not None else None
        if isinstance(pinned, dict):
            paths.update(pinned)
        labels = labels_path(record) if record is not None else None
        if labels is not None and not labels.startswith("/") and ".." not in labels.split("/"):
            paths.add(labels)
    return sorted(paths)
