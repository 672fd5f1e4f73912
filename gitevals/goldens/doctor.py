"""The seed's Phase 0 checklist over one commit: six items, each ok, missing or n/a, with
the command that fixes a missing one.

1. goldens: ``<root>/goldens.jsonl`` committed, with at least 100 items;
2. buckets: 4-8 failure buckets (1-2 stated n/a with ``--single-surface``);
3. graders: every bucket mapped to one grader (``[tool.gitevals.goldens] graders``)
   that resolves to a top-level function of ``<root>/graders/<file>.py``;
4. judges: every bucket grader that asks the judge (``t.llm``/``t.judge``) is calibrated
   (``gitevals.calibration.tree.grader_status``: its committed record is a final, current
   measurement at or above the bar); each one's status listed, n/a when none asks; the
   judge pinned to the snapshot its API answers as, by the evidence of the commit's run
   (``calibration.runs.unpinned``); an unset judge or target family, or a snapshot no run
   has checked yet, is a warning of the item;
5. drift suite: ``<root>/drift-suite.yaml`` committed;
6. baseline: some ``<root>/baseline-<model>.json`` committed.

``gather`` reads the facts through a ``Tree`` (grader modules are parsed, never
imported: ``graderfile.read``, ``graderfile.asks_judge``);
``checklist`` is a pure function of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from gitevals.goldens.stats import MAX_BUCKETS, MIN_BUCKETS, MIN_ITEMS, Stats

if TYPE_CHECKING:
    from gitevals.calibration.status import Status as Calibration
    from gitevals.git.trees import Tree
    from gitevals.jsontypes import JSONObject

Status = Literal["ok", "missing", "n/a"]


@dataclass(frozen=True)
class Item:
    """One line of the checklist: what, its status, what was found, and the fix."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    #: what does not make the item missing but is not checked as it should be
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> JSONObject:
        return {"name": self.name, "status": self.status, "detail": self.detail,
                "fix": self.fix, "warnings": list(self.warnings)}


@dataclass(frozen=True)
class Evidence:
    """What the run of the commit says of its judge: the run, the model its judge's API
    answered as on each call (full artifacts keep them; a note's summary does not), and
    the GE517 reason the run recorded, if any."""

    run_id: str
    answered: tuple[str | None, ...] = ()
    recorded: str | None = None


@dataclass(frozen=True)
class Facts:
    """What the checklist is decided from (one commit's files)."""

    root: str
    goldens: Stats | None  # None: no goldens.jsonl in the commit
    mapping: dict[str, str] | None  # bucket -> grader; None: no mapping in settings
    unresolved: dict[str, str] = field(default_factory=dict)  # grader -> why not
    judges: dict[str, Calibration] = field(default_factory=dict)  # bucket graders that
    # ask the judge -> their calibration status
    llm_modules: tuple[str, ...] = ()  # grader modules calling t.llm (no mapping)
    drift_suite: bool = False
    baselines: tuple[str, ...] = ()
    bad_baselines: dict[str, str] = field(default_factory=dict)  # path -> why not one
    single_surface: bool = False
    settings_problem: str = ""  # the first finding of settings that do not load
    #: the judge as configured: (model, judge family, target family); None: no judge
    judge_pin: tuple[str, str | None, str | None] | None = None
    #: the judge evidence of the commit's run; None: no run of the commit was found
    evidence: Evidence | None = None


def checklist(f: Facts) -> list[Item]:
    """The six items, in the seed's order."""
    return [_goldens(f), _buckets(f), _graders(f), _judges(f), _drift(f), _baseline(f)]


def _p(f: Facts, name: str) -> str:
    return f"{f.root}/{name}" if f.root else name


def _goldens(f: Facts) -> Item:
    path = _p(f, "goldens.jsonl")
    if f.goldens is None:
        return Item("goldens", "missing", f"no {path} in the commit",
                    f"label >= {MIN_ITEMS} items in {path} and commit it")
    n = f.goldens.items
    if n < MIN_ITEMS:
        return Item("goldens", "missing", f"{n:,} items in {path} (want >= {MIN_ITEMS})",
                    f"label {MIN_ITEMS - n} more and commit them "
                    "(`gitevals goldens stats` counts them)")
    return Item("goldens", "ok", f"{n:,} items committed in {path}")


def _buckets(f: Facts) -> Item:
    names = f.goldens.bucket_names if f.goldens else []
    n, want = len(names), f"want {MIN_BUCKETS}-{MAX_BUCKETS}"
    if MIN_BUCKETS <= n <= MAX_BUCKETS:
        return Item("buckets", "ok", f"{n} buckets: {', '.join(names)}")
    if n in (1, 2) and f.single_surface:
        return Item("buckets", "n/a", f"{n} bucket{'s' if n > 1 else ''}: stated a "
                    "single-failure-surface task (--single-surface)")
    fix = ('give each golden a "bucket" (axial coding into 4-8 failure modes)' if n == 0
           else "merge buckets that are one failure mode" if n > MAX_BUCKETS
           else "split into 4-8 failure modes, or run `gitevals doctor --single-surface` "
                "for a single-failure-surface task")
    return Item("buckets", "missing", f"{n} buckets ({want})", fix)


