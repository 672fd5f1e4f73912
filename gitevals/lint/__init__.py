"""Lint an eval tree: cases, grader references and goldens of one ``Tree``.

``lint_tree`` is the one entry point (``gitevals lint``, the pre-commit hook, the
publish check and ``gitevals run`` call it). It reads files only through the
``Tree`` (working tree, index or a revision), never imports or executes code of
that tree, and returns findings rather than printing them.

Work per run: list the inputs with their blob SHAs; answer each from the cache
when its SHA was seen before; lint the rest (in a process pool when there are
many); resolve every grader reference against the grader modules *of the same
tree* (each module parsed once, its index cached by blob SHA).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from gitevals.findings import Finding, Severity

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.jsontypes import JSON
    from gitevals.lint.cache import LintCache
    from gitevals.lint.graders import Index, RefLike
    from gitevals.settings import Settings

    #: One file's findings and the grader names it references.
    _Result = tuple[list[Finding], list[RefLike]]

#: ``progress(done, total)``: files linted so far, reported by large (pooled) runs only.
Progress = Callable[[int, int], None]

CASE_SUFFIXES = (".yaml", ".yml")
#: Below this much work (case files, or goldens rows / 200) a pool costs more than it saves.
PARALLEL_THRESHOLD = 64
_CHUNK = 40
#: A PATH-restricted run of fewer case files (and no goldens) skips the per-file cache.
FEW = 16
#: Where settings live (repo top); naming one lints everything: they set the root and
#: the refused keys.
SETTINGS_FILES = ("gitevals.toml", "pyproject.toml")


@dataclass(frozen=True)
class LintResult:
    """The findings of one lint run (sorted), how many files it checked, and notes (no
    findings: a directory under tasks/ that is no task and was skipped)."""

    findings: tuple[Finding, ...]
    files: int
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no finding is an error (warnings allowed)."""
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.errors


#: A finding as the cache stores it: ``[path, line, col, code, message, severity]``.
_Row = tuple[str, int, int, str, str, Severity]


class _Entry(TypedDict):
    """A manifest entry: one file's finding rows and grader references (name, line, col)."""

    f: list[_Row]
    r: list[tuple[str, int, int]]


class _RunEntry(TypedDict):
    """The cached findings of a whole run."""

    findings: list[_Row]
    files: int


@dataclass(frozen=True)
class Input:
    """One file to lint: repo-relative path, blob SHA, kind (bytes: read once, on demand)."""

    path: str
    sha: str
    kind: str  # "case" | "goldens" | "grader"


def lint_tree(tree: Tree, paths: Sequence[str] | None = None, *, cache: bool = True,
              jobs: int | None = None, progress: Progress | None = None) -> LintResult:
    """Lint the eval tree of ``tree``.

    ``paths`` (repo-relative files or directories) restricts which case and goldens
    files are linted; paths outside the eval tree are ignored. Grader names always
    resolve against the graders of ``tree`` itself. ``cache=False`` ignores and
    does not write the lint cache; ``jobs`` caps worker processes (default: cores);
    ``progress`` is told how far a large run is (it never is for small ones).
    """
    from gitevals.lint.cache import LintCache
    from gitevals.settings import load_settings

    was_enabled = gc.isenabled()
    gc.disable()  # lint allocates many small, short-lived objects and no cycles
    try:
        settings, found = load_settings(tree)
        store = LintCache.open(settings.refused_keys, enabled=cache)
        run = _Run(tree, settings.root, dict(settings.refused_keys), store, jobs, progress)
        run.settings = settings
        result = _with_suite(run.lint(paths, found), tree, settings, paths, bool(found), store)
        return result if found else _with_families(result, tree, settings, paths)
    finally:
        if was_enabled:
            gc.enable()


