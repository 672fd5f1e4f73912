"""A tree -> what the goldens part of a run asks: items, the files they pin, findings.

Reads only through a ``Tree`` (any revision, the index or the working tree) and runs
no code of it: lint (``lint_suite``) and run (``plan_suite``) read the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

from gitevals.findings import Finding
from gitevals.git.trees import Tree
from gitevals.goldens import choice, drift
from gitevals.goldens.mapping import Summary, grader_position, lint_mapping, summarize
from gitevals.goldens.rows import bucket, row_id, rows, turns
from gitevals.jsontypes import JSON, JSONObject
from gitevals.settings import Settings

if TYPE_CHECKING:
    from gitevals.lint.cache import LintCache
    from gitevals.lint.graders import Index

#: Bumped when ``Summary`` or ``summarize`` changes: old cached summaries are not read.
SUMMARY_FORMAT = "1"


@dataclass(frozen=True)
class Item:
    """One conversation of the suite: a golden of a bucket, or a row of a drift slice."""

    kind: str            # "bucket" | "benchmark" | "domain"
    slice: str           # the bucket, the benchmark's name, or "domain_adjacent"
    id: str
    path: str
    line: int
    row: JSONObject
    grader: str
    turns: tuple[str, ...]
    choice: choice.Spec | None = None  # a multiple-choice drift row, scored by gitevals


@dataclass(frozen=True)
class SuitePlan:
    """The goldens (and drift slices) a run will send, read from one revision."""

    items: tuple[Item, ...]
    findings: tuple[Finding, ...]
    files: dict[str, str]           # path -> blob of goldens, suite, sources, grader modules
    graders: dict[str, str]         # bucket -> grader, as mapped
    budget: drift.Budget | None     # from drift-suite.yaml, when the tree has one
    buckets: tuple[str, ...] | None  # --bucket selection (None: every bucket and drift)

    @property
    def blocked(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


def goldens_path(root: str) -> str:
    return f"{root}/goldens.jsonl" if root else "goldens.jsonl"


def suite_path(root: str) -> str:
    return f"{root}/{drift.SUITE_FILE}" if root else drift.SUITE_FILE


def _indexes(tree: Tree, root: str, names: Sequence[str]) -> dict[str, Index | None]:
    from gitevals.lint.graders import index_module, module_path

    base = f"{root}/graders/" if root else "graders/"
    out: dict[str, Index | None] = {
        p: {"error": None, "names": {}} for p in tree.blob_shas(base)
        if p.endswith(".py") and "/" not in p[len(base):]}
    for name in names:
        path = module_path(root, name)
        data = tree.read(path) if path in out else None
        out[path] = index_module(data) if data is not None else None
    return out


def _summary(tree: Tree, path: str, store: LintCache | None) -> Summary | None:
    """The bucket summary of goldens.jsonl, cached by blob SHA (``store``): a warm lint
    of a large goldens file does not parse it again (benchmarks/bench_goldens.py)."""
    from gitevals.lint.cache import key

    sha = tree.blob_sha(path)
    if sha is None:
        return None
    k = key("goldens-summary", SUMMARY_FORMAT, sha)
    cached = store.get("suite", k) if store is not None else None
    if _valid_summary(cached):
        return cached
    summary = summarize(tree.read(path) or b"")
    if store is not None:
        store.put("suite", k, {"buckets": dict(summary["buckets"]),
                               "unbucketed": list(summary["unbucketed"]),
                               "unsendable": list(summary["unsendable"])})
    return summary


def _valid_summary(doc: JSON) -> TypeGuard[Summary]:
    """A cached summary as ``summarize`` makes it (the cache is a file anyone can edit)."""
    if not isinstance(doc, dict):
        return False
    buckets, unbucketed, unsendable = (doc.get("buckets"), doc.get("unbucketed"),
                                       doc.get("unsendable"))
    return (isinstance(buckets, dict) and all(_whole(v) for v in buckets.values())
            and isinstance(unbucketed, list) and all(_whole(v) for v in unbucketed)
            and isinstance(unsendable, list) and all(_whole(v) for v in unsendable))


def _whole(value: JSON) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def lint_suite(tree: Tree, settings: Settings, store: LintCache | None = None) -> list[Finding]:
    """The mapping's and the drift suite's findings (none when neither is set up)."""
    root = settings.root
    suite_data = tree.read(suite_path(root))
    covered = _axes(tree, settings)
    if not settings.golden_graders and suite_data is None:
        return covered
    suite, found = ((None, []) if suite_data is None
                    else drift.load_suite(suite_data, suite_path(root)))
    names = [*settings.golden_graders.values(),
             *(s.grader for s in (suite.slices if suite else ()) if s.grader)]
    indexes = _indexes(tree, root, names)
    text = (tree.read(settings.source) or b"").decode("utf-8", "replace") if settings.source else ""
    out = lint_mapping(settings.golden_graders, settings.source or "pyproject.toml", text,
                       goldens_path(root), _summary(tree, goldens_path(root), store),
                       indexes, root)
    if suite is not None:
        out += _slice_graders(suite, root, indexes)
        out += _sources(tree, suite, root, settings.golden_graders, store)
    return sorted([*found, *out, *covered, *_advisory(tree, settings, text)])


def _axes(tree: Tree, settings: Settings) -> list[Finding]:
    """GE645: the goldens' coverage of ``[tool.gitevals.goldens] axes``, when declared."""
    from gitevals.goldens.rows import rows
    from gitevals.goldens.synth import axes_position, declared, lint_axes

    axes = declared(settings.raw)
    if not axes:
        return []
    text = (tree.read(settings.source) or b"").decode("utf-8", "replace") if settings.source else ""
    path = goldens_path(settings.root)
    return lint_axes(axes, list(rows(tree.read(path) or b"")), path,
                     settings.source or "pyproject.toml", axes_position(text))


