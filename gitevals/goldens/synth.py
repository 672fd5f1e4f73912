"""Synthetic goldens by cross-product: one row per combination of the axes' values.

``gitevals goldens synth --axis tone=formal,casual --axis length=short,long --generator
synth.make`` calls the generator (a function of ``<root>/graders/synth.py``, run as a
grader is: in a worker process of the committed tree, with ``t.llm``) once per
combination and writes each answer as a row. The row's ``id`` is derived from the
generator's name and the combination, never invented: the same combination made twice
is the same id, refused the second time instead of becoming a duplicate.

Axes may be declared in ``[tool.gitevals.goldens] axes`` (``{tone = ["formal",
"casual"], ...}``); lint then checks the goldens cover every combination (GE645).
Every number is bounded: axes, values per axis, a value's length, and combinations.

Pure: text in, combinations, ids and findings out.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence

from gitevals.errors import UsageError
from gitevals.findings import Finding
from gitevals.jsontypes import JSON, JSONObject

#: Bounds on what a user gives (``--axis``, ``[tool.gitevals.goldens] axes``).
MAX_AXES = 10
MAX_VALUES = 100
MAX_VALUE_CHARS = 200
MAX_COMBINATIONS = 1000
#: An axis name: what a row's ``axes`` object keys it by.
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Missing combinations named in one GE645 line.
SHOWN = 5

Axes = tuple[tuple[str, tuple[str, ...]], ...]


def parse_axis(text: str) -> tuple[str, tuple[str, ...]]:
    """``NAME=v1,v2`` -> ``(NAME, (v1, v2))``; a usage error saying what is wrong."""
    name, eq, values = text.partition("=")
    if not eq or not NAME.fullmatch(name):
        raise UsageError(f"--axis {text!r}: write NAME=v1,v2 (NAME: 1 to 64 letters, digits, "
                         "'_' or '-')")
    got = tuple(v.strip() for v in values.split(","))
    return name, _values(f"--axis {name}", got)


def _values(where: str, got: Sequence[str]) -> tuple[str, ...]:
    if not got or any(not v for v in got):
        raise UsageError(f"{where}: a value is empty; give one or more values, v1,v2")
    if len(got) > MAX_VALUES:
        raise UsageError(f"{where}: {len(got)} values, over the limit of {MAX_VALUES}")
    long = next((v for v in got if len(v) > MAX_VALUE_CHARS or not v.isprintable()), None)
    if long is not None:
        raise UsageError(f"{where}: value {long[:40]!r}... is over {MAX_VALUE_CHARS} "
                         "characters or holds a control character")
    if len(set(got)) != len(got):
        twice = next(v for v in got if got.count(v) > 1)
        raise UsageError(f"{where}: value {twice!r} is given twice")
    return tuple(got)


def check_axes(axes: Sequence[tuple[str, tuple[str, ...]]]) -> Axes:
    """``axes`` when they are few enough and their names unique; a usage error otherwise."""
    if not axes:
        raise UsageError("no axis: give --axis NAME=v1,v2 (repeatable), or declare "
                         "[tool.gitevals.goldens] axes")
    if len(axes) > MAX_AXES:
        raise UsageError(f"{len(axes)} axes, over the limit of {MAX_AXES}")
    names = [n for n, _ in axes]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise UsageError(f"--axis {twice} is given twice: give each axis once")
    total = count(tuple(axes))
    if total > MAX_COMBINATIONS:
        raise UsageError(f"the axes make {total:,} combinations, over the limit of "
                         f"{MAX_COMBINATIONS:,}; give fewer values")
    return tuple(axes)


def count(axes: Axes) -> int:
    total = 1
    for _, values in axes:
        total *= len(values)
    return total


def combinations(axes: Axes) -> list[dict[str, str]]:
    """Every combination, in the order the axes and their values were given."""
    names = [n for n, _ in axes]
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(values for _, values in axes))]


def synth_id(generator: str, combo: Mapping[str, str]) -> str:
    """The row id of ``combo`` made by ``generator``: the same inputs, the same id."""
    key = json.dumps({"generator": generator, "axes": dict(sorted(combo.items()))},
                     sort_keys=True, ensure_ascii=False)
    return "synth-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def row(generator: str, commit: str | None, combo: Mapping[str, str], answer: JSON
        ) -> tuple[JSONObject | None, str | None]:
    """The goldens row of one generator answer, or ``(None, why not)``."""
    if not isinstance(answer, dict):
        return None, (f"returned {json.dumps(answer)[:60]}, not a JSON object of the row's "
                      "fields (input, expected, bucket, ...)")
    taken = sorted({"id", "axes", "source"} & set(answer))
    if taken:
        return None, (f"returned the key {taken[0]!r}, which gitevals sets (id, axes, "
                      "source); leave it out")
    out: JSONObject = {"id": synth_id(generator, combo), **answer, "axes": dict(combo),
                       "source": {"generator": generator, "commit": commit}}
    return out, None


# -- lint: coverage of the declared axes ------------------------------------------------


def declared(raw: JSONObject) -> Axes:
    """``[tool.gitevals.goldens] axes`` as the settings table holds it (the schema bounds
    it; anything else is read as no axes)."""
    goldens = raw.get("goldens")
    table = goldens.get("axes") if isinstance(goldens, dict) else None
    if not isinstance(table, dict):
        return ()
    return tuple((str(k), tuple(str(v) for v in vs)) for k, vs in table.items()
                 if isinstance(vs, list))


def axes_position(text: str) -> tuple[int, int]:
    """Line and column of ``axes`` in the settings text (1:1 when it cannot be found:
    tomllib keeps no positions)."""
    for i, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*(axes)\s*=|\s*\[.*goldens\.(axes)\]", line)
        if m:
            return i, (m.start(1) if m.group(1) else m.start(2)) + 1
    return 1, 1


def lint_axes(axes: Axes, rows: Sequence[tuple[int, JSONObject]], goldens_path: str,
              settings_path: str, at: tuple[int, int]) -> list[Finding]:
    """GE645 (warnings): a row whose ``axes`` holds a value the declaration does not, and
    the combinations no row covers (``at``: the declaration's line and column)."""
    if not axes or count(axes) > MAX_COMBINATIONS:
        return []  # the schema refuses too many (GE701)
    allowed = dict(axes)
    out: list[Finding] = []
    covered: set[tuple[str, ...]] = set()
    for line, r in rows:
        got = r.get("axes")
        if not isinstance(got, dict):
            continue
        bad = next(((k, v) for k, v in got.items() if k in allowed and v not in allowed[k]),
                   None)
        if bad is not None:
            out.append(Finding(goldens_path, line, 1, "GE645", (
                f"axis {bad[0]!r} has the value {json.dumps(bad[1])[:60]}, which "
                f"[tool.gitevals.goldens] axes does not declare ({', '.join(allowed[bad[0]])})"
                "; fix the row or declare the value"), "warning"))
            continue
        if all(k in got for k in allowed):
            covered.add(tuple(str(got[k]) for k, _ in axes))
    missing = [c for c in itertools.product(*(v for _, v in axes)) if c not in covered]
    if missing:
        names = [n for n, _ in axes]
        shown = "; ".join(", ".join(f"{n}={v}" for n, v in zip(names, c, strict=True))
                          for c in missing[:SHOWN])
        more = f" (and {len(missing) - SHOWN} more)" if len(missing) > SHOWN else ""
        out.append(Finding(settings_path, at[0], at[1], "GE645", (
            f"{len(missing)} of {count(axes)} combinations of the declared axes have no "
            f"golden in {goldens_path}: {shown}{more}; add rows for them (`gitevals goldens "
            "synth`)"), "warning"))
    return out
