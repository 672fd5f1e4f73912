"""``<root>/drift-suite.yaml``: frozen benchmark slices, a domain-adjacent slice, the budget.

Pure: bytes in, a ``Suite`` and findings out (GE630-GE638); ``sample`` picks a
slice's rows deterministically. A sample is the ``n`` eligible rows whose
``sha256(seed, id)`` sort first: the same rows on every machine and Python, and a
row appended to the source displaces at most one pick instead of reshuffling all.

- GE630 schema                         - GE634 n too small for the budget (warning)
- GE631 source/path not in the tree    - GE635 a row with no grader to grade it
- GE632 fewer eligible rows than asked - GE636 duplicate benchmark name
- GE633 filter does not parse          - GE637 a source line that is not a JSON object
- GE638 hard fail not above the noise tolerance
"""

from __future__ import annotations

import hashlib
import heapq
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.findings import Finding
from gitevals.goldens import SUITE_FILE as SUITE_FILE
from gitevals.goldens import choice, filters
from gitevals.goldens.rows import bucket, row_id, rows, turns
from gitevals.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from gitevals.yamlsafe import Document

#: z of a two-sided 95 % interval.
Z95 = 1.959963984540054
DOMAIN = "domain_adjacent"


@dataclass(frozen=True)
class Budget:
    """The drift budget in points: noise tolerance, re-run variation, hard-fail drop."""

    noise: float
    hard_fail: float
    rerun: tuple[float, ...] = ()

    @property
    def rerun_max(self) -> float:
        """The widest a re-run with another seed moved a slice: a drop no larger is noise
        (the gate's ``rerun_noise``); 0 when the suite measured none."""
        return max(self.rerun, default=0.0)

    def as_dict(self) -> JSONObject:
        return {"noise_tolerance_pts": self.noise, "hard_fail_threshold_pts": self.hard_fail,
                "rerun_seed_variation_pts": list(self.rerun)}


#: The seed's budget, used by the gate when a run had no drift suite (docs/choices.md).
DEFAULT_BUDGET = Budget(1.0, 5.0)


@dataclass(frozen=True)
class Slice:
    """One drift slice: a frozen benchmark (``n`` rows) or the domain-adjacent slice
    (``low``..``n`` rows passing ``filter``)."""

    kind: str            # "benchmark" | "domain"
    name: str
    source: str          # repository-relative JSONL path
    n: int
    seed: int
    grader: str | None
    split: str | None = None
    filter: filters.Node | None = None
    low: int = 0
    at: tuple[int, int] = (1, 1)  # where it is written in drift-suite.yaml
    sized_for: bool = False  # a comment says what budget its count was sized for (GE634)
    choice: choice.Spec | None = None  # multiple choice, scored by gitevals (``choices``)


@dataclass(frozen=True)
class Suite:
    slices: tuple[Slice, ...]
    budget: Budget


def half_width(n: int) -> float:
    """Worst-case (p = 0.5) 95 % interval half-width of a pass rate over ``n`` items, in points."""
    return Z95 * 50.0 / math.sqrt(n)


def enough_items(hard_fail: float) -> int:
    """The least n whose half-width is under half the hard-fail threshold (the seed's
    item-count-from-budget rule)."""
    n = math.floor((Z95 * 100.0 / hard_fail) ** 2) + 1
    while half_width(n) >= hard_fail / 2:
        n += 1
    return n


