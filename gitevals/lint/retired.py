"""Golden ids are never reused: ``goldens.jsonl`` against the commit before it.

An id that leaves ``goldens.jsonl`` must be listed in ``<root>/goldens.retired`` (one id
a line) by the same commit, an id listed there may not be in ``goldens.jsonl`` again,
and a retired id stays retired. Codes:

- GE620 an id left goldens.jsonl and is not in goldens.retired
- GE621 a row of goldens.jsonl carries a retired id
- GE622 goldens.retired is not UTF-8 text
- GE623 an id was taken out of goldens.retired

What "before" means is ``previous_tree``: HEAD for the index (the commit hook) and the
working tree, a revision's first parent for ``--rev``; the publish check also compares
with the last published state (``publish_check.published_before``: the nearest
first-parent ancestor that a tag or a remote ref points to), so an unrelated commit on
top of a removal does not hide it. When
neither file changed since then there is nothing to compare and nothing is read: the
one-file commit hook pays four blob-SHA lookups (benchmarks/bench_lint.py). When one
did, only the lines that differ are parsed, unless an id left or the retired list
changed (then every row's id is read, to be exact about where an id still is).

Ids compare as ``lint.goldens`` compares them for duplicates: a string id as it is,
any other as its JSON (``7`` and ``"7"`` are one id); a line of goldens.retired is
the id it holds, surrounding whitespace stripped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.findings import Finding

if TYPE_CHECKING:
    from gitevals.git.trees import Tree

GOLDENS = "goldens.jsonl"
RETIRED = "goldens.retired"


@dataclass(frozen=True)
class Side:
    """The two files at one point in history (None: absent), and where that is."""

    goldens: bytes | None
    retired: bytes | None
    label: str = ""


def lint_retired(tree: Tree, root: str, since: Tree | None = None) -> list[Finding]:
    """The findings of ``tree``'s goldens ids against the commit before it, or against
    ``since`` when given (publish-check: the last published state, so a commit on top
    cannot hide a removal or a reuse from the check). Reads only through the trees;
    nothing when neither file changed."""
    from gitevals.git.trees import previous_tree

    g, r = _path(root, GOLDENS), _path(root, RETIRED)
    now = (tree.blob_sha(g), tree.blob_sha(r))
    before_tree = since if since is not None else previous_tree(tree)
    if before_tree is None:
        if now[1] is None:  # no retired ids and nothing before: nothing to check
            return []
        before = None
    else:
        if (before_tree.blob_sha(g), before_tree.blob_sha(r)) == now:
            return []
        before = Side(before_tree.read(g), before_tree.read(r), before_tree.label)
    now_side = Side(tree.read(g), tree.read(r), tree.label)
    if (now[0] and now_side.goldens is None) or (now[1] and now_side.retired is None):
        return []  # a link or an oversize file: GE801 / GE104 say so, nothing to compare
    return compare(before, now_side, g, r)


def _path(root: str, name: str) -> str:
    return f"{root}/{name}" if root else name


def compare(before: Side | None, now: Side, goldens_path: str, retired_path: str
            ) -> list[Finding]:
    """Every finding of ``now`` against ``before`` (None: no commit before). Pure."""
    retired, out = parse_retired(now.retired, retired_path)
    old_retired = parse_retired(before.retired, retired_path)[0] if before else {}
    new_lines = _lines(now.goldens)
    old_lines = _lines(before.goldens) if before else []
    old_set, new_set = set(old_lines), set(new_lines)
    fresh = _ids((n, line) for n, line in enumerate(new_lines, 1) if line not in old_set)
    gone = _ids((n, line) for n, line in enumerate(old_lines, 1) if line not in new_set)
    for key in fresh:  # ids on new or edited lines are still here
        gone.pop(key, None)
    # Ids that may sit on an unchanged line: one that left an edited line, and a newly
    # retired one (at a root commit, every retired one).
    wanted = {*gone, *(k for k in retired if before is None or k not in old_retired)}
    present = _present(new_lines, now.goldens or b"", wanted, fresh)
    end = len(_retired_lines(now.retired)) + 1
    where = f" in {before.label}" if before and before.label else " before"
    for key, old_n in sorted(gone.items(), key=lambda kv: kv[1]):
        if key not in present and key not in retired:
            out.append(Finding(retired_path, end, 1, "GE620", (
                f"id {_show(key)} left {goldens_path} (line {old_n}{where}) and is not "
                f"retired: add it to {retired_path}, one id a line, in this same commit "
                "(or restore the row)")))
    for key, n in sorted(present.items(), key=lambda kv: kv[1]):
        if key in retired:
            out.append(Finding(goldens_path, n, _id_col(new_lines[n - 1]), "GE621", (
                f"id {_show(key)} was retired ({retired_path} line {retired[key]}); ids "
                "are never reused: give this row a new id")))
    for key, old_n in sorted(old_retired.items(), key=lambda kv: kv[1]):
        if key not in retired:
            out.append(Finding(retired_path, end, 1, "GE623", (
                f"id {_show(key)} was taken out of {retired_path} (line {old_n}{where}); "
                "a retired id stays retired: put the line back")))
    return out


def parse_retired(data: bytes | None, path: str) -> tuple[dict[str, int], list[Finding]]:
    """``id -> first line`` of a goldens.retired file, and GE622 when it is not UTF-8."""
    if data is None:
        return {}, []
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = data[: exc.start].count(b"\n") + 1
        return {}, [Finding(path, at, 1, "GE622", f"not UTF-8 (byte 0x{data[exc.start]:02x})"
                            "; save goldens.retired as UTF-8 text, one id a line")]
    out: dict[str, int] = {}
    for n, text in enumerate(_retired_lines(data), 1):
        if text:
            out.setdefault(text, n)
    return out, []


def _retired_lines(data: bytes | None) -> list[str]:
    if not data:
        return []
    text = data.decode("utf-8", "replace")
    lines = [line.strip() for line in text.split("\n")]
    return lines[:-1] if lines and not lines[-1] else lines


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").split("\n")


def _id_of(line: str) -> str | None:
    """The id key of one goldens line; None when the line holds no usable id (lint's
    other rules say why)."""
    if '"id"' not in line:
        return None
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if type(row) is not dict:
        return None
    id_ = row.get("id")
    if type(id_) is str:
        return id_
    return json.dumps(id_) if type(id_) is int else None


def _ids(numbered: Iterable[tuple[int, str]]) -> dict[str, int]:
    """``id -> first line number`` of the ``(number, line)`` pairs given."""
    out: dict[str, int] = {}
    for n, line in numbered:
        key = _id_of(line)
        if key is not None:
            out.setdefault(key, n)
    return out


#: More ids than this to look for: reading every row's id is quicker than searching.
_SEARCH_LIMIT = 32
_UNPLAIN = re.compile(r'["\\\x00-\x1f]')


def _present(lines: list[str], data: bytes, wanted: set[str], fresh: dict[str, int]
             ) -> dict[str, int]:
    """``id -> first line`` of the ids in ``fresh`` and of the ``wanted`` ids wherever
    they are. A wanted id found nowhere in the text is absent without parsing a line:
    sound when the file holds no ``\\u`` escape and the id nothing JSON must escape
    (its characters then appear as they are); otherwise every row's id is read."""
    todo = wanted - fresh.keys()
    if not todo:
        return fresh
    if len(todo) > _SEARCH_LIMIT or b"\\u" in data or any(_UNPLAIN.search(k) for k in todo):
        return _ids(enumerate(lines, 1))
    text = data.decode("utf-8", "replace")
    todo = {k for k in todo if k in text}
    found = _ids((n, line) for n, line in enumerate(lines, 1)
                 if any(k in line for k in todo)) if todo else {}
    return {k: min(n, found.get(k, n)) for k, n in fresh.items()} | {
        k: n for k, n in found.items() if k not in fresh}


def _id_col(line: str) -> int:
    at = line.find('"id"')
    return at + 1 if at >= 0 else 1


def _show(key: str) -> str:
    text = json.dumps(key)
    return text if len(text) <= 40 else text[:39] + "…"