def _graders(f: Facts) -> Item:
    names = f.goldens.bucket_names if f.goldens else []
    if f.settings_problem:
        return Item("graders", "missing", f"settings do not load: {f.settings_problem}",
                    "fix the settings (`gitevals lint` lists every problem)")
    if not names:
        return Item("graders", "missing", "no buckets to grade yet",
                    "name the buckets first (item buckets)")
    mapping = f.mapping or {}
    unmapped = [b for b in names if b not in mapping]
    fix = ("map each bucket to one grader in settings: [tool.gitevals.goldens] graders = "
           '{bucket = "file.function"}')
    if unmapped:
        return Item("graders", "missing", f"no grader for bucket(s) {', '.join(unmapped)}",
                    fix)
    if f.unresolved:
        first = sorted(f.unresolved)[0]
        return Item("graders", "missing", f"grader {first} does not resolve: "
                    f"{f.unresolved[first]}", "fix the name or the module "
                    "(`gitevals lint` says where)")
    shared = sorted({g for g in mapping.values() if list(mapping.values()).count(g) > 1})
    if shared:  # each bucket has a grader, as the item asks; lint warns (GE615)
        return Item("graders", "ok", f"{len(names)} buckets, each mapped to a grader; "
                    f"{', '.join(shared)} grade{'s' * (len(shared) == 1)} more than one "
                    "(lint GE615: one grader per bucket)")
    return Item("graders", "ok", f"{len(names)} buckets, one grader each")


def _judges(f: Facts) -> Item:
    warnings = _pin_warnings(f)
    if f.mapping is None and f.llm_modules:
        return Item("judges", "missing", "grader module(s) "
                    f"{', '.join(f.llm_modules)} call t.llm but no bucket is mapped to a "
                    "grader, so which judges gate is unknown",
                    "map buckets to graders (item graders), then calibrate each judge",
                    warnings)
    if not f.judges:
        return Item("judges", "n/a", "judges calibrated: N/A (no bucket's grader calls t.llm "
                    "or t.judge: nothing to calibrate)", "", warnings)
    listed = "; ".join(f"{g} {st.state} ({st.reason})" for g, st in f.judges.items())
    detail = f"judges calibrated: {listed}{_pin(f)}"
    moved = _snapshot_problem(f)
    if moved is not None:
        return Item("judges", "missing", f"{detail}; {moved}",
                    "set judge.model to the dated snapshot the endpoint answers as, "
                    "calibrate each judge grader with it, and run again", warnings)
    todo = [g for g, st in f.judges.items() if st.advisory]
    if todo:
        return Item("judges", "missing", detail,
                    f"calibrate {', '.join(todo)} as each reason says (`gitevals calibrate "
                    f"{todo[0]} --labels FILE --final`), then commit "
                    f"{_p(f, 'calibration/' + todo[0] + '.json')}; until then the gate "
                    "does not count their buckets", warnings)
    return Item("judges", "ok", detail, "", warnings)


def _pin(f: Facts) -> str:
    """What the settings pin of the judge: its model and both families."""
    if f.judge_pin is None:
        return ""
    model, judge_family, target_family = f.judge_pin
    return (f"; judge model {model!r}, families: judge {judge_family or 'unset'}, "
            f"target {target_family or 'unset'}")


def _snapshot_problem(f: Facts) -> str | None:
    """Why the commit's run shows the judge is not the pinned snapshot (GE517: its API
    answered as another model, or changed model mid-run), or None. The models the run
    recorded are checked again here; a summary without them counts by what the run
    recorded."""
    from gitevals.calibration.runs import unpinned

    if f.judge_pin is None or f.evidence is None:
        return None
    why = unpinned(list(f.evidence.answered), f.judge_pin[0]) or f.evidence.recorded
    return None if why is None else f"run {f.evidence.run_id}: {why}"


def _pin_warnings(f: Facts) -> tuple[str, ...]:
    """An unset judge or target family (GE706), and a snapshot no run has checked yet:
    neither makes the item missing, neither is silence."""
    if f.judge_pin is None:
        return ()
    model, judge_family, target_family = f.judge_pin
    out = []
    unset = [n for n, v in (("judge", judge_family), ("target", target_family)) if v is None]
    if unset:
        out.append(f"{' and '.join(unset)} family not set, so nothing checks the judge comes "
                   "from another family than the model under test (GE706): set family = "
                   f"\"...\" in the {' and '.join(unset)} table{'s' * (len(unset) > 1)} "
                   "of the settings")
    seen = f.evidence is not None and (f.evidence.recorded is not None or any(
        m is not None for m in f.evidence.answered))
    if not seen:
        out.append(f"the judge's snapshot is not checked yet: no run of this commit "
                   f"recorded the model its API answered as (a run checks it against "
                   f"{model!r}, GE517): `gitevals run`")
    return tuple(out)