def load_suite(data: bytes, path: str) -> tuple[Suite | None, list[Finding]]:
    """Parse and check ``drift-suite.yaml``; the suite when it holds no error."""
    from gitevals.schema import validate
    from gitevals.yamlsafe import parse

    doc, findings = parse(data, path)
    if doc is None or any(f.severity == "error" for f in findings):
        return None, findings
    errors = validate("drift-suite", doc.data)
    if errors:
        return None, [*findings, *(doc.finding(e.path, "GE630", f"{e.message}; see "
                                   "schemas/drift-suite.schema.json", e.key) for e in errors)]
    raw = doc.data
    assert isinstance(raw, dict)
    slices: list[Slice] = []
    seen: dict[str, int] = {}
    for i, b in enumerate(_list(raw.get("frozen_benchmarks"))):
        name = str(b["name"])
        at = doc.position(("frozen_benchmarks", i, "name"))
        if name in seen:
            findings.append(Finding(path, *at, "GE636", f"benchmark {name!r} is named twice "
                                    f"(first at line {seen[name]}); name each benchmark once"))
        seen.setdefault(name, at[0])
        slices.append(Slice("benchmark", name, str(b["source"]), int(_num(b["n_items"])),
                            int(_num(b["seed"])), _text(b.get("grader")), str(b["split"]),
                            at=doc.position(("frozen_benchmarks", i)),
                            sized_for=_sized_for(data, doc, ("frozen_benchmarks", i)),
                            choice=_choice(doc, b, ("frozen_benchmarks", i), findings)))
    domain = raw.get(DOMAIN)
    if isinstance(domain, dict):
        slices.extend(_domain(doc, domain, findings, data))
    budget = _budget(raw["drift_budget"])
    infinite = _not_finite(raw["drift_budget"])
    if infinite is not None:
        return None, [*findings, doc.finding(("drift_budget", infinite), "GE630", (
            f"{infinite} is not a finite number of points (.inf and .nan fail nothing and "
            "are not JSON); write a number from 0 to 100"))]
    if budget.hard_fail <= budget.noise:
        findings.append(doc.finding(("drift_budget", "hard_fail_threshold_pts"), "GE638",
                                    f"hard_fail_threshold_pts {budget.hard_fail:g} is not above "
                                    f"noise_tolerance_pts {budget.noise:g}: every drop beyond "
                                    "noise would fail; raise it or lower the tolerance"))
    findings.extend(_budget_warnings(slices, budget, path))
    return Suite(tuple(slices), budget), findings


def _domain(doc: Document, domain: JSONObject, findings: list[Finding],
            data: bytes) -> list[Slice]:
    """The domain-adjacent slice (none when its filter does not parse: GE633)."""
    path = doc.path
    low, high = (int(_num(x)) for x in _values(domain["n_items_range"]))
    if low > high:
        findings.append(doc.finding((DOMAIN, "n_items_range"), "GE630",
                                    f"n_items_range [{low}, {high}] runs backwards; write "
                                    "[low, high]"))
    try:
        node = filters.parse(str(domain["filter"]))
    except filters.FilterError as exc:
        line, col = doc.position((DOMAIN, "filter"))
        findings.append(Finding(path, line, col, "GE633",
                                f"filter does not parse at column {exc.col}: {exc.message}; "
                                "write e.g. tag == 'drift-suite' (==, !=, in, and, or, not)"))
        return []
    return [Slice("domain", DOMAIN, str(domain["path"]), high, int(_num(domain.get("seed", 0))),
                  _text(domain.get("grader")), filter=node, low=low, at=doc.position((DOMAIN,)),
                  sized_for=_sized_for(data, doc, (DOMAIN,)),
                  choice=_choice(doc, domain, (DOMAIN,), findings))]


def _choice(doc: Document, raw: JSONObject, where: tuple[str | int, ...],
            findings: list[Finding]) -> choice.Spec | None:
    """A slice's multiple-choice settings (``choices``, ``max_tokens``), or None; GE630
    when it also names a grader or its retry budget is not above the first."""
    labels = raw.get("choices")
    if not isinstance(labels, list):
        if "max_tokens" in raw:
            findings.append(doc.finding((*where, "max_tokens"), "GE630",
                                        "max_tokens is the token budget of a multiple-choice "
                                        "slice; set choices: [A, B, C, D] too, or remove it"))
        return None
    if "grader" in raw:
        findings.append(doc.finding((*where, "grader"), "GE630",
                                    "a slice with choices is scored by gitevals (log-"
                                    "probability, else the extracted label); remove grader, "
                                    "or remove choices to grade it with your own"))
    first, retry = (int(_num(x)) for x in _values(raw.get("max_tokens",
                                                          list(choice.DEFAULT_BUDGET))))
    if retry <= first:
        findings.append(doc.finding((*where, "max_tokens"), "GE630",
                                    f"max_tokens [{first}, {retry}]: the retry of an unparsed "
                                    "answer must have the larger budget; write [first, retry] "
                                    "with retry above first"))
    return choice.Spec(tuple(str(x) for x in labels), (first, retry))


#: A YAML comment saying what budget a count was sized for: ``# sized for a 20-point ...``.
_SIZED_FOR = re.compile(r"(?:^|\s)#.*\bsized\s+for\b", re.IGNORECASE)