def _advisory(tree: Tree, settings: Settings, text: str) -> list[Finding]:
    """GE510-GE516 at each bucket's grader in the settings whose grader asks the judge and
    is advisory: that bucket's pass rate will not count in the goldens gate."""
    from gitevals.lint.calibration import advisory_findings
    from gitevals.lint.graders import Ref

    source = settings.source or "pyproject.toml"
    refs = [Ref(grader, source, *grader_position(text, bucket_name))
            for bucket_name, grader in sorted(settings.golden_graders.items())]
    return advisory_findings(tree, settings, refs, effect="the pass rate of the bucket it "
                             "grades here will not count in the goldens gate")


def _sources(tree: Tree, suite: drift.Suite, root: str, mapping: dict[str, str],
             store: LintCache | None) -> list[Finding]:
    """``drift.check_sources``, cached by the blobs of the suite and of its sources (a
    warm lint reads no multi-GB benchmark file again)."""
    import json

    from gitevals import benchcache
    from gitevals.goldens.drift import source_problem
    from gitevals.lint.cache import key

    shas = [f"{s.source}:{benchcache.stamp(s.source)}@{benchcache.root()}"
            if s.kind == "benchmark" and benchcache.is_named(s.source) else
            f"{s.source}:{tree.blob_sha(s.source) if source_problem(s.source) is None else ''}"
            for s in suite.slices]
    k = key("drift-sources", SUMMARY_FORMAT, str(tree.blob_sha(suite_path(root))),
            json.dumps(mapping, sort_keys=True), *shas)
    cached = _cached_findings(store.get("suite", k)) if store is not None else None
    if cached is not None:
        return cached
    found = drift.check_sources(suite, suite_path(root), tree.read, mapping, benchcache.read)
    if store is not None:
        store.put("suite", k, [[f.path, f.line, f.col, f.code, f.message, f.severity]
                               for f in found])
    return found


def _cached_findings(cached: JSON) -> list[Finding] | None:
    """The findings a cache entry holds as ``[path, line, col, code, message, severity]``
    rows; None when it holds anything else (the cache is a file anyone can edit)."""
    if not isinstance(cached, list):
        return None
    out = []
    for row in cached:
        if not (isinstance(row, list) and len(row) == 6):
            return None
        path, line, col, code, message, severity = row
        if not (isinstance(path, str) and isinstance(line, int) and isinstance(col, int)
                and isinstance(code, str) and isinstance(message, str)
                and severity in ("error", "warning")):
            return None
        out.append(Finding(path, line, col, code, message,
                           "error" if severity == "error" else "warning"))
    return out