class _Run:
    """One lint of one tree (holds the file bytes read along the way)."""

    def __init__(self, tree: Tree, root: str, refused: dict[str, str], store: LintCache,
                 jobs: int | None, progress: Progress | None = None) -> None:
        self.tree, self.root, self.refused, self.store = tree, root, refused, store
        self.progress = progress
        self.jobs = jobs if jobs is not None else (os.cpu_count() or 1)
        self.data: dict[str, bytes] = {}
        self.full = True  # every case and goldens file is in this run (no PATH filter)
        self.checked_graders: set[str] | None = None  # graders checked on their own; None: all
        self.oversize: dict[str, Finding] = {}  # listed files too large to read (GE104)
        self.settings: Settings | None = None  # for the task rules (lint_tree sets it)
        self.notes: tuple[str, ...] = ()  # the task loader's notes on skipped directories

    def lint(self, paths: Sequence[str] | None, settings_findings: list[Finding]) -> LintResult:
        from gitevals.lint.cache import key
        from gitevals.lint.retired import lint_retired

        missing = None if settings_findings else self._missing_root(paths)
        if missing is not None:
            return LintResult((missing,), 0)
        cases, goldens = self._inputs(paths)
        # Never cached: they cost a listing, and a file's kind is not in its blob SHA.
        named = None if self.full or paths is None else [p.strip("/") for p in paths]
        # Retired ids (GE620-GE623) whatever files were named: a commit that deletes
        # goldens.jsonl names none of them. Never cached: it costs four SHA lookups.
        retired = [] if settings_findings else lint_retired(self.tree, self.root)
        settings_findings = [*settings_findings, *retired, *self._refused(named), *_case_layout(
            self.root, [i.path for i in cases])]
        settings_findings, tasks = self._tasks(settings_findings, named)
        if not self.full:  # named files (the pre-commit hook): per-file cache only
            found, files = self._lint_inputs(cases, goldens, None)
            found.extend(self.oversize.values())
            return LintResult(tuple(sorted([*settings_findings, *found])), files + tasks,
                              self.notes)
        graders = self._graders()
        everything = key(self.root, *(f"{i.kind}:{i.path}:{i.sha}"
                                      for i in (*cases, *goldens, *graders)),
                         *self._calibration_key())
        cached = self.store.get("run", everything)
        if _valid_run(cached):  # nothing changed since a run that was cached whole
            found = [Finding(*f) for f in cached["findings"]]
            files = int(cached["files"])
        else:
            found, files = self._lint_inputs(cases, goldens, graders)
            self.store.put("run", everything, {"findings": [_row(f) for f in found],
                                               "files": files})
        found = [*found, *self.oversize.values()]
        return LintResult(tuple(sorted([*settings_findings, *found])), files + tasks,
                          self.notes)

    def _tasks(self, findings: list[Finding], named: list[str] | None
               ) -> tuple[list[Finding], int]:
        """``findings`` with the task directories' findings in place of the eval tree's
        GE801/GE104 for their files (large data and inner links are normal in a task),
        and how many tasks were checked."""
        from gitevals.lint.tasks import inside, lint_tasks

        if self.settings is None:
            return findings, 0
        found, checked, dirs, notes = lint_tasks(self.tree, self.settings, self.store, named)
        self.notes = tuple(notes)
        kept = [f for f in findings if not (f.code in ("GE801", "GE104") and inside(f.path, dirs))]
        return [*kept, *found], checked

    def _lint_inputs(self, cases: list[Input], goldens: list[Input],
                     graders: list[Input] | None) -> tuple[list[Finding], int]:
        from gitevals.lint.graders import module_finding, resolve_all

        found: list[Finding] = []
        refs: list[RefLike] = []
        for findings, case_refs in self._lint_files(cases, goldens, self.full):
            found.extend(findings)
            refs.extend(case_refs)
        stems = {r.name.split(".", 1)[0] for r in refs}
        if graders is None:
            graders = self._graders_for(stems)
        indexes = self._indexes(graders, stems, self.checked_graders)
        found.extend(resolve_all(refs, self.root, indexes))
        found.extend(self._advisory(refs))
        # A broken module that no case names was not reported by resolve_all.
        found.extend(f for p, ix in indexes.items() if ix.get("checked")
                     and not ix.get("referenced") and (f := module_finding(p, ix)))
        parsed = sum(1 for ix in indexes.values() if ix.get("referenced") or ix.get("checked"))
        return found, len(cases) + len(goldens) + parsed

    def _advisory(self, refs: Sequence[RefLike]) -> list[Finding]:
        """GE510-GE516: references to a judge grader that is not calibrated."""
        if self.settings is None or not refs:
            return []
        from gitevals.lint.calibration import advisory_findings

        return advisory_findings(self.tree, self.settings, refs)

    def _calibration_key(self) -> list[str]:
        from datetime import UTC, datetime

        from gitevals.lint.calibration import cache_key

        return cache_key(self.tree, self.settings, datetime.now(UTC).date().isoformat())

    def _graders_for(self, stems: set[str]) -> list[Input]:
        """Grader modules a PATH-restricted run needs: those named by stems, looked up one
        by one; all of them when grader modules were named or one is missing (for the
        "did you mean" of GE502)."""
        if self.checked_graders == set():
            named = self._referenced(stems)
            if all(isinstance(g, Input) for g in named):
                return [g for g in named if isinstance(g, Input)]
        return self._graders()

    # -- inputs ---------------------------------------------------------------

    def _missing_root(self, paths: Sequence[str] | None) -> Finding | None:
        """GE702 when settings name a root the tree lacks: a lint that checks nothing must
        not read as "no problems". (Without settings the CLI says there is nothing to lint.)"""
        from gitevals.settings import load_settings

        if not self.root or self._holds_named(paths) or self.tree.exists(self.root):
            return None
        source = load_settings(self.tree)[0].source
        if source is None:
            return None
        return Finding(source, 1, 1, "GE702",
                       f"root {self.root!r} (set in {source}) does not exist in the "
                       f"{self.tree.label}, so nothing would be checked; add the eval tree "
                       "there (`gitevals init` scaffolds one) or set root to where it is")

    def _holds_named(self, paths: Sequence[str] | None) -> bool:
        """True when a named file under the root is in the tree: the root then exists, and
        the commit hook (which names the staged files) skips listing the whole tree."""
        top = f"{self.root}/"
        return any(p.strip("/").startswith(top) and self.tree.blob_sha(p.strip("/"))
                   for p in paths or ())

    def _refused(self, named: list[str] | None = None) -> list[Finding]:
        """GE801 for whatever under the root is not a regular file (a symlink, FIFO,
        device, submodule, or the root itself as a link), GE104 for a working-tree file
        over its size limit: neither is read, so lint never follows a link out of the
        repository nor blocks on a FIFO; what is refused here, run would not see alike."""
        out = self._misplaced()
        # The commit hook names every staged file: checking those (a new link is staged,
        # so named) keeps it from listing the whole tree; full runs check everything.
        prefixes = (self.root,) if named is None else tuple(named)
        refused = {p: w for prefix in (*prefixes, *SETTINGS_FILES)
                   for p, w in self.tree.refused(prefix).items()}
        for path, what in sorted(refused.items()):
            if what.endswith(" limit"):
                out.append(_oversize(path, what))
                continue
            out.append(Finding(path, 1, 1, "GE801", f"{what}, not a regular file: gitevals "
                               "reads regular files only and follows no links; commit the "
                               "file itself at this path (or remove it)"))
        return out

    def _misplaced(self) -> list[Finding]:
        """GE801 for a directory where ``goldens.jsonl`` belongs and a file where a
        directory (``cases``, ``graders``) belongs: either would lint as nothing at all."""
        root = f"{self.root}/" if self.root else ""
        out = []
        goldens = f"{root}goldens.jsonl"
        if self.tree.blob_shas(goldens + "/"):  # "/": files below it, were it a directory
            out.append(Finding(goldens, 1, 1, "GE801", "a directory, not a regular file: "
                               "goldens.jsonl is one file of JSON lines; move the directory"))
        for name in ("cases", "graders"):
            e = self.tree.entry(f"{root}{name}")
            if e is not None and not e.is_link:  # a link is GE801 by ``refused``
                out.append(Finding(e.path, 1, 1, "GE801", f"a file, not a directory: "
                                   f"{root}{name}/ holds one file per "
                                   f"{'case' if name == 'cases' else 'grader module'}; "
                                   "move the file"))
        return out

    def _inputs(self, paths: Sequence[str] | None) -> tuple[list[Input], list[Input]]:
        """Case and goldens files to lint; sets which grader modules are checked on their own.

        A full run checks every grader module. A PATH naming a grader module (as the
        pre-commit hook does when one is staged) checks that module and re-lints every
        case, since any case may name it; so does a module the tree no longer holds (a
        staged deletion). A PATH naming a settings file lints everything.
        """
        root = f"{self.root}/" if self.root else ""
        grader_dir = self._grader_dir()
        if paths is not None and any(p.strip("/") in SETTINGS_FILES for p in paths):
            paths = None
        self.full = paths is None
        self.checked_graders = None  # None: all of them
        if paths is not None:
            wanted = [p.strip("/") for p in paths]
            self.checked_graders = {w for w in wanted
                                    if w.startswith(grader_dir + "/") and w.endswith(".py")}
            if any(not w or grader_dir == w or grader_dir.startswith(w + "/") for w in wanted):
                self.checked_graders = None
            if self.checked_graders != set():
                paths = [*paths, f"{root}cases"]
        cases = self._select(f"{root}cases", "case", paths)
        cases = [i for i in cases if i.path.endswith(CASE_SUFFIXES)]
        goldens = [i for i in self._select(f"{root}goldens.jsonl", "goldens", paths)
                   if i.path == f"{root}goldens.jsonl"]
        return cases, goldens

    def _grader_dir(self) -> str:
        return f"{self.root}/graders" if self.root else "graders"

    def _graders(self) -> list[Input]:
        """Every grader module of the tree: ``<root>/graders/<name>.py``."""
        base = self._grader_dir() + "/"
        return [i for i in self._list(base[:-1], "grader")
                if i.path.endswith(".py") and "/" not in i.path[len(base):]]

    def _referenced(self, stems: set[str]) -> list[Input | str]:
        """The modules named by ``stems``, looked up one by one (a missing one: its path)."""
        out: list[Input | str] = []
        for stem in sorted(stems):
            path = f"{self._grader_dir()}/{stem}.py"
            found = self._list(path, "grader")
            out.append(found[0] if found and found[0].path == path else path)
        return out

    def _select(self, prefix: str, kind: str, paths: Sequence[str] | None) -> list[Input]:
        """Files under ``prefix`` (all of them, or those ``paths`` name): listing only what
        was asked keeps the one-file pre-commit run from reading every case."""
        if paths is None:
            return self._list(prefix, kind)
        out: dict[str, Input] = {}
        for w in (p.strip("/") for p in paths):
            if not w or prefix == w or prefix.startswith(w + "/"):
                return self._list(prefix, kind)
            if w.startswith(prefix + "/"):
                out.update((i.path, i) for i in self._list(w, kind))
        return sorted(out.values(), key=lambda i: i.path)

    def _list(self, prefix: str, kind: str) -> list[Input]:
        """The files at or under ``prefix``, with SHAs from the tree's listing (no blob
        of a git tree is read to list it; the working tree keeps what it read)."""
        listed = self.tree.blob_shas(prefix)
        if kind == "grader":  # cases and goldens are sized when read (``_work``)
            for path, what in self.tree.too_large(listed).items():  # a git tree's blobs
                self.oversize[path] = _oversize(path, what)
                del listed[path]
        return [Input(path, sha, kind) for path, sha in listed.items()]

    def _load(self, inputs: Sequence[Input]) -> None:
        """Read the bytes of ``inputs`` not read yet, in one call to the tree."""
        missing = [i for i in inputs if i.path not in self.data]
        blobs = self.tree.read_blobs([i.sha for i in missing])
        self.data.update((i.path, data) for i, data in zip(missing, blobs, strict=True))

    def bytes_of(self, i: Input) -> bytes:
        """The bytes of one input, read once."""
        self._load([i])
        return self.data[i.path]

    # -- cases and goldens ----------------------------------------------------

    def _lint_files(self, cases: list[Input], goldens: list[Input], prune: bool
                    ) -> list[_Result]:
        from gitevals.lint.cache import key
        from gitevals.lint.graders import Ref

        if not prune and len(cases) < FEW and not goldens:
            # Linting a few small files costs less than loading the repo's manifest.
            return self._work(cases)
        name = key(self.tree.location, self.root)
        manifest = self.store.load_manifest(name)
        results: list[_Result] = []
        todo: list[Input] = []
        kept: dict[str, JSON] = {}
        for i in (*goldens, *cases):
            k = f"{i.sha}:{i.path}"
            entry = manifest.get(k)
            if not _valid_entry(entry):
                todo.append(i)
                continue
            kept[k] = manifest[k]  # as JSON (``entry`` is narrowed to an _Entry)
            results.append(([Finding(*f) for f in entry["f"]],
                             [Ref(n, i.path, ln, c) for n, ln, c in entry["r"]]))
        for i, (findings, refs) in zip(todo, self._work(todo), strict=True):
            kept[f"{i.sha}:{i.path}"] = {"f": [_row(f) for f in findings],
                                         "r": [[r.name, r.line, r.col] for r in refs]}
            results.append((findings, refs))
        if todo or (prune and len(kept) != len(manifest)):
            # A full run keeps only what the tree holds now; a partial one adds to the rest.
            self.store.save_manifest(name, kept if prune else {**manifest, **kept})
        return results

    def _work(self, todo: list[Input]) -> list[_Result]:
        # Sized before read (a git tree's blob headers; cached files never get here):
        # an oversize file is GE104 unread, and that finding is cached by its SHA.
        big = self.tree.too_large({i.path: i.sha for i in todo})
        if big:
            rest = [i for i in todo if i.path not in big]
            done = dict(zip((i.path for i in rest), self._work(rest), strict=True))
            return [([_oversize(i.path, big[i.path])], []) if i.path in big
                    else done[i.path] for i in todo]
        self._load(todo)  # read in the parent: workers inherit the bytes (fork)
        cost = sum(1 if i.kind == "case" else len(self.data[i.path]) // 20000 for i in todo)
        large = cost >= PARALLEL_THRESHOLD
        if large and self.jobs >= 2 and _may_fork():
            return _parallel(todo, self.data, self.refused, self.jobs, self.progress)
        return self._serial(todo, self.progress if large else None)

    def _serial(self, todo: list[Input], progress: Progress | None) -> list[_Result]:
        """The run linted in this process; a large one reports progress as workers do."""
        out: list[_Result] = []
        for i in todo:
            out.append(_lint_one(i, self.data[i.path], self.refused))
            if progress is not None:
                progress(len(out), len(todo))
        return out

    # -- graders --------------------------------------------------------------

    def _indexes(self, graders: Sequence[Input], stems: set[str],
                 checked: set[str] | None) -> dict[str, Index]:
        """Index of each grader module that is referenced or checked (``checked`` None:
        all); other present modules map to an empty index (they exist, for "did you mean")."""
        from gitevals.lint.graders import index_json, index_module

        out: dict[str, Index] = {}
        for g in graders:
            referenced = g.path.rsplit("/", 1)[-1][:-3] in stems
            check = checked is None or g.path in checked
            if not (referenced or check):
                out[g.path] = {"error": None, "names": {}}
                continue
            cached = self.store.get("grader", g.sha)
            if _valid_index(cached):
                index = cached
            else:
                index = index_module(self.bytes_of(g))
                self.store.put("grader", g.sha, index_json(index))
            out[g.path] = {**index, "referenced": referenced, "checked": check}
        return out


def _with_suite(result: LintResult, tree: Tree, settings: Settings,
                paths: Sequence[str] | None, bad_settings: bool, store: LintCache) -> LintResult:
    """``result`` plus the goldens mapping's and drift suite's findings (GE610-GE639)
    when the run covers them: a full run, or named files under the root or settings."""
    if bad_settings or (paths is not None and not any(
            p.strip("/").startswith(f"{settings.root}/") or p.strip("/") in SETTINGS_FILES
            for p in paths)):
        return result
    from gitevals.goldens import SUITE_FILE
    from gitevals.lint.baselines import lint_baselines

    more = lint_baselines(tree, settings.root)
    suite_file = f"{settings.root}/{SUITE_FILE}" if settings.root else SUITE_FILE
    goldens = settings.raw.get("goldens")
    axes = isinstance(goldens, dict) and "axes" in goldens
    if settings.golden_graders or axes or tree.exists(suite_file):  # else no suite to import
        from gitevals.goldens.plan import lint_suite

        more = [*lint_suite(tree, settings, store), *more]
    if not more:
        return result
    return LintResult(tuple(sorted({*result.findings, *more})), result.files, result.notes)


def _with_families(result: LintResult, tree: Tree, settings: Settings,
                   paths: Sequence[str] | None) -> LintResult:
    """``result`` plus GE706 for an unset judge or target family, when the settings file
    is linted (a full run, or the settings named)."""
    from gitevals.settings import unset_families

    if settings.source is None or (paths is not None and not any(
            p.strip("/") == settings.source for p in paths)):
        return result
    data = tree.read(settings.source) or b""
    more = unset_families(settings, data.decode("utf-8", "replace"))
    if not more:
        return result
    return LintResult(tuple(sorted({*result.findings, *more})), result.files, result.notes)


def _oversize(path: str, what: str) -> Finding:
    return Finding(path, 1, 1, "GE104", f"file is {what}; it was not read: split it "
                   "into smaller files")


def _case_layout(root: str, paths: Sequence[str]) -> list[Finding]:
    """GE802 for two files of one case name (``x.yaml`` beside ``x.yml``), GE803 for a
    case file in a subdirectory of ``cases/``: run takes ``<root>/cases/<name>.yaml``
    (or ``.yml``) only, so either would pass lint and never run as written."""
    prefix = f"{root}/cases/" if root else "cases/"
    out: list[Finding] = []
    seen: dict[str, str] = {}
    for path in sorted(paths):
        rest = path[len(prefix):] if path.startswith(prefix) else path
        if "/" in rest:
            out.append(Finding(path, 1, 1, "GE803", f"a case file in a subdirectory of "
                               f"{prefix} is never run: run takes {prefix}<name>.yaml only; "
                               f"move it to {prefix}{rest.rsplit('/', 1)[-1]}"))
            continue
        stem = rest.rsplit(".", 1)[0]
        first = seen.setdefault(stem, path)
        if first != path:
            out.append(Finding(path, 1, 1, "GE802", f"{first} and {path} are both case "
                               f"{stem!r}; run would take only {first}: keep one file"))
    return out


def _lint_one(i: Input, data: bytes, refused: dict[str, str]) -> _Result:
    if i.kind == "goldens":
        from gitevals.lint.goldens import lint_goldens

        return lint_goldens(data, i.path), []
    from gitevals.lint.cases import lint_case_bytes

    findings, refs = lint_case_bytes(data, i.path, refused)
    return findings, list(refs)


# -- the process pool (fork: workers inherit the bytes, only findings travel back) --

_SHARED: tuple[list[Input], dict[str, bytes], dict[str, str]] | None = None


def _chunk_worker(chunk: tuple[int, ...]
                  ) -> list[tuple[list[Finding], list[tuple[str, str, int, int]]]]:
    assert _SHARED is not None
    gc.disable()
    todo, data, refused = _SHARED
    out = []
    for n in chunk:
        i = todo[n]
        findings, refs = _lint_one(i, data[i.path], refused)
        out.append((findings, [(r.name, r.path, r.line, r.col) for r in refs]))
    return out


def _parallel(todo: list[Input], data: dict[str, bytes], refused: dict[str, str],
              jobs: int, progress: Progress | None = None
              ) -> list[_Result]:
    from gitevals.lint.graders import Ref
    from gitevals.lint.workers import forked

    global _SHARED
    # Goldens first: the biggest single unit starts early, cases fill the other worker.
    big = [(n,) for n, i in enumerate(todo) if i.kind == "goldens"]
    small = [n for n, i in enumerate(todo) if i.kind != "goldens"]
    chunks = big + [tuple(small[k:k + _CHUNK]) for k in range(0, len(small), _CHUNK)]
    _SHARED = (todo, data, refused)
    _warm_up()
    done = 0

    def answered(answer: list[tuple[list[Finding], list[tuple[str, str, int, int]]]]
                 ) -> None:
        nonlocal done
        done += len(answer)
        if progress is not None:
            progress(done, len(todo))

    try:
        answers = forked(chunks, min(jobs, len(chunks)), _chunk_worker, answered)
    finally:
        _SHARED = None
    results: list[_Result] = [([], [])] * len(todo)
    for chunk, answer in zip(chunks, answers, strict=True):
        for n, (findings, refs) in zip(chunk, answer, strict=True):
            results[n] = (findings, [Ref(*r) for r in refs])
    return results


def _may_fork() -> bool:
    """Whether this process may fork a pool: it is not a daemonic worker (e.g. of a
    caller's pool, which may not have children) and it runs no other thread. A thread that
    holds a lock when the process forks (stdio's, the import system's, a C library's)
    leaves the child waiting for it forever: a notebook, a test runner or a run's own
    preboot thread has such threads. Every thread of the OS counts, not only
    ``threading``'s; such a process lints serially, with the same findings."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: what threading knows
        import threading

        return threading.active_count() == 1


def _warm_up() -> None:
    """Import the rules and load the compiled validators once, before forking, so the
    workers inherit them instead of each loading (or, on a cold cache, generating) them."""
    from gitevals.lint import cases  # noqa: F401
    from gitevals.lint.goldens import fast_check
    from gitevals.schema import prepare

    prepare("case")
    fast_check()


# -- helpers --------------------------------------------------------------------------


# The guards below check the shape of what this module wrote to the cache (whose
# directory is salted by the rules' sources), not the type of every field: that
# would cost a check per finding and reference of every file of a warm lint.


def _valid_entry(entry: JSON) -> TypeGuard[_Entry]:
    """A manifest entry of the expected shape (anything else counts as a miss)."""
    return (isinstance(entry, dict) and _valid_rows(entry.get("f"), 6)
            and _valid_rows(entry.get("r"), 3))


def _valid_rows(rows: JSON, width: int) -> bool:
    return isinstance(rows, list) and all(isinstance(r, list) and len(r) == width
                                          for r in rows)


def _valid_run(entry: JSON) -> TypeGuard[_RunEntry]:
    return (isinstance(entry, dict) and isinstance(entry.get("files"), int)
            and _valid_rows(entry.get("findings"), 6))


def _valid_index(index: JSON) -> TypeGuard[Index]:
    """A grader-module index as ``graders.index_module`` makes it."""
    from gitevals.lint.graders import valid_index

    return valid_index(index)


def _row(f: Finding) -> list[JSON]:
    return [f.path, f.line, f.col, f.code, f.message, f.severity]