def _sized_for(data: bytes, doc: Document, where: tuple[str | int, ...]) -> bool:
    """True when a comment on the lines of the entry at ``where`` (from its key, or its
    ``-``, to its last value), or on comment lines right above it, says what budget it
    was sized for: GE634's own remedy, which silences it."""
    from yaml.nodes import MappingNode

    node = doc.node_at(where)
    key = doc.node_at(where, key=True) if isinstance(where[-1], str) else node
    if not isinstance(node, MappingNode) or key is None or not node.value:
        return False
    lines = data.decode("utf-8", "replace").splitlines()
    first, last = key.start_mark.line, node.value[-1][1].end_mark
    end = last.line + (last.column > 0)  # a block value ends where the next line starts
    while first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    return any(_SIZED_FOR.search(line) for line in lines[first:end])


def _budget(raw: JSON) -> Budget:
    assert isinstance(raw, dict)
    rerun = raw.get("rerun_seed_variation_pts")
    spread = tuple(_num(x) for x in rerun) if isinstance(rerun, list) else (
        (_num(rerun),) if rerun is not None else ())
    return Budget(_num(raw["noise_tolerance_pts"]), _num(raw["hard_fail_threshold_pts"]), spread)


def _not_finite(raw: JSON) -> str | None:
    """The first budget key whose value is infinite, NaN or beyond 100 points, or None."""
    assert isinstance(raw, dict)
    for key in ("noise_tolerance_pts", "hard_fail_threshold_pts", "rerun_seed_variation_pts"):
        value = raw.get(key)
        values = value if isinstance(value, list) else [value] if value is not None else []
        if any(isinstance(v, int | float) and not isinstance(v, bool)
               and not (math.isfinite(v) and v <= 100) for v in values):
            return key
    return None


def _budget_warnings(slices: list[Slice], budget: Budget, path: str) -> list[Finding]:
    out = []
    for s in slices:
        n = s.low if s.kind == "domain" else s.n
        if half_width(n) >= budget.hard_fail / 2 and not s.sized_for:
            what = "n_items_range starts at" if s.kind == "domain" else "n_items"
            out.append(Finding(path, *s.at, "GE634",
                               f"{s.name}: {what} {n} gives a 95 % interval of ±"
                               f"{half_width(n):.1f} pts, not under half the hard-fail threshold "
                               f"({budget.hard_fail / 2:g} pts); {enough_items(budget.hard_fail)} "
                               "items would suffice (or say in a comment what budget this "
                               "smaller suite was sized for)", "warning"))
    return out


def _list(value: JSON) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _values(value: JSON) -> list[JSON]:
    return list(value) if isinstance(value, list) else []


def _num(value: JSON) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


# -- sampling --------------------------------------------------------------------


def _eligible(s: Slice, data: bytes) -> Iterator[tuple[int, JSONObject]]:
    for line, row in rows(data):
        if s.kind == "benchmark":
            if row.get("split", s.split) == s.split:
                yield line, row
        elif s.filter is not None and filters.matches(s.filter, row):
            yield line, row


def eligible(s: Slice, data: bytes) -> list[tuple[int, JSONObject]]:
    """The rows of ``s``'s source it may draw from: of its split (rows without a
    ``split`` field belong to every split), or passing its filter."""
    return list(_eligible(s, data))


def sample(s: Slice, data: bytes) -> list[tuple[int, JSONObject]]:
    """The rows of slice ``s`` (at most ``s.n``), deterministic in its seed, in file order.

    One pass, ``heapq.nsmallest`` over ``sha256(seed, id)`` (no sort of the whole source;
    ``benchmarks/bench_goldens.py`` measures it against a plain ``json.loads`` loop).
    Digests are unique per id and lines per row, so rows themselves are never compared.
    """
    seed = f"{s.seed}\0".encode()
    keyed = ((hashlib.sha256(seed + row_id(row, line).encode()).digest(), line, row)
             for line, row in _eligible(s, data))
    picked = heapq.nsmallest(s.n, keyed, key=lambda k: (k[0], k[1]))
    return sorted(((line, row) for _, line, row in picked), key=lambda lr: lr[0])


def check_sources(suite: Suite, path: str, read: Callable[[str], bytes | None],
                  mapping: Mapping[str, str],
                  named: Callable[[str], tuple[bytes | None, str]] | None = None
                  ) -> list[Finding]:
    """GE631/GE632/GE635/GE637 for each slice against the files of the tree, and a named
    source (``source: mmlu``) against what ``named`` reads of the local cache."""
    out: list[Finding] = []
    for s in suite.slices:
        data = _slice_source(s, path, read, named)
        if isinstance(data, Finding):
            out.append(data)
        else:
            out += _check_rows(s, path, data, mapping)
    return out