def _slice_graders(suite: drift.Suite, root: str,
                   indexes: dict[str, Index | None]) -> list[Finding]:
    from gitevals.lint.graders import Ref, resolve

    path = suite_path(root)
    return [f for s in suite.slices if s.grader
            if (f := resolve(Ref(s.grader, path, *s.at), root, indexes)) is not None]


def plan_suite(tree: Tree, settings: Settings,
               buckets: Sequence[str] | None = None) -> SuitePlan:
    """The items of the goldens (only ``buckets`` when given) and, when no bucket is
    picked, of the drift suite; an unknown bucket is a usage error."""
    from gitevals.errors import UsageError

    root = settings.root
    findings = lint_suite(tree, settings) + _goldens_errors(tree, root)
    if not settings.golden_graders:
        raise UsageError(f"no goldens to run in {tree.label}: map each bucket of "
                         f"{goldens_path(root)} to a grader in [tool.gitevals.goldens] graders "
                         "(see docs/goldens.md)")
    unknown = sorted(set(buckets or ()) - set(settings.golden_graders))
    if unknown:
        raise UsageError(f"unknown bucket {unknown[0]!r}: mapped buckets are "
                         f"{', '.join(settings.golden_graders)}")
    files: dict[str, str] = {}
    items = _golden_items(tree, settings, set(buckets or settings.golden_graders), files)
    budget = None
    suite_data = tree.read(suite_path(root))
    if suite_data is not None:
        suite, _ = drift.load_suite(suite_data, suite_path(root))
        budget = suite.budget if suite else None
        _pin(tree, suite_path(root), files)
        if suite is not None and not buckets:
            items += _drift_items(tree, suite, settings.golden_graders, files)
    from gitevals.graderimports import closure
    from gitevals.lint.graders import module_path

    # The grader modules and every tree file they import: an edit to a helper changes
    # what a grader decides, so it changes the measuring stick (graderimports.py).
    files.update(closure(tree, {module_path(root, i.grader) for i in items
                                if i.choice is None}, root))
    return SuitePlan(tuple(items), tuple(findings), dict(sorted(files.items())),
                     dict(settings.golden_graders), budget,
                     tuple(sorted(set(buckets))) if buckets else None)


def _goldens_errors(tree: Tree, root: str) -> list[Finding]:
    """The errors lint finds in goldens.jsonl (a duplicate id, GE606...): goldens that
    do not lint are not sent, so no run (and no baseline) ever counts them."""
    from gitevals.lint.goldens import lint_goldens

    data = tree.read(goldens_path(root))
    if data is None:
        return []
    return [f for f in lint_goldens(data, goldens_path(root)) if f.severity == "error"]


def _pin(tree: Tree, path: str, files: dict[str, str]) -> None:
    sha = tree.blob_sha(path)
    if sha is not None:
        files[path] = sha


def _golden_items(tree: Tree, settings: Settings, wanted: set[str],
                  files: dict[str, str]) -> list[Item]:
    path = goldens_path(settings.root)
    data = tree.read(path) or b""
    _pin(tree, path, files)
    out = []
    for line, row in rows(data):
        b, sent = bucket(row), turns(row)
        if b in wanted and b is not None and sent is not None:
            out.append(Item("bucket", b, row_id(row, line), path, line, row,
                            settings.golden_graders[b], sent))
    return out


def _drift_items(tree: Tree, suite: drift.Suite, mapping: dict[str, str],
                 files: dict[str, str]) -> list[Item]:
    from gitevals import benchcache

    out = []
    for s in suite.slices:
        if s.kind == "benchmark" and benchcache.is_named(s.source):
            data = benchcache.read(s.source)[0]  # absent: GE631, which refuses the run
            if data is not None:
                files[benchcache.PIN + s.source] = benchcache.blob_sha(data)
        else:
            data = tree.read(s.source) if drift.source_problem(s.source) is None else None
            if data is not None:
                _pin(tree, s.source, files)
        if data is None:
            continue
        for line, row in drift.sample(s, data):
            grader = (choice.GRADER if s.choice is not None
                      else s.grader or mapping.get(bucket(row) or ""))
            sent = turns(row)
            if grader is not None and sent is not None:
                out.append(Item(s.kind, s.name, row_id(row, line), s.source, line, row,
                                grader, sent, s.choice))
    return out
