"""Reporters for ``gitevals goldens stats`` and ``leak-check``: finished values in, text
out. Names, ids and paths come from files: printed through ``visible``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitevals.text import visible

if TYPE_CHECKING:
    from gitevals.goldens.doctor import Item
    from gitevals.goldens.leak import Index, Leak, Unreadable
    from gitevals.goldens.stats import Floor, Priority, Stats

_MARK = {True: "ok", False: "missing", None: "note"}


def stats_text(stats: Stats, path: str, label: str) -> str:
    """Counts per bucket, split and tag, then each floor: ok, missing or a note."""
    lines = [f"{visible(path)} ({visible(label)}): {stats.items:,} items, "
             f"{len(stats.bucket_names)} buckets"]
    if stats.unreadable:
        lines.append(f"  {stats.unreadable:,} lines are not JSON objects (not counted): "
                     "`gitevals lint` says why")
    for title, counts in (("bucket", stats.buckets), ("split", stats.splits)):
        lines += ["", f"{title}:", *_counts(counts, f"(no {title})")]
    lines += ["", "tag:", *(_counts(stats.tags, "") if stats.tags else ["  (no tags)"])]
    lines += ["", "floors (Phase 0):", *(_floor(f) for f in stats.floors())]
    if ranked := stats.priority():
        lines += ["", "priority (frequency × severity × value):", *_priority(ranked)]
    return "\n".join(lines) + "\n"


def _counts(counts: dict[str, int] | dict[str | None, int], none: str) -> list[str]:
    rows = sorted(((visible(k) if k is not None else none, v) for k, v in counts.items()),
                  key=lambda kv: (kv[0].startswith("(no "), kv[0]))
    width = max((len(k) for k, _ in rows), default=0)
    return [f"  {k:<{width}}  {v:>7,}" for k, v in rows]


def _priority(ranked: list[Priority]) -> list[str]:
    """The ranked buckets as a table; then how many rows lacked a weight (counted as 1)."""
    names = [visible(p.bucket) if p.bucket is not None else "(no bucket)" for p in ranked]
    width = max(len(n) for n in [*names, "bucket"])
    out = [f"  {'bucket':<{width}}  {'rows':>7}  {'severity':>8}  {'value':>8}  "
           f"{'priority':>9}"]
    out += [f"  {n:<{width}}  {p.rows:>7,}  {p.severity:>8.3g}  {p.value:>8.3g}  "
            f"{p.priority:>9.4g}" for n, p in zip(names, ranked, strict=True)]
    total = sum(p.rows for p in ranked)
    for what, lack in (("severity", sum(p.no_severity for p in ranked)),
                       ("value", sum(p.no_value for p in ranked))):
        if lack:
            out.append(f"  {lack:,} of {total:,} rows lack {what} (a finite number >= 0): "
                       "counted as 1")
    return out


def _floor(f: Floor) -> str:
    text = f"  {_MARK[f.ok]:<7}  {f.name}: {f.have:,} (want {f.want})"
    return f"{text}: {f.note}" if f.note else text


def stats_json(stats: Stats, path: str, label: str) -> str:
    doc = {"path": path, "tree": label, **stats.as_dict()}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass
class LeakReport:
    """What a leak check found across its training files (built while they stream)."""

    goldens_path: str
    tree: str
    goldens: int
    leaks: list[Leak] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    with_field: int = 0  # rows that had the compared field, over every file

    def add(self, name: str, index: Index, lines: Iterable[bytes], column: str) -> None:
        """Scan one training file into this report."""
        from gitevals.goldens.leak import Leak, Lines, scan

        for found in scan(lines, name, index, column):
            if isinstance(found, Lines):
                self.rows[name] = found.read
                self.with_field += found.with_field
            elif isinstance(found, Leak):
                self.leaks.append(found)
            else:
                self.unreadable.append(found)


def leak_text(report: LeakReport) -> str:
    """One ``file:line: ...`` per leaked row and unreadable line, then a summary."""
    g = visible(report.goldens_path)
    lines = []
    for leak in report.leaks:
        what = (f"id {visible(json.dumps(leak.golden.id))}" if leak.by == "id" else
                f"the input of golden {visible(json.dumps(leak.golden.id))}")
        split = f", split {visible(leak.golden.split)}" if leak.golden.split else ""
        lines.append(f"{visible(leak.path)}:{leak.line}: leak: {what} "
                     f"({g}:{leak.golden.line}{split}); drop the row from training data")
    for bad in report.unreadable:
        lines.append(f"{visible(bad.path)}:{bad.line}: unreadable: {visible(bad.why)}; the "
                     "line was skipped, so it was not checked: fix or remove it")
    rows, files = sum(report.rows.values()), len(report.rows)
    verdict = (f"{len(report.leaks):,} leaked row{'s' if len(report.leaks) != 1 else ''}"
               if report.leaks else "no leak")
    skipped = f", {len(report.unreadable):,} unreadable" if report.unreadable else ""
    lines.append(f"{verdict}{skipped} in {rows:,} lines of {files} file"
                 f"{'s' if files != 1 else ''}, against {report.goldens:,} goldens "
                 f"({g}, {visible(report.tree)})")
    return "\n".join(lines) + "\n"


def leak_json(report: LeakReport) -> str:
    doc = {"goldens": {"path": report.goldens_path, "tree": report.tree,
                       "items": report.goldens},
           "files": dict(sorted(report.rows.items())),
           "leaks": [leak.as_dict() for leak in report.leaks],
           "unreadable": [u.as_dict() for u in report.unreadable]}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def doctor_text(items: list[Item], label: str) -> str:
    """One line per item (status, name, what was found), its fix below a missing one."""
    lines = [f"Phase 0 checklist of {visible(label)}:"]
    for i in items:
        lines.append(f"  {i.status:<7}  {i.name:<11}  {visible(i.detail)}")
        if i.fix:
            lines.append(f"  {'':<7}  {'':<11}  fix: {visible(i.fix)}")
        lines += [f"  {'':<7}  {'':<11}  warning: {visible(w)}" for w in i.warnings]
    missing = sum(i.status == "missing" for i in items)
    lines.append(f"not Phase 0 complete: {missing} of {len(items)} missing" if missing
                 else "Phase 0 complete")
    return "\n".join(lines) + "\n"


def doctor_json(items: list[Item], label: str) -> str:
    doc = {"tree": label, "items": [i.as_dict() for i in items],
           "complete": all(i.status != "missing" for i in items)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
