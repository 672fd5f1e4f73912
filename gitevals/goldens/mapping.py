"""Lint of ``[tool.gitevals.goldens] graders``: one grader per bucket (GE610-GE619).

Pure: the settings text, a summary of ``goldens.jsonl`` (``summarize``) and the
grader modules' indexes (``gitevals.lint.graders.index_module``: parsed, never
imported) in, findings out. A mapped grader resolves through the one resolver lint
uses for cases (``gitevals.lint.graders.resolve``), so its GE502-GE509 point at the
settings line that names it.

- GE610 a bucket of goldens.jsonl has no grader   - GE613 a row's input cannot be sent
- GE611 a row has no bucket (once any is mapped)  - GE614 graders mapped, no goldens.jsonl
- GE612 a mapped bucket has no row (warning)    - GE615 one grader, several buckets (warning)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypedDict

from gitevals.findings import Finding
from gitevals.goldens.rows import bucket, rows, turns
from gitevals.lint.graders import Index, Ref, resolve


class Summary(TypedDict):
    """What the mapping lint needs of goldens.jsonl (small, cached by blob SHA)."""

    buckets: dict[str, int]   # bucket -> line of its first row
    unbucketed: list[int]     # [first line, count] of rows without a bucket, or []
    unsendable: list[int]     # lines whose input is not a string or a list of strings


def summarize(data: bytes) -> Summary:
    """The buckets of ``data`` (goldens.jsonl) with where each first appears."""
    buckets: dict[str, int] = {}
    unbucketed: list[int] = []
    unsendable: list[int] = []
    for line, row in rows(data):
        b = bucket(row)
        if b is None:
            unbucketed = [unbucketed[0], unbucketed[1] + 1] if unbucketed else [line, 1]
        else:
            buckets.setdefault(b, line)
        if turns(row) is None:
            unsendable.append(line)
    return {"buckets": buckets, "unbucketed": unbucketed, "unsendable": unsendable}


def lint_mapping(mapping: Mapping[str, str], settings_path: str, settings_text: str,
                 goldens_path: str, summary: Summary | None,
                 indexes: Mapping[str, Index | None], root: str) -> list[Finding]:
    """Every problem of the bucket -> grader mapping (nothing when none is set)."""
    if not mapping:
        return []
    out: list[Finding] = []
    for name, grader in sorted(mapping.items()):
        line, col = grader_position(settings_text, name)
        found = resolve(Ref(grader, settings_path, line, col), root, indexes)
        if found is not None:
            out.append(found)
    out += _shared(mapping, settings_path, settings_text)
    if summary is None:
        line, col = grader_position(settings_text, next(iter(sorted(mapping))))
        return [*out, Finding(settings_path, line, col, "GE614",
                              f"graders are mapped to buckets but {goldens_path} does not "
                              "exist; add the goldens (one JSON object a line) or remove "
                              "[tool.gitevals.goldens] graders")]
    return out + _rows(mapping, settings_path, settings_text, goldens_path, summary)


def _rows(mapping: Mapping[str, str], settings_path: str, settings_text: str,
          goldens_path: str, summary: Summary) -> list[Finding]:
    out: list[Finding] = []
    mapped = ", ".join(sorted(mapping))
    for name, line in sorted(summary["buckets"].items()):
        if name not in mapping:
            out.append(Finding(goldens_path, line, 1, "GE610",
                               f"bucket {name!r} has no grader: map it in "
                               f"[tool.gitevals.goldens] graders ({name} = \"file.function\"); "
                               f"mapped now: {mapped}"))
    if summary["unbucketed"]:
        line, count = summary["unbucketed"]
        more = f" (and {count - 1} more row{'s' * (count > 2)})" if count > 1 else ""
        out.append(Finding(goldens_path, line, 1, "GE611",
                           f"row has no \"bucket\"{more}: once buckets are mapped to graders, "
                           f"every golden needs one; give it one of {mapped}"))
    for line in summary["unsendable"][:20]:
        out.append(Finding(goldens_path, line, 1, "GE613",
                           "\"input\" is not a string or a non-empty list of strings, so it "
                           "cannot be sent to the target; write the user turn(s) there"))
    for name in sorted(set(mapping) - set(summary["buckets"])):
        line, col = grader_position(settings_text, name)
        out.append(Finding(settings_path, line, col, "GE612",
                           f"bucket {name!r} is mapped to a grader but no golden is in it; "
                           "remove the mapping or add its goldens", "warning"))
    return out


def _shared(mapping: Mapping[str, str], settings_path: str, settings_text: str
            ) -> list[Finding]:
    """GE615 (a warning) for a grader mapped to more than one bucket, at the second
    bucket naming it: each bucket is one failure mode with its own grader, so a pass
    rate per bucket says which mode moved (one grader judging two says it twice)."""
    buckets: dict[str, list[str]] = {}
    for name, grader in sorted(mapping.items()):
        buckets.setdefault(grader, []).append(name)
    out = []
    for grader, names in sorted(buckets.items()):
        if len(names) > 1:
            line, col = grader_position(settings_text, names[1])
            out.append(Finding(settings_path, line, col, "GE615",
                               f"grader {grader} is mapped to {len(names)} buckets "
                               f"({', '.join(names)}): one grader per bucket, so each "
                               "bucket's pass rate measures its own failure mode; give each "
                               "bucket a grader of its own (a thin wrapper function is "
                               "enough), or merge the buckets", "warning"))
    return out


def grader_position(text: str, bucket_name: str) -> tuple[int, int]:
    """Line and column of the grader named for ``bucket_name`` in the settings text (the
    inline table ``graders = {b = "f.g"}`` or a ``[...goldens.graders]`` table); the
    ``graders`` line, else 1:1, when it cannot be found (tomllib keeps no positions)."""
    lines = text.splitlines()
    key = re.compile(rf"""(?:^|[{{,\s])["']?{re.escape(bucket_name)}["']?\s*=\s*(["'])""")
    start = next((i for i, ln in enumerate(lines)
                  if re.match(r"\s*(\[.*goldens.*\]|graders\s*=)", ln)), None)
    if start is None:
        return 1, 1
    for i in range(start, len(lines)):
        m = key.search(lines[i])
        if m:
            return i + 1, m.start(1) + 1
    return start + 1, 1
