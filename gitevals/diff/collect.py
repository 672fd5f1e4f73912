"""What two revisions hold, gathered into a ``Diff``: the IO half of ``gitevals diff``.

It reads blobs of the two commits (git objects only, never a checkout) and the runs
pinned to them, and hands values to the pure modules of this package; only files whose
blob SHA differs are read. ``gitevals.api.diff`` calls it; it prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.diff import Diff, Side
    from gitevals.diff.buckets import SliceRow
    from gitevals.diff.goldens import GoldensDiff
    from gitevals.diff.graders import GraderChange, GraderUse
    from gitevals.diff.rules import CaseFileChange
    from gitevals.diff.suite import SuiteResult
    from gitevals.diff.tasks import TaskChange
    from gitevals.diff.verdicts import VerdictRow
    from gitevals.git.repo import Repo
    from gitevals.git.trees import Tree
    from gitevals.model import Case
    from gitevals.run.artifact import Run



def _case_files(tree: Tree, root: str) -> dict[str, str]:
    """``name relative to cases/ -> blob sha`` for every case file."""
    prefix = f"{root}/cases/"
    return {p[len(prefix):]: sha for p, sha in tree.blob_shas(prefix).items()
            if p.endswith((".yaml", ".yml"))}


def _grader_files(tree: Tree, root: str) -> dict[str, str]:
    prefix = f"{root}/graders/"
    return {p[len(prefix):]: sha for p, sha in tree.blob_shas(prefix).items()
            if p.endswith(".py") and "/" not in p[len(prefix):]}


def _changed(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


class _Sides:
    """Both revisions with their settings root and file listings (SHAs only)."""

    def __init__(self, repo: Repo, rev_a: str, rev_b: str) -> None:
        from gitevals.git.trees import RevisionTree
        from gitevals.settings import load_settings

        self.repo = repo
        self.revs = (rev_a, rev_b)
        self.trees = (RevisionTree(repo, rev_a), RevisionTree(repo, rev_b))
        self.settings = tuple(load_settings(t)[0] for t in self.trees)
        self.roots = tuple(s.root for s in self.settings)
        # "root/": a directory; a file named like the eval root is no eval tree.
        self.has_evals = tuple(bool(t.blob_shas(f"{r}/")) for t, r in zip(self.trees, self.roots,
                                                                          strict=True))

    def blob(self, sha: str | None) -> bytes | None:
        return None if sha is None else self.repo.read_blobs([sha])[0]


def _rules(s: _Sides) -> tuple[list[CaseFileChange], dict[str, Case]]:
    from gitevals.diff.rules import diff_case_file

    ra, rb = s.roots
    fa, fb = _case_files(s.trees[0], ra), _case_files(s.trees[1], rb)
    changes: list[CaseFileChange] = []
    b_cases: dict[str, Case] = {}
    for rel in _changed(fa, fb):
        change, case_b = diff_case_file(rel, f"{ra}/cases/{rel}", s.blob(fa.get(rel)),
                                        f"{rb}/cases/{rel}", s.blob(fb.get(rel)))
        if change.scenarios or change.kind == "unreadable":
            changes.append(change)
        if case_b is not None:
            b_cases[case_b.name] = case_b
    return changes, b_cases


def _graders(s: _Sides, b_cases: dict[str, Case]
             ) -> tuple[list[GraderChange], tuple[GraderUse, ...]]:
    from gitevals.diff.graders import diff_grader_module, grader_users
    from gitevals.diff.rules import read_case

    ra, rb = s.roots
    fa, fb = _grader_files(s.trees[0], ra), _grader_files(s.trees[1], rb)
    changes = [c for rel in _changed(fa, fb)
               for c in diff_grader_module(f"{rb if rel in fb else ra}/graders/{rel}",
                                           s.blob(fa.get(rel)), s.blob(fb.get(rel)))]
    names = {c.name for c in changes if c.kind in ("changed", "removed", "unreadable")}
    if not names:
        return changes, ()
    # Which scenarios on B use them: parse only case files that mention one by name.
    needles = [n.removesuffix("*").encode() for n in names]
    cases = dict(b_cases)
    for rel, sha in _case_files(s.trees[1], rb).items():
        data = s.blob(sha) or b""
        if any(n in data for n in needles):
            case, _ = read_case(f"{rb}/cases/{rel}", data)
            if case is not None and case.name not in cases:
                cases[case.name] = case
    wild = {n.removesuffix("*") for n in names if n.endswith("*")}
    exact = names | {g for c in cases.values() for sc in c.scenarios for g in sc.graders()
                     if any(g.startswith(w) for w in wild)}
    return changes, grader_users(cases.values(), exact)


def _task_listing(tree: Tree, root: str) -> dict[str, dict[str, str]]:
    """Task name -> ``path -> blob sha`` of every file (and link) of its directory."""
    from gitevals.tasks.load import tasks_dir

    base = tasks_dir(root) + "/"
    out: dict[str, dict[str, str]] = {}
    for path in [*tree.blob_shas(base), *tree.refused(base)]:
        name, sep, _ = path[len(base):].partition("/")
        if sep:
            out.setdefault(name, {})[path[len(base):]] = tree.blob_sha(path) or ""
    return out


def _tasks(s: _Sides) -> list[TaskChange]:
    """Task directories whose files differ between A and B, compared field by field."""
    from gitevals.diff.tasks import diff_task
    from gitevals.settings import load_settings
    from gitevals.tasks.load import load_task, task_dirs

    found = [(_task_listing(t, r), task_dirs(t, r), load_settings(t)[0])
             for t, r in zip(s.trees, s.roots, strict=True)]
    (la, da, sa), (lb, db, sb) = found
    out = []
    for name in sorted(set(da) | set(db)):
        if name in da and name in db and la.get(name) == lb.get(name):
            continue
        sides, problems = [], []
        for label, tree, dirs, settings in (("A", s.trees[0], da, sa), ("B", s.trees[1], db, sb)):
            task, findings = load_task(tree, dirs[name], settings) if name in dirs else (None, [])
            sides.append(task)
            bad = next((f for f in findings if f.severity == "error"), None)
            if bad is not None:
                problems.append(f"{label}: {bad.location()}: {bad.code} {bad.message}")
        change = diff_task(name, sides[0], sides[1], "; ".join(problems) or None)
        if change is not None:
            out.append(change)
    return out


def _goldens(s: _Sides) -> GoldensDiff:
    from gitevals.diff.goldens import GoldensDiff, diff_goldens

    paths = [f"{r}/goldens.jsonl" for r in s.roots]
    shas = [t.blob_sha(p) for t, p in zip(s.trees, paths, strict=True)]
    if shas[0] == shas[1]:
        return GoldensDiff(paths[0] if shas[0] else None, paths[1] if shas[1] else None)
    present = [sha for sha in shas if sha]
    read = dict(zip(present, s.repo.read_blobs(present), strict=True))
    blobs = [read[sha] if sha else None for sha in shas]
    return diff_goldens(blobs[0], blobs[1], paths[0], paths[1])


def _find_run(repo: Repo, results: str, commit: str, given: str | None
              ) -> tuple[Run | None, str | None]:
    """(run, source): --x-run FILE, else the run of the commit (``results`` of its
    revision's settings, else the note)."""
    from gitevals.run.artifact import load
    from gitevals.run.store import run_of_commit

    if given is not None:
        return load(given), "file"
    found = run_of_commit(repo, repo.work_root, results, commit)
    return (found.run, found.source) if found is not None else (None, None)


def _side(s: _Sides, i: int, run: Run | None, source: str | None,
          looked: bool = True) -> Side:
    from gitevals.diff import Side

    commit = s.trees[i].commit or ""
    # No hint when runs were not looked for (--only without verdicts): a run may exist.
    hint = None if run or not looked else missing_run_hint(s.repo, commit)
    return Side(s.revs[i], commit, s.roots[i], s.has_evals[i],
                run["run_id"] if run else None, source,
                run["commit"] if run else None, hint, _partial(run))


def _partial(run: Run | None) -> str | None:
    """Why ``run`` is not its commit's complete run (None: it is, or there is none)."""
    if run is None:
        return None
    from gitevals.run.artifact import complete, is_draft

    if complete(run):
        return None
    if run["interrupted"]:
        return "interrupted"
    if is_draft(run):
        return "a draft"
    if run["options"].get("goldens_only"):
        return "--goldens-only"
    if run["options"]["cases"]:
        return "only " + ", ".join(run["options"]["cases"])
    return "some buckets only"


def missing_run_hint(repo: Repo, commit: str) -> str:
    """What to do when ``commit`` has no run here, one line: merge the notes already
    fetched from a remote when they hold one, fetch them when they never were, else run.

    "Fetched" means ``gitevals notes pull`` left a side ref, or the remote's fetch
    refspecs bring refs/notes/gitevals and it exists.
    """
    from gitevals.git.repo import NOTES_REF, side_ref
    from gitevals.run.store import note_runs

    make = f"`gitevals run --rev {commit}`"
    remotes = repo.remotes()
    if not remotes:
        return f"make one with {make}"
    for name in remotes:
        if note_runs(repo, commit, side_ref(name)):
            return (f"the notes fetched from {name} hold one, not yet merged: "
                    f"`gitevals notes pull {name}`")
    fetched = [name for name, specs in remotes.items()
               if repo.ref_target(side_ref(name)) is not None
               or (repo.ref_target(NOTES_REF) is not None and any(NOTES_REF in s for s in specs))]
    if fetched:
        return f"none in the notes fetched from {fetched[0]} either: make one with {make}"
    name = "origin" if "origin" in remotes else next(iter(remotes))
    return (f"the notes of {name} were never fetched: `gitevals notes pull {name}` (or "
            f"`git fetch {name} {NOTES_REF}:{NOTES_REF}`), else make one with {make}")


def _run_notes(sides: tuple[Side, Side]) -> list[str]:
    out = []
    for label, side in zip("AB", sides, strict=True):
        if side.partial:
            out.append(f"note: the run of {label} ({side.commit[:12]}) is partial "
                       f"({side.partial}): the scenarios it left out show as not run; run "
                       f"the whole commit (`gitevals run --rev {side.commit[:12]}`) to "
                       "compare them")
        if side.run_commit and side.run_commit != side.commit:
            out.append(f"note: the run given for {label} ran commit {side.run_commit}, "
                       f"not {label} ({side.commit})")
        if not side.has_evals:
            out.append(f"note: {label} ({side.commit[:12]}) has no eval tree ({side.root}/): "
                       f"everything on the other side shows as "
                       f"{'added' if label == 'A' else 'removed'}")
    return out


def _resolvable(repo: Repo, *revs: str) -> tuple[Repo, str, str]:
    """``repo`` and the two revisions, once both resolve; in a shallow clone a revision
    that does not is likely cut off, which the error says with the way to deepen."""
    from gitevals.errors import RevisionError

    for rev in revs:
        try:
            repo.resolve(rev)
        except RevisionError as exc:
            if not repo.is_shallow:
                raise
            raise RevisionError(
                f"cannot resolve {rev!r}: this clone is shallow and its history may stop "
                f"before it; fetch more with `git fetch --deepen=N` (N more commits) or "
                f"`git fetch --unshallow`") from exc
    return repo, revs[0], revs[1]


def collect(repo: Repo, rev_a: str, rev_b: str, a_run: str | None, b_run: str | None,
            parts: set[str], test: str, alpha: float | None = None,
            control: str | None = None, equivalence: float | None = None) -> Diff:
    """Read what the two revisions hold and build the ``Diff``. ``alpha`` and
    ``control`` default to A's ``[tool.gitevals.statistics]``: the base revision sets
    the bar, so a change cannot loosen the test that judges it."""
    from gitevals.diff import Diff
    from gitevals.errors import UsageError

    s = _Sides(*_resolvable(repo, rev_a, rev_b))
    bar = _Bar(test, s.settings[0].alpha if alpha is None else alpha,
               s.settings[0].control if control is None else control, equivalence)
    if not any(s.has_evals) and not (a_run or b_run):
        a, b = (t.commit or "" for t in s.trees)
        raise UsageError(f"neither A ({a[:12]}) nor B ({b[:12]}) has an eval tree "
                         f"({s.roots[1]}/): nothing to compare; check the revisions")
    cases, b_cases = _rules(s) if parts & {"rules", "graders", "verdicts"} else ([], {})
    graders, users = _graders(s, b_cases) if "graders" in parts else ([], ())
    goldens = _goldens(s) if "goldens" in parts else None
    tasks = _tasks(s) if "rules" in parts else []
    looked = "verdicts" in parts
    got = (_compare_runs(repo, s, (a_run, b_run), bool(cases), b_cases, users, bar)
           if looked else _Compared())
    runs = got.runs
    sides = (_side(s, 0, *runs[0], looked), _side(s, 1, *runs[1], looked))
    return Diff(sides[0], sides[1], tuple(cases if "rules" in parts else ()), tuple(graders),
                users, goldens, got.verdicts, got.rescored and bool(got.verdicts), test,
                bar.alpha, tuple(_run_notes(sides)) + _advisory(runs[0][0], runs[1][0])
                + ((got.note,) if got.note else ()), slices=got.slices,
                tasks=tuple(tasks), suite=got.suite, control=bar.control)


@dataclass(frozen=True)
class _Bar:
    """What decides a move: the exact ``test`` at ``alpha`` under ``control``, and the
    ``equivalence`` margin (points; None: none)."""

    test: str
    alpha: float
    control: str
    equivalence: float | None


_NO_RUNS: tuple[tuple[Run | None, str | None], ...] = ((None, None), (None, None))


@dataclass(frozen=True)
class _Compared:
    """The runs of both sides (each with where it was found) and what comparing them
    gave: the verdict and slice rows, the suite's assessment, whether A was re-scored
    under B's rules, and a note when it could not be."""

    runs: tuple[tuple[Run | None, str | None], ...] = _NO_RUNS
    verdicts: tuple[VerdictRow, ...] = ()
    slices: tuple[SliceRow, ...] = ()
    rescored: bool = False
    suite: SuiteResult | None = None
    note: str | None = None


def _compare_runs(repo: Repo, s: _Sides, given: tuple[str | None, str | None],
                  has_cases: bool, b_cases: dict[str, Case], users: tuple[GraderUse, ...],
                  bar: _Bar) -> _Compared:
    """Find each side's run and compare them: A re-scored under B's rules (when its
    transcripts are here), the verdicts, slices and suite as ``diff`` decides them."""
    from gitevals.diff.suite import assess
    from gitevals.diff.verdicts import clusters, compare_verdicts, mark_grader_users

    runs = tuple(_find_run(repo, s.settings[i].results, s.trees[i].commit or "", named)
                 for i, named in enumerate(given))
    (run_a, _), (run_b, _) = runs
    rescored, note = (_rescore(repo, run_a, b_cases) if run_a is not None and has_cases
                      and b_cases else (None, None))
    if run_a is None or run_b is None:
        return _Compared(runs, rescored=rescored is not None, note=note)
    verdicts = mark_grader_users(compare_verdicts(run_a, run_b, rescored, bar.test, bar.alpha,
                                                  powered=False), users)
    verdicts = _left_out(s, verdicts)
    from gitevals.diff.buckets import compare_slices, control_slices

    slices = compare_slices(run_a, run_b, bar.test, bar.alpha)
    verdicts, suite = assess(verdicts, clusters(run_a, run_b), bar.control, bar.alpha,
                             bar.equivalence, bar.test, others=int(_measured(slices)))
    slices = control_slices(slices, bar.control, bar.alpha, suite.share)
    verdicts, slices = _corrected(verdicts, slices, run_a, run_b)
    from gitevals.diff.corrected import corrected_suite

    suite = corrected_suite(suite, verdicts, clusters(run_a, run_b))
    return _Compared(runs, verdicts, slices, rescored is not None, suite, note)


def _rescore(repo: Repo, run_a: Run, b_cases: dict[str, Case]) -> tuple[Run | None, str | None]:
    """A's run scored under B's rules, or None and why when its transcripts are not here
    (a summary fetched from the notes)."""
    from gitevals.run.scoring import score_run

    full_a = _transcripts_of(repo, run_a)
    if full_a is None:
        return None, (f"note: A's run {run_a['run_id']} is a summary here (its "
                      "transcripts are not local): A is not re-scored under B's "
                      "rules; `gitevals fetch-run A` brings them")
    return score_run(full_a, rules=b_cases), None


def _left_out(s: _Sides, verdicts: tuple[VerdictRow, ...]) -> tuple[VerdictRow, ...]:
    """A row "gone" from B's run (or "new" in it) whose scenario is in that side's commit
    was left out of a partial run (named cases, ``--goldens-only``): not run, never
    silently gone or new."""
    from dataclasses import replace

    wanted = {"gone": 1, "new": 0}
    if not any(r.change in wanted for r in verdicts):
        return verdicts
    held = [_scenario_keys(s, 0), _scenario_keys(s, 1)]
    return tuple(replace(r, change="not_run") if r.change in wanted
                 and (r.case, r.scenario) in held[wanted[r.change]] else r for r in verdicts)


def _scenario_keys(s: _Sides, i: int) -> set[tuple[str, str]]:
    """``(case, scenario)`` of every case that reads in side ``i``'s commit."""
    from gitevals.diff.rules import read_case

    root = s.roots[i]
    out: set[tuple[str, str]] = set()
    for rel, sha in _case_files(s.trees[i], root).items():
        case, _ = read_case(f"{root}/cases/{rel}", s.blob(sha) or b"")
        if case is not None:
            out |= {(case.name, str(sc.id)) for sc in case.scenarios}
    return out


def _measured(slices: tuple[SliceRow, ...]) -> bool:
    """Were any goldens slices compared (a family that shares alpha)?"""
    return any(r.a is not None and r.b is not None and r.a[1] and r.b[1] for r in slices)


def _transcripts_of(repo: Repo, run: Run) -> Run | None:
    """``run`` whole: itself, or the full artifact of a summary when it is kept here
    (never fetched: a diff stays offline); None when only the summary is here."""
    from gitevals.errors import ArtifactError
    from gitevals.run.archive import unpack
    from gitevals.run.runstore import get
    from gitevals.run.summary import is_summary

    if not is_summary(run):
        return run
    data = get(repo, run["stored"]["sha256"])
    try:
        return unpack(data, f"the full artifact of run {run['run_id']}") if data else None
    except ArtifactError:
        return None


def _corrected(verdicts: tuple[VerdictRow, ...], slices: tuple[SliceRow, ...],
               run_a: Run, run_b: Run) -> tuple[tuple[VerdictRow, ...], tuple[SliceRow, ...]]:
    """The rows with each side's judge-corrected rate where a calibrated judge decided it."""
    from gitevals.diff.corrected import corrected_rows, corrected_slices

    return (corrected_rows(verdicts, run_a, run_b),
            corrected_slices(slices, run_a, run_b))


def _advisory(run_a: Run | None, run_b: Run | None) -> tuple[str, ...]:
    if run_a is None and run_b is None:
        return ()
    from gitevals.diff.calibration import advisory_notes

    return tuple(advisory_notes(run_a, run_b))