def _slice_source(s: Slice, path: str, read: Callable[[str], bytes | None],
                  named: Callable[[str], tuple[bytes | None, str]] | None
                  ) -> bytes | Finding:
    """The bytes of the slice's source (from the local cache for a named benchmark, else
    the tree's file), or the GE631 that says why there are none to read."""
    from gitevals.benchcache import is_named

    why = source_problem(s.source)
    if named is not None and s.kind == "benchmark" and is_named(s.source):
        data, missing = named(s.source)
        if data is None:
            return Finding(path, *s.at, "GE631",
                           f"{s.name}: the named benchmark {s.source!r} is not in the "
                           f"local cache: {missing}; put its JSONL file there "
                           "(GITEVALS_BENCHMARK_CACHE; nothing is downloaded)")
    elif why is not None:
        return Finding(path, *s.at, "GE631",
                       f"{s.name}: source {s.source!r} {why}; name a JSONL file by its "
                       "path from the repository root, e.g. evals/bench/mmlu.jsonl")
    else:
        data = read(s.source)
    if data is None:
        return Finding(path, *s.at, "GE631",
                       f"{s.name}: {s.source!r} is not a file of this tree; sources "
                       "are JSONL files committed beside the evals (repository-"
                       "relative path), so the suite is frozen with the commit")
    return data


def _check_rows(s: Slice, path: str, data: bytes, mapping: Mapping[str, str]
                ) -> list[Finding]:
    """GE637/GE632/GE613/GE635 for the rows of a slice's source: lines that are not
    JSON objects, too few eligible rows, a sampled row that cannot be sent or scored."""
    out: list[Finding] = []
    bad = _bad_lines(data)
    if bad:
        out.append(Finding(s.source, bad[0], 1, "GE637",
                           f"not a JSON object (and {len(bad) - 1} more lines); "
                           f"the drift slice {s.name} reads one JSON object a line"))
    have = sum(1 for _ in _eligible(s, data))
    need = s.low if s.kind == "domain" else s.n
    if have < need:
        which = f"of split {s.split!r}" if s.kind == "benchmark" else "passing the filter"
        out.append(Finding(path, *s.at, "GE632",
                           f"{s.name}: {s.source} holds {have} rows {which}, fewer than "
                           f"the {need} asked; add rows or lower the count"))
    picked = sample(s, data)
    unsendable = [ln for ln, r in picked if turns(r) is None]
    if unsendable:
        out.append(Finding(s.source, unsendable[0], 1, "GE613",
                           f"\"input\" of this row of drift slice {s.name} (and "
                           f"{len(unsendable) - 1} more) is not a string or a non-empty "
                           "list of strings, so it cannot be sent; write the user turn(s)"))
    unscored = _unscored(s, path, picked, mapping)
    return out if unscored is None else [*out, unscored]


def _unscored(s: Slice, path: str, picked: list[tuple[int, JSONObject]],
              mapping: Mapping[str, str]) -> Finding | None:
    """GE635 for the first sampled row nothing could score: no expected label among the
    choices (a choice slice), or no bucket mapped to a grader (a slice without one)."""
    if s.choice is not None:
        labels = s.choice.labels
        orphan = next((ln for ln, r in picked if choice.expected(r, labels) is None), None)
        if orphan is not None:
            return Finding(path, *s.at, "GE635",
                           f"{s.name}: row at {s.source}:{orphan} has no \"expected\" "
                           f"among the choices {'/'.join(labels)}, so nothing could "
                           "score it; give each row its correct label")
    elif s.grader is None:
        orphan = next((ln for ln, r in picked if (bucket(r) or "") not in mapping), None)
        if orphan is not None:
            return Finding(path, *s.at, "GE635",
                           f"{s.name}: row at {s.source}:{orphan} has no bucket with a "
                           "grader, so nothing would grade it; set `grader: "
                           "file.function` on the slice or give the rows a mapped bucket")
    return None


def source_problem(source: str) -> str | None:
    """Why a slice's source is not a file of the tree gitevals may read, or None: it must
    be a normalized path inside the tree and outside ``.git`` (whose config, hooks and
    objects are git's, never a benchmark: a working-tree lint would read them)."""
    from gitevals.settings import root_problem

    why = root_problem(source)
    if why is None and ".git" in source.casefold().split("/"):
        why = "is inside .git (git's own files are never a benchmark)"
    return why


def _bad_lines(data: bytes) -> list[int]:
    import json

    bad = []
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            ok = isinstance(json.loads(raw), dict)
        except (ValueError, RecursionError):
            ok = False
        if not ok:
            bad.append(n)
    return bad