def _drift(f: Facts) -> Item:
    path = _p(f, "drift-suite.yaml")
    if f.drift_suite:
        return Item("drift suite", "ok", f"{path} committed")
    return Item("drift suite", "missing", f"no {path} in the commit",
                f"write {path} (frozen benchmarks and drift budget, docs/goldens.md) and "
                "commit it")


def _baseline(f: Facts) -> Item:
    good = [b for b in f.baselines if b not in f.bad_baselines]
    if good:
        return Item("baseline", "ok", f"{', '.join(good)} committed")
    path = _p(f, "baseline-NAME.json")
    if f.bad_baselines:
        first, why = next(iter(sorted(f.bad_baselines.items())))
        return Item("baseline", "missing", f"{first} is not a gitevals baseline ({why})",
                    "write it again from a run of the unmodified base model with `gitevals "
                    f"baseline ARTIFACT --model NAME` and commit {path}")
    return Item("baseline", "missing", f"no {_p(f, 'baseline-<model>.json')} in the commit",
                "run the goldens against the base model, then `gitevals baseline "
                f"ARTIFACT --model NAME` and commit {path}")


def complete(items: list[Item]) -> bool:
    """Phase 0 is complete when no item is missing (n/a counts as stated)."""
    return all(i.status != "missing" for i in items)


# -- reading the facts (IO through a Tree) ---------------------------------------------


def gather(tree: Tree, single_surface: bool = False, now: datetime | None = None) -> Facts:
    """The facts of ``tree`` (a commit), read through it, judges' calibration at ``now``
    (default: now); no code of it runs."""
    from gitevals.calibration.tree import statuses
    from gitevals.goldens.stats import stats_of
    from gitevals.settings import load_settings

    settings, problems = load_settings(tree)
    root = settings.root
    data = tree.read(_join(root, "goldens.jsonl"))
    mapping = _mapping(settings.raw)
    graders = sorted(set(mapping.values())) if mapping else []
    judges = {g: st for g, st in statuses(tree, settings, graders,
                                          now or datetime.now(UTC)).items()
              if st.state != "n/a"}
    from gitevals.lint.baselines import baseline_paths, problem

    baselines = tuple(baseline_paths(tree, root))
    bad = {p: why for p in baselines if (why := problem(tree.read(p))) is not None}
    return Facts(root, stats_of(data) if data is not None else None, mapping,
                 _unresolved(tree, root, graders), judges,
                 () if mapping else _llm_modules(tree, root),
                 tree.blob_sha(_join(root, "drift-suite.yaml")) is not None, baselines,
                 bad, single_surface, str(problems[0]) if problems else "",
                 (settings.judge.model, settings.judge.family,
                  settings.target.family if settings.target else None)
                 if settings.judge is not None else None,
                 evidence(tree, settings.results) if settings.judge is not None else None)


def evidence(tree: Tree, results: str) -> Evidence | None:
    """The judge evidence of the run of ``tree``'s commit (``run.store.run_of_commit``: in
    ``results`` of the working tree, else its git note), or None: ``tree`` is no commit,
    or no run of it is found or readable."""
    from gitevals.calibration.runs import answered
    from gitevals.errors import GitevalsError
    from gitevals.git.trees import RevisionTree
    from gitevals.run.store import run_of_commit

    if not isinstance(tree, RevisionTree) or tree.commit is None:
        return None
    try:
        found = run_of_commit(tree.repo, tree.repo.work_root, results, tree.commit)
    except GitevalsError:
        return None
    if found is None:
        return None
    run = found.run
    recorded = [c["reason"] for c in (run.get("judge_calibration") or {}).values()
                if c["code"] == "GE517"]
    return Evidence(run["run_id"], tuple(answered(run)), recorded[0] if recorded else None)


def _join(root: str, name: str) -> str:
    return f"{root}/{name}" if root else name


def _mapping(raw: JSONObject) -> dict[str, str] | None:
    """``[tool.gitevals.goldens] graders`` as bucket -> grader (string values only)."""
    table = raw.get("goldens")
    graders = table.get("graders") if isinstance(table, dict) else None
    if not isinstance(graders, dict):
        return None
    return {str(k): v for k, v in graders.items() if isinstance(v, str)}


def _unresolved(tree: Tree, root: str, graders: list[str]) -> dict[str, str]:
    from gitevals.graderfile import read, why_not

    out: dict[str, str] = {}
    for name in graders:
        file, _, function = name.partition(".")
        path = _join(root, f"graders/{file}.py")
        source = tree.read(path) if file and function else None
        if source is None:
            out[name] = (f"no module {path}" if file and function
                         else "a grader is named <file>.<function>")
            continue
        why = why_not(read(source), function)
        if why is not None:
            out[name] = f"{path} has no function {function}: {why}"
    return out


def _llm_modules(tree: Tree, root: str) -> tuple[str, ...]:
    from gitevals.graderfile import asks_judge

    base = _join(root, "graders/")
    out = []
    for path, sha in tree.blob_shas(base).items():
        rest = path[len(base):]
        if "/" in rest or not rest.endswith(".py"):
            continue
        [source] = tree.read_blobs([sha])
        if asks_judge(source):
            out.append(rest[:-3])
    return tuple(sorted(out))
