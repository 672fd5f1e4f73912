"""The goldens' bucket table (run, show, score) in text, json and Markdown.

One row per slice -- each bucket, each drift benchmark, the domain-adjacent slice --
with its own pass count and rate: a blended score is never the only figure. Every
name is data from the tree, escaped for the terminal or made inert for Markdown.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gitevals.run.goldens import SliceRate, not_counted, rate
from gitevals.text import md_inert, visible

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gitevals.run.artifact import Run
    from gitevals.run.goldens import Goldens, SuiteItem
    from gitevals.stats.judge_correction import Corrected

    #: (kind, name) -> the slice's judge-corrected rate (``calibration.corrected``)
    Fixed = Mapping[tuple[str, str], Corrected]

HEADER = ("slice", "grader", "passed", "rate", "errors")
#: Goldens that did not pass, listed under the text table (json lists every one).
SHOWN = 10


def slice_cells(s: SliceRate) -> tuple[str, ...]:
    r = rate(s)
    return (f"{s['kind']} {s['name']}", s["grader"] or "(per row)", f"{s['passed']}/{s['total']}",
            "-" if r is None else f"{100 * r:.1f}%", str(s["errors"]))


def goldens_title(part: Goldens) -> str:
    n = len(part["items"])
    picked = f" (buckets {', '.join(part['buckets'])})" if part["buckets"] else ""
    return f"goldens{picked}: {n} item{'s' * (n != 1)}, a pass rate per slice"


def slice_header(fixed: Fixed) -> tuple[str, ...]:
    """The slice table's header: with a judge-corrected column when some slice has one."""
    return (*HEADER, "judge-corrected") if fixed else HEADER


def slice_row(s: SliceRate, fixed: Fixed) -> tuple[str, ...]:
    """A slice's cells, and its judge-corrected rate when some slice has one."""
    from gitevals.calibration.corrected import cell

    if not fixed:
        return slice_cells(s)
    got = fixed.get((s["kind"], s["name"]))
    return (*slice_cells(s), cell(got) if got is not None else "-")


def text(part: Goldens, advisory: frozenset[str] = frozenset(), fixed: Fixed | None = None
         ) -> str:
    """Aligned columns: a title, the header, one row per slice (with its judge-corrected
    rate when ``fixed`` has some); then the goldens that did not pass (those an
    ``advisory`` judge grader failed marked as not counted)."""
    fixed = fixed or {}
    head = slice_header(fixed)
    rows = [head, *(tuple(visible(c) for c in slice_row(s, fixed)) for s in part["slices"])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [visible(goldens_title(part))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in rows]
    failed = [it for it in part["items"] if not it["passed"]]
    for it in failed[:SHOWN]:
        mark = "advisory, not counted: " if not_counted(it, advisory) else ""
        lines.append(visible(f"{mark}not passed: {it['kind']} {it['slice']} id {it['id']} "
                             f"({it['path']}:{it['line']}): {why(it)}"))
    if len(failed) > SHOWN:
        lines.append(f"... and {len(failed) - SHOWN} more not passed (--format json lists all)")
    return "\n".join(lines) + "\n"


def markdown(part: Goldens, fixed: Fixed | None = None) -> str:
    head = slice_header(fixed or {})
    lines = [f"**{md_inert(goldens_title(part))}**", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_inert(c) for c in slice_row(s, fixed or {})) + " |"
              for s in part["slices"]]
    return "\n".join(lines) + "\n"


def as_data(part: Goldens, advisory: frozenset[str] = frozenset(), fixed: Fixed | None = None
            ) -> dict[str, object]:
    """The slices for ``--format json`` (rates as numbers 0..1, or null; the corrected
    rate's fields on a slice ``fixed`` has)."""
    fixed = fixed or {}
    return {"buckets": part["buckets"], "graders": part["graders"],
            "slices": [{**s, "rate": rate(s), **_fixed_json(s, fixed)} for s in part["slices"]],
            "failed": [{"slice": it["slice"], "kind": it["kind"], "id": it["id"],
                        "line": it["line"], "why": why(it),
                        "advisory": not_counted(it, advisory)}
                       for it in part["items"] if not it["passed"]]}


def _fixed_json(s: SliceRate, fixed: Fixed) -> dict[str, object]:
    got = fixed.get((s["kind"], s["name"]))
    return got.as_json() if got is not None else {}


def why(item: SuiteItem) -> str:
    """What failed an item: the error that ended it, else its grader's outcome."""
    if item["error"] is not None:
        return f"{item['error']['kind']}: {item['error']['message']}"
    return item["outcome"]["message"] if item["outcome"] is not None else "not graded"


def with_goldens(artifact: Run, fmt: str, rendered: str) -> str:
    """``rendered`` (the verdict table) with the run's bucket table added, when it has one."""
    from gitevals.calibration.corrected import slice_corrections
    from gitevals.run.scoring import advisory_graders

    part = artifact.get("goldens")
    if part is None:
        return rendered
    advisory = advisory_graders(artifact)
    fixed = slice_corrections(artifact)
    if fmt == "json":
        doc = json.loads(rendered)
        doc["goldens"] = as_data(part, advisory, fixed)
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return rendered + "\n" + markdown(part, fixed)
    if fmt == "text":
        return rendered + "\n" + text(part, advisory, fixed)
    return rendered
