"""What ``status`` needs, read from a ``Tree`` (a revision, the index or the working
tree): the grader's source and blob, and its committed record. Reads, never imports."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from gitevals.calibration.record import against_labels, labels_path, parse, path_of, verify
from gitevals.calibration.status import Status, status
from gitevals.git.trees import Tree
from gitevals.settings import Settings


def _valid(name: str) -> bool:
    file, dot, fn = name.partition(".")
    return bool(dot) and file.isidentifier() and fn.isidentifier()


def grader_status(tree: Tree, settings: Settings, name: str, now: datetime,
                  sources: dict[str, tuple[str, bytes] | None] | None = None) -> Status:
    """The calibration status of grader ``name`` in ``tree``; ``sources`` keeps each
    module's blob and bytes across calls (a module of many graders is read once)."""
    from gitevals.graderfile import asks_judge

    file, _, fn = name.partition(".")
    gpath = f"{settings.root}/graders/{file}.py"
    sources = {} if sources is None else sources
    if gpath not in sources:
        entry = tree.entry(gpath)
        data = tree.read(gpath) if entry is not None else None
        sources[gpath] = (entry.sha, data) if entry is not None and data is not None else None
    found = sources[gpath]
    blob, source = found if found is not None else (None, None)
    asks = source is not None and asks_judge(source, fn)
    data = tree.read(path_of(settings.root, name)) if asks else None
    record, problem = parse(data) if data is not None else (None, None)
    if record is not None:
        where = path_of(settings.root, name)
        problem = verify(record, name, now) or against_labels(
            record, _labels(tree, labels_path(record), sources), where)
        record = None if problem is not None else record
    if record is not None and blob == record.get("grader_blob"):
        from gitevals.graderimports import closure

        pinned = record.get("grader_closure")
        if pinned != closure(tree, [gpath], settings.root):
            blob = None  # a file the grader imports changed: not the grader measured
    return status(name, asks, blob, settings.judge, record, problem, now)


def _labels(tree: Tree, path: str | None,
            sources: dict[str, tuple[str, bytes] | None]) -> bytes | None:
    """The labels file ``path`` of ``tree`` (kept in ``sources``), or None."""
    if path is None or path.startswith("/") or ".." in path.split("/"):
        return None
    key = f"labels:{path}"
    if key not in sources:
        data = tree.read(path)
        sources[key] = ("", data) if data is not None else None
    found = sources[key]
    return found[1] if found is not None else None


def statuses(tree: Tree, settings: Settings, names: Iterable[str], now: datetime
             ) -> dict[str, Status]:
    """The status of every well-formed grader name of ``names``, sorted by name."""
    sources: dict[str, tuple[str, bytes] | None] = {}
    return {n: grader_status(tree, settings, n, now, sources)
            for n in sorted(set(names)) if _valid(n)}
