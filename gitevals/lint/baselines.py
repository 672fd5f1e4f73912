"""Committed baselines are checked like every other file of the eval tree (GE640): a
``<root>/baseline-<model>.json`` that is not a gitevals baseline (garbage, a run artifact,
a hand edit that breaks the schema) is a finding where it sits, and doctor does not count
it as the gate token it claims to be. Read through a ``Tree``; nothing runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitevals.findings import Finding

if TYPE_CHECKING:
    from gitevals.git.trees import Tree

#: The largest baseline read (one per model, a few slices each: far below this).
MAX_BYTES = 4 << 20


def baseline_paths(tree: Tree, root: str) -> list[str]:
    """``<root>/baseline-*.json`` directly under the root, sorted."""
    top = f"{root}/" if root else ""
    return sorted(p for p in tree.blob_shas(top)
                  if "/" not in p[len(top):] and p[len(top):].startswith("baseline-")
                  and p.endswith(".json"))


def problem(data: bytes | None) -> str | None:
    """Why ``data`` is not a gitevals baseline; None when it is one."""
    import json

    from gitevals.goldens.gate import Refused, check_baseline

    if data is None:
        return "it cannot be read"
    if len(data) > MAX_BYTES:
        return f"it is over {MAX_BYTES >> 20} MiB"
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({exc})"
    try:
        check_baseline(doc, "")
    except Refused as exc:
        return str(exc).removeprefix(": ").removeprefix("not a gitevals baseline: ")
    return None


def lint_baselines(tree: Tree, root: str) -> list[Finding]:
    """GE640 for each committed baseline file that is not a baseline."""
    out = []
    for path in baseline_paths(tree, root):
        why = problem(tree.read(path))
        if why is not None:
            out.append(Finding(path, 1, 1, "GE640", f"not a gitevals baseline: {why}"))
    return out
