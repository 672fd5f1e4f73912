"""The Python API: what the commands call, and what a notebook or another tool uses.

Each function takes typed values and returns typed results; none prints, parses argv
or exits (the commands in ``gitevals/commands/`` do that). This module sits above the
features (lint, goldens, diff, ...) and the engine (``run/``), and is the one place
that puts them together: the engine never imports a feature.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals import bounds

if TYPE_CHECKING:  # imported where used: a diff of goldens never loads the case model
    from types import FrameType

    from gitevals.diff import Diff
    from gitevals.experiment.controls import Pins, Snapshot
    from gitevals.experiment.lanes import Lane
    from gitevals.experiment.results import Doc as ExperimentDoc
    from gitevals.experiment.results import LaneResult, Meta
    from gitevals.findings import Finding
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree, Tree
    from gitevals.goldens.execute import SuiteExecution
    from gitevals.goldens.gate import GateResult
    from gitevals.goldens.plan import SuitePlan
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.lint import LintResult
    from gitevals.model import Case
    from gitevals.report.history import History
    from gitevals.report.html import Report
    from gitevals.report.progress import Update
    from gitevals.report.runs import Refused
    from gitevals.run.artifact import GraderCalibration, Run
    from gitevals.run.draft import DraftFile
    from gitevals.run.pricing import CostMeter
    from gitevals.run.ray_executor import RayExecutor
    from gitevals.run.runner import Execution, Plan, Provenance
    from gitevals.run.runner import Tally as RunTally
    from gitevals.run.sequential import Rounds
    from gitevals.run.targets import ProcessRegistry
    from gitevals.settings import Settings
    from gitevals.tasks.selection import Selected


# -- lint: every rule over a tree ---------------------------------------------------------



def _default_test() -> str:
    """The statistics' default test, read when an options value is made: importing the
    statistics and the runner at the top would put them into every command's start, the
    one-file commit hook's included (issue 27)."""
    from gitevals.diff.stats import DEFAULT_TEST

    return DEFAULT_TEST


def _default_jobs() -> int:
    """The runner's default ``--jobs``, read as ``_default_test`` is."""
    from gitevals.run.runner import DEFAULT_JOBS

    return DEFAULT_JOBS

@dataclass(frozen=True)
class LintOptions:
    """``cache`` reuses what an earlier lint of the same blobs found (``lint/cache.py``);
    ``jobs`` worker processes for the goldens (None: one per CPU)."""

    cache: bool = True
    jobs: int | None = None

    def __post_init__(self) -> None:
        bounds.check_whole("LintOptions.jobs", self.jobs, 1, bounds.MAX_JOBS)


def lint(tree: Tree, paths: Sequence[str] | None = None,
         options: LintOptions = LintOptions(),
         progress: Callable[[int, int], None] | None = None) -> LintResult:
    """Every finding of ``tree`` (a working tree, the index or a revision: ``open_tree``),
    restricted to ``paths`` when given; ``progress(done, total)`` as goldens are read."""
    from gitevals.lint import lint_tree

    return lint_tree(tree, paths, cache=options.cache, jobs=options.jobs, progress=progress)


# -- diff: two revisions and their runs -------------------------------------------------


@dataclass(frozen=True)
class DiffOptions:
    """``a_run``/``b_run`` name a run of each side (default: the newest pinned to the
    commit); ``parts`` what to compare; ``test`` the exact test on pass counts; ``alpha``,
    ``control`` and ``equivalence`` (points) default to A's settings."""

    a_run: str | None = None
    b_run: str | None = None
    parts: frozenset[str] = frozenset(("rules", "graders", "goldens", "verdicts"))
    test: str = field(default_factory=_default_test)
    alpha: float | None = None
    control: str | None = None
    equivalence: float | None = None

    def __post_init__(self) -> None:
        bounds.check_alpha("DiffOptions.alpha", self.alpha)
        bounds.check_points("DiffOptions.equivalence", self.equivalence, optional=True)


def diff(repo: Repo, a: str, b: str, options: DiffOptions | None = None) -> Diff:
    """What changed from revision ``a`` to ``b``: rules, graders, goldens and, from the
    runs pinned to them, verdicts beyond noise (``Diff``; reporters in ``report/diff``)."""
    from gitevals.diff.collect import collect

    options = options or DiffOptions()
    return collect(repo, a, b, options.a_run, options.b_run, set(options.parts),
                   options.test, options.alpha, options.control, options.equivalence)


# -- plan: what a run of a revision will do ------------------------------------------------


def plan(tree: Tree, names: Sequence[str], trials: int | None = None,
         goldens_alone: bool = False) -> Plan:
    """Read settings and the selected cases of ``tree``; lint them; nothing runs.

    A tree with no case and no task is a usage error, unless ``goldens_alone`` and its
    goldens are mapped to graders: then the plan is empty (``empty``), and the goldens
    are what the run sends."""
    from gitevals.errors import UsageError
    from gitevals.run.runner import MAX_TRIALS, Plan, case_paths, select_cases
    from gitevals.settings import load_settings

    bounds.check_whole("plan trials", trials, 1, bounds.MAX_TRIALS)
    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]}")
    available = case_paths(tree, settings.root)
    picked = _select_tasks(tree, settings, available, names)
    if not available and not picked.tasks and not picked.blocked:
        if goldens_alone and not names and settings.golden_graders:
            return Plan(settings, (), (), (), {}, trials, (), picked.notes)
        raise UsageError(f"no cases in {settings.root}/cases/ of {tree.label}: "
                         f"{_no_case_fix(tree, settings)}{_goldens_hint(tree, settings)}")
    chosen = (available if picked.cases is None
              else select_cases(available, picked.cases) if picked.cases else {})
    findings = _lint(tree, list(chosen.values()))
    cases, blocked = [], []
    for name, path in chosen.items():
        if any(f.path == path and f.severity == "error" for f in findings):
            blocked.append(name)  # lint said what is wrong; loading it would only guess
            continue
        case, more = load_case_file(tree, path)
        findings += [f for f in more if f not in findings]
        if case is None or any(f.path == path and f.severity == "error" for f in findings):
            blocked.append(name)
        else:
            cases.append(case)
    findings += [f for f in picked.findings if f not in findings]
    the_plan = Plan(settings, tuple(cases), (*blocked, *picked.blocked),
                    tuple(sorted(findings)),
                    {**_used_files(tree, settings, cases), **picked.files}, trials,
                    picked.tasks, picked.notes)
    if the_plan.total() > MAX_TRIALS:
        # Refused before anything starts: a typo such as `trials: 1000000000000` must not
        # allocate (or bill) without bound.
        raise UsageError(f"this run would make {the_plan.total():,} trials, over the limit "
                         f"of {MAX_TRIALS:,} a run; lower `trials` (or --trials), or run "
                         "fewer cases at once")
    return the_plan


def _select_tasks(tree: Tree, settings: Settings, available: dict[str, str],
                  names: Sequence[str]) -> Selected:
    """``gitevals.run.tasks.select``, without importing the task machinery (its sandbox,
    its verifier: a tenth of a one-case run's start) when nothing at all is under
    ``<root>/tasks/``: then every name is a case's (or unknown), and nothing is noted."""
    from gitevals.tasks import tasks_dir
    from gitevals.tasks.selection import Selected

    base = tasks_dir(settings.root) + "/"
    if not tree.blob_shas(base) and not tree.refused(base):
        return Selected(list(names) if names else None)
    from gitevals.run import tasks

    return tasks.select(tree, settings, available, names)


def _no_case_fix(tree: Tree, settings: Settings) -> str:
    """What to do about a revision with no case: commit the cases the working tree has
    (right after `gitevals init`, say), else write one."""
    from gitevals.git.trees import RevisionTree

    cases = (tree.repo.work_root / settings.root / "cases"
             if isinstance(tree, RevisionTree) else None)
    waiting = sorted(p.name for p in cases.glob("*.y*ml") if p.is_file()) if (
        cases is not None and cases.is_dir()) else []
    if waiting:
        from gitevals.text import visible

        shown = visible(f"{settings.root}/cases/{waiting[0]}")
        more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
        return (f"{shown}{more} is in the working tree only: commit it first "
                "(runs read the commit, not the working tree)")
    return "add a <name>.yaml there (see `gitevals init`)"


def _goldens_hint(tree: Tree, settings: Settings) -> str:
    """What else would make the tree runnable: mapping the buckets of its goldens."""
    from gitevals.goldens.plan import goldens_path

    path = goldens_path(settings.root)
    if settings.golden_graders or tree.blob_sha(path) is None:
        return ""
    return (f", or map the buckets of {path} to graders in [tool.gitevals.goldens] "
            "graders to run the goldens alone")


def _lint(tree: Tree, paths: list[str]) -> list[Finding]:
    from gitevals.lint import lint_tree

    return list(lint_tree(tree, paths=paths).findings)


def load_case_file(tree: Tree, path: str) -> tuple[Case | None, list[Finding]]:
    """Parse and model one case; a failure is a finding, never an exception."""
    from gitevals.findings import Finding, has_errors
    from gitevals.model import load_case
    from gitevals.yamlsafe import parse

    doc, findings = parse(tree.read(path) or b"", path)
    if doc is None or has_errors(findings):
        return None, findings
    try:
        if not isinstance(doc.data, dict):
            raise TypeError("the top level is not a mapping")
        return load_case(path, doc.data), findings
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return None, [*findings, Finding(path, 1, 1, "GE000",
                                         f"cannot load the case: {exc}; run `gitevals lint`")]


def _used_files(tree: Tree, settings: Settings, cases: list[Case]) -> dict[str, str]:
    paths = {c.path for c in cases}
    if settings.source:
        paths.add(settings.source)
    for c in cases:
        for s in c.scenarios:
            for g in s.graders():
                paths.add(f"{settings.root}/graders/{g.partition('.')[0]}.py")
    out = {}
    for p in sorted(paths):
        e = tree.entry(p)
        if e is not None:
            out[p] = e.sha
    from gitevals.graderimports import closure

    # What the graders import from the tree is pinned beside them (graderimports.py).
    graders = f"{settings.root}/graders/" if settings.root else "graders/"
    out.update(closure(tree, [p for p in out if p.startswith(graders)], settings.root))
    return dict(sorted(out.items()))


# -- run: execute a plan at a commit --------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """How a run executes, one value instead of a flag per constructor: ``names`` the
    cases asked for (recorded), ``jobs`` conversations at once, ``check`` the target
    preflight, ``target_env`` what the target's environment adds (``public_env`` the
    names whose values are recorded), ``rounds`` a sequential design (``run
    --against``), ``bwrap`` the sandbox for task verifiers, ``cluster`` a connected Ray
    executor, ``suite`` the goldens to send, ``cost_limit`` in USD, and what the
    artifact records of the command line (``goldens_only``, ``draft``)."""

    names: tuple[str, ...] = ()
    jobs: int = field(default_factory=_default_jobs)
    check: bool = True
    target_env: Mapping[str, str] | None = None
    public_env: frozenset[str] = frozenset()
    rounds: Rounds | None = None
    bwrap: str | None = None
    cluster: RayExecutor | None = None
    graders_on_workers: bool = False
    suite: SuitePlan | None = None
    cost_limit: float | None = None
    #: ``--goldens-only`` in a tree that has cases: recorded, so diff knows none ran
    goldens_only: bool = False
    #: ``run --draft``: the file the draft case was read from (recorded on that case)
    draft: DraftFile | None = None
    #: the run's processes, when the caller made them early (``ProcessRegistry.prestart``:
    #: the supervisor boots while the plan is read); closed when the run ends
    registry: ProcessRegistry | None = None

    def __post_init__(self) -> None:
        bounds.check_whole("RunOptions.jobs", self.jobs, 1, bounds.MAX_JOBS, optional=False)
        bounds.check_usd("RunOptions.cost_limit", self.cost_limit)


#: Shows progress while a block runs (``report.progress.progress``, or ``silent``).
ProgressFactory = Callable[..., AbstractContextManager["Update"]]


@contextmanager
def silent(label: str, total: int, unit: str = "trials",
           groups: tuple[str, int] | None = None) -> Iterator[Update]:
    """No progress shown: what ``run_commit`` uses unless it is handed a display."""
    yield lambda done, failures, running=None, groups_done=None: None


#: Receives the lines a command prints on stderr as it goes (``print`` to stderr, or
#: ``_quiet``): lint findings, which lane runs, a fallback directory.
Say = Callable[[str], None]


def _quiet(line: str) -> None:
    """Say nothing: what the API does unless it is handed somewhere to say it."""


def run_commit(tree: RevisionTree, the_plan: Plan, prov: Provenance,
               options: RunOptions | None = None,
               progress: ProgressFactory = silent) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the
    artifact (``run.build``: scored by its judge graders' calibration at its start, as
    ``calibrated`` would). The caller keeps it (``run.store``) and renders it; nothing
    is printed here but ``progress``."""
    return _execute(tree, the_plan, prov, options or RunOptions(), progress)


def task_notes(the_plan: Plan) -> list[str]:
    """What a run of the plan's tasks cannot realize (an image) and what the task loader
    skipped, one line each, made safe to print (names come from the tree)."""
    if not the_plan.tasks and not the_plan.notes:
        return []  # (a run of cases alone never loads the task machinery)
    from gitevals.run.tasks import gap_lines
    from gitevals.text import visible

    lines = [visible(line) for line in [*the_plan.notes, *gap_lines(the_plan.tasks)]]
    return [line if line.startswith("gitevals:") else f"gitevals: {line}" for line in lines]


def calibrated(tree: RevisionTree, the_plan: Plan, artifact: Run) -> Run:
    """The run with its judge graders' calibration; an advisory one's failures don't count."""
    from datetime import UTC, datetime

    from gitevals.calibration.runs import attach

    started = datetime.fromisoformat(artifact["started_at"].replace("Z", "+00:00"))
    return attach(artifact, tree, the_plan.settings, started.astimezone(UTC))


def _advisory(tree: RevisionTree, the_plan: Plan, at: float) -> frozenset[str]:
    """The plan's judge graders that are advisory at ``at`` (the run's start, as
    ``calibrated`` decides): a sequential run's looks do not count their failures."""
    from datetime import UTC, datetime

    from gitevals.calibration.runs import calibration_of
    from gitevals.run.artifact import grader_calls
    from gitevals.run.scoring import expect_of

    names = {name for c in the_plan.cases for s in c.scenarios
             for _, name in grader_calls(expect_of(s))}
    now = datetime.fromtimestamp(at, UTC)
    return frozenset(n for n, c in calibration_of(tree, the_plan.settings, names, now).items()
                     if c["status"] == "advisory")


def preflight_judge(tree: RevisionTree, the_plan: Plan, suite: SuitePlan | None = None) -> None:
    """Refuse the run when a selected grader calls ``t.llm`` and the judge cannot answer."""
    from gitevals.run import preflight

    names = {g for c in the_plan.cases for s in c.scenarios for g in s.graders()}
    names |= {i.grader for i in suite.items} if suite is not None else set()
    settings = the_plan.settings
    preflight.check_judge(settings, preflight.llm_graders(tree, settings.root, names))


def find_sandbox(the_plan: Plan, no_sandbox: bool) -> str | None:
    """The bubblewrap that runs task verifiers (None: no tasks, or ``no_sandbox``); a
    UsageError saying how to get one when there is none that works here."""
    if not the_plan.tasks or no_sandbox:
        return None
    return working_bwrap()


def working_bwrap(what: str = "task verifiers", escape: bool = True) -> str:
    """A bubblewrap that can make a sandbox here; else a UsageError saying how to get one
    (``what`` names what runs in it; ``escape``: ``--no-sandbox`` is offered)."""
    import os

    from gitevals.errors import UsageError
    from gitevals.tasks import userns
    from gitevals.tasks.sandbox import BWRAP_ENV, find_bwrap, probe
    from gitevals.text import visible

    bwrap = find_bwrap()
    if bwrap is None:
        given = os.environ.get(BWRAP_ENV)
        where = ("on PATH" if given is None else f"at {visible(given)} (${BWRAP_ENV})"
                 if given else f"(${BWRAP_ENV} is set but empty)")
        hint = userns.missing_hint(os.environ)
        raise UsageError(f"{what} run in bubblewrap, and there is no bwrap {where}: "
                         "install it (Debian/Ubuntu: apt-get install bubblewrap"
                         f"{'; ' + hint if hint else ''})" + (
                             ", or pass --no-sandbox to run them without isolation "
                             "(recorded in the artifact)" if escape else ""))
    why = probe(bwrap)
    if why is not None:
        from gitevals.text import one_line

        cause = userns.diagnose(userns.read_settings(), os.environ)
        fix = cause or ("allow unprivileged user namespaces, or install a bubblewrap that "
                        "knows --cap-drop, --size and --seccomp")
        raise UsageError(f"{visible(bwrap)} cannot make a sandbox here ({visible(one_line(why))}):"
                         f" {fix}{', or pass --no-sandbox' if escape else ''}")
    return bwrap


@dataclass(frozen=True)
class RunSelection:
    """What one run sends: ``cases`` (``()``: every case and task), ``trials`` (None: each
    scenario's own), ``goldens_only`` (no case: the goldens alone), ``goldens`` (the
    goldens besides the cases), ``buckets`` (only these buckets' goldens), ``draft`` (a
    draft case is run: the goldens are not sent unless asked for), ``task_controls``
    (each task's validity controls run before its trials)."""

    cases: tuple[str, ...] = ()
    trials: int | None = None
    goldens_only: bool = False
    goldens: bool = False
    buckets: tuple[str, ...] = ()
    draft: bool = False
    task_controls: bool = False

    def __post_init__(self) -> None:
        bounds.check_whole("RunSelection.trials", self.trials, 1, bounds.MAX_TRIALS)


@dataclass(frozen=True)
class RunPlans:
    """A run's plans: the cases' (empty with ``goldens_only``), the goldens' (None when
    not sent), ``sendable`` (the goldens' plan when its goldens lint, else None), and what
    to tell the user, one line each: of the cases' plan (``notes``: the goldens sent
    alone) and of the goldens' (``suite_notes``: why they are not sent)."""

    plan: Plan
    suite: SuitePlan | None
    sendable: SuitePlan | None
    notes: tuple[str, ...] = ()
    suite_notes: tuple[str, ...] = ()


def run_plans(tree: Tree, selection: RunSelection) -> RunPlans:
    """The plans of a run of ``tree`` (``plan``, and ``goldens.plan.plan_suite`` when the
    goldens are sent: asked for, or a run of every case of a tree that maps buckets to
    graders). ``UsageError`` for ``goldens_only`` with named cases."""
    import dataclasses

    from gitevals.errors import UsageError
    from gitevals.run import runner
    from gitevals.settings import load_settings

    notes: list[str] = []
    if selection.goldens_only and selection.cases:
        raise UsageError("--goldens-only runs no case: name no CASE with it")
    if selection.goldens_only:
        settings, bad = load_settings(tree)
        if bad:
            raise UsageError(f"{bad[0]}")
        the_plan = runner.Plan(settings, (), (), (), {}, selection.trials)
    else:
        the_plan = plan(tree, selection.cases, selection.trials,
                        goldens_alone=not selection.draft)
        if runner.empty(the_plan):
            root = the_plan.settings.root
            notes.append(f"gitevals: no case in {root}/cases/ nor task in {root}/tasks/ of "
                         f"{tree.label}: sending the goldens alone, as --goldens-only does")
    if selection.task_controls:
        the_plan = dataclasses.replace(the_plan, task_controls=True)
    asked = selection.goldens or selection.goldens_only or bool(selection.buckets)
    wanted = asked or (not selection.cases and not selection.draft
                       and bool(the_plan.settings.golden_graders))
    if not wanted:
        return RunPlans(the_plan, None, None, tuple(notes))
    from gitevals.goldens.plan import plan_suite  # here: a run without goldens never loads it

    suite = plan_suite(tree, the_plan.settings, list(selection.buckets) or None)
    if not suite.blocked:
        return RunPlans(the_plan, suite, suite, tuple(notes))
    refused = [*map(str, suite.findings), "gitevals: the goldens do not lint and were not "
               "run; fix them (`gitevals lint`)"]
    return RunPlans(the_plan, suite, None, tuple(notes), tuple(refused))


@dataclass(frozen=True)
class AgainstOptions:
    """``run --against REV``: ``rev`` the base revision, whose run gives each scenario's
    base tallies; ``max_trials`` a scenario runs at most (None: its own trials), ``looks``
    at most (None: 5), ``drop`` the pass-rate drop in points that matters, ``alpha`` and
    ``control`` for the scenarios (None: the plan's settings)."""

    rev: str
    max_trials: int | None = None
    looks: int | None = None
    drop: float = 20.0
    alpha: float | None = None
    control: str | None = None

    def __post_init__(self) -> None:
        _check_sequential("AgainstOptions", self.max_trials, self.looks, self.drop)
        bounds.check_alpha("AgainstOptions.alpha", self.alpha)


def _check_sequential(owner: str, max_trials: object, looks: object, drop: object) -> None:
    """The bounds of a sequential run's design, as ``run --max-trials``, ``--looks`` and
    ``--drop`` have them."""
    bounds.check_whole(f"{owner}.max_trials", max_trials, 1, bounds.MAX_SEQUENTIAL_TRIALS)
    bounds.check_whole(f"{owner}.looks", looks, 1, bounds.MAX_LOOKS)
    bounds.check_points(f"{owner}.drop", drop)


def sequential_design(repo: Repo, the_plan: Plan, options: AgainstOptions) -> Rounds:
    """The sequential design of a run against ``options.rev`` (``RunOptions.rounds``): the
    base tallies from the run pinned to that revision, each scenario's design at alpha /
    (scenarios with a base) under fdr and fwer (a design gives no p to adjust: the family
    is held by Bonferroni, as diff reads it back). ``UsageError`` when the base has no run."""
    from gitevals.errors import UsageError
    from gitevals.run import sequential
    from gitevals.run.store import run_of_commit
    from gitevals.stats.sequential import DEFAULT_LOOKS

    commit = repo.resolve(options.rev)
    found = run_of_commit(repo, repo.work_root, the_plan.settings.results, commit)
    if found is None:
        raise UsageError(f"no run of {options.rev} ({commit[:12]}) to run against: make one "
                         f"with `gitevals run --rev {options.rev}`")
    planned = {(c.name, s.id): the_plan.trials_of(s) for c in the_plan.cases
               for s in c.scenarios}
    alpha = the_plan.settings.alpha if options.alpha is None else options.alpha
    control = the_plan.settings.control if options.control is None else options.control
    bases = sequential.bases_of(found.run)
    based = sum(1 for key in planned if key in bases) or 1
    level = alpha / based if control != "none" else alpha
    settings = sequential.Settings(commit, found.run["run_id"], options.max_trials,
                                   options.looks or DEFAULT_LOOKS, level, options.drop / 100)
    return sequential.Rounds(settings, planned, bases)


def _execute(tree: RevisionTree, the_plan: Plan, prov: Provenance, options: RunOptions,
             progress: ProgressFactory, hold: Callable[[], object] | None = None) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the
    artifact. gitevals adopts what escapes its targets and graders, and kills it all
    before the materialized tree is removed (gitevals.run.reaper). ``hold`` is called as
    the trials start (``_signals_held``: a signal after them waits for the run's keep)."""
    import time

    from gitevals.run.reaper import subreaper
    from gitevals.run.workdir import workdir

    interpreter = _interpreter(tree, the_plan)
    with workdir("run") as tmp, subreaper():
        execution = _start(tree, the_plan, prov, options, tmp, interpreter)
        goldens = _suite_execution(options.suite, the_plan, str(tmp), options.jobs,
                                   options.target_env, interpreter, execution.registry)
        started = time.time()
        halt = _halt(execution, goldens)
        meter = _cost_meter(the_plan, options.cost_limit, execution, halt)
        if hold is not None:
            hold()
        with _signals_stop(execution, halt):
            try:
                _run_trials(tree, the_plan, options.rounds, execution, started, progress)
                _send_goldens(goldens, execution, progress)
            finally:
                _close(execution, options.cluster, goldens)
        finished = time.time()
    return _artifact(tree, the_plan, prov, options, execution, goldens, meter,
                     (started, finished))


def _start(tree: RevisionTree, the_plan: Plan, prov: Provenance, options: RunOptions,
           tmp: Path, interpreter: str | None) -> Execution:
    """The commit materialized in ``tmp``, its target checked (the preflight, unless
    ``options.check`` is off), the cluster started, and the execution of the plan there."""
    from gitevals.run import preflight, runner
    from gitevals.run.targets import ProcessRegistry

    target, cluster = the_plan.settings.target, options.cluster
    registry = options.registry or ProcessRegistry()
    if cluster is None and target is not None:
        registry.prestart()  # while the commit is materialized
    tree.materialize(tmp)
    where = str(tmp)
    # A python target run here is imported once, by the worker its conversations fork
    # from (after the execution exists); anything else is checked now.
    warm = options.check and target is not None and preflight.warms(target, cluster is None)
    if options.check and target is not None and not warm:
        preflight.check_target(target, where, interpreter, options.target_env)
    if cluster is not None:
        from gitevals.run.executors import RunShared

        cluster.start(where, prov.tree,
                      RunShared(the_plan, options.jobs, grader_timeout(),
                                options.graders_on_workers, dict(options.target_env or {}),
                                sandboxed=options.bwrap is not None))
    execution = runner.Execution(the_plan, where, options.jobs, grader_timeout(),
                                 options.target_env, options.bwrap, executor=cluster,
                                 interpreter=interpreter, public_env=options.public_env,
                                 registry=registry)
    if warm and target is not None:
        try:
            preflight.check_warm(execution, target, where, interpreter)
        except BaseException:
            execution.registry.close()
            raise
    return execution


def _halt(execution: Execution, goldens: SuiteExecution | None) -> Callable[[], None]:
    """What stops the run cleanly (a signal, the cost limit): the trials and the goldens
    stop starting; what finished is kept and the artifact is marked interrupted."""
    def halt() -> None:
        execution.interrupt()
        if goldens is not None:
            goldens.interrupt()

    return halt


def _cost_meter(the_plan: Plan, limit: float | None, execution: Execution,
                halt: Callable[[], None]) -> CostMeter | None:
    """With ``cost_limit``: the meter each finished trial is added to, which ``halt``s
    the run once the trials have cost ``limit`` USD."""
    if limit is None:
        return None
    from gitevals.run.pricing import CostMeter

    meter = CostMeter(the_plan.settings.pricing, limit, halt)
    execution.on_trial = meter.add
    return meter


@contextmanager
def _signals_stop(execution: Execution, halt: Callable[[], None]) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM ``halt`` the run (what finished becomes
    the interrupted run); the handlers before are put back after."""
    import signal

    def stop(signum: int, frame: FrameType | None) -> None:
        halt()
        if execution.looking:  # a look's computation checks no flag: end it here
            raise KeyboardInterrupt

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _run_trials(tree: RevisionTree, the_plan: Plan, rounds: Rounds | None,
                execution: Execution, started: float, progress: ProgressFactory) -> None:
    """Run the plan's trials (a sequential run's rounds with ``rounds``), shown by
    ``progress`` as cases (and tasks)."""
    cases = len(the_plan.cases)
    label = f"{cases} case{'s' * (cases != 1)}" + (
        f", {len(the_plan.tasks)} task{'s' * (len(the_plan.tasks) != 1)}"
        if the_plan.tasks else "")
    # a sequential run (--against) may go to every scenario's last look
    total = the_plan.total() if rounds is None else (
        rounds.most() + len(the_plan.tasks) * the_plan.task_trials())
    with progress(label, total, groups=("cases", cases)) as update:
        def report(t: RunTally) -> None:
            update(t.done, t.failures, t.running, t.cases_done)

        if rounds is None:
            execution.run(report)
        else:
            from gitevals.run.sequential import run_rounds

            run_rounds(execution, rounds, report, _advisory(tree, the_plan, started))


def _send_goldens(goldens: SuiteExecution | None, execution: Execution,
                  progress: ProgressFactory) -> None:
    """Send the goldens after the trials, unless the run was stopped."""
    if goldens is not None and not execution.stop.is_set():
        with progress("goldens", len(goldens.plan.items), unit="items") as sent:
            goldens.run(lambda done, bad: sent(done, bad))


def _close(execution: Execution, cluster: RayExecutor | None,
           goldens: SuiteExecution | None) -> None:
    """End what the run started: its processes, its cluster's, the goldens'."""
    execution.registry.close()
    if cluster is not None:
        cluster.close()
    if goldens is not None:
        goldens.registry.close()


def _artifact(tree: RevisionTree, the_plan: Plan, prov: Provenance, options: RunOptions,
              execution: Execution, goldens: SuiteExecution | None, meter: CostMeter | None,
              times: tuple[float, float]) -> Run:
    """The artifact of the finished (or stopped) run, from every part (``run.build``)."""
    from gitevals.run.build import ArtifactParts, GoldensPart, build_artifact

    started, finished = times
    part = None if goldens is None else GoldensPart(goldens.part(), goldens.plan.files,
                                                    goldens.stop.is_set())
    return build_artifact(ArtifactParts(
        prov, the_plan, execution, list(options.names), options.jobs, started, finished,
        _calibration(tree, the_plan, started), options.rounds, part,
        None if meter is None else meter.limit,
        meter.reason() if meter is not None and meter.reached else None,
        options.goldens_only, options.draft))


def _calibration(tree: RevisionTree, the_plan: Plan, started: float
                 ) -> Callable[[Run], dict[str, GraderCalibration]]:
    """How the builder learns a run's judge calibration: ``calibration.runs`` asked of the
    assembled run, at the run's start as its artifact records it (what ``calibrated``
    attaches to a finished run)."""
    from datetime import datetime

    from gitevals.calibration.runs import run_calibration
    from gitevals.run.artifact import utc_stamp

    now = datetime.fromisoformat(utc_stamp(started).replace("Z", "+00:00"))
    return lambda run: run_calibration(run, tree, the_plan.settings, now)


def _suite_execution(suite: SuitePlan | None, the_plan: Plan, tree_dir: str,
                     jobs: int, target_env: Mapping[str, str] | None = None,
                     interpreter: str | None = None,
                     registry: ProcessRegistry | None = None) -> SuiteExecution | None:
    if suite is None:
        return None
    from gitevals.goldens.execute import SuiteExecution

    return SuiteExecution(suite, the_plan.settings, tree_dir, jobs, grader_timeout(),
                          target_env, interpreter, registry)


def _interpreter(tree: RevisionTree, the_plan: Plan) -> str | None:
    """The interpreter of a python target (``[target] interpreter``, else the
    repository's ``.venv``, else gitevals' own); None for a command target."""
    target = the_plan.settings.target
    if target is None or target.command or not target.python:
        return None
    from gitevals.run.targets import resolve_interpreter

    return resolve_interpreter(target.interpreter, str(tree.repo.work_root))


def grader_timeout() -> float:
    """30 s; GITEVALS_GRADER_TIMEOUT (seconds, above 0 and at most 3,600) overrides it,
    for tests of the timeout path."""
    import os

    from gitevals.run.grading import GRADER_TIMEOUT

    try:
        value = float(os.environ.get("GITEVALS_GRADER_TIMEOUT") or GRADER_TIMEOUT)
    except ValueError:
        return GRADER_TIMEOUT
    return value if 0 < value <= 3600 else GRADER_TIMEOUT  # NaN fails both


# -- run a revision and keep its run: what `gitevals run` does -------------------------------


@dataclass(frozen=True)
class RunRequest:
    """What ``run_rev`` is asked, as ``gitevals run`` takes it (docs/run.md): ``rev``; the
    ``cases`` (names, or ``<name>.yaml``; ``()``: every case and task) and ``trials`` (None:
    each scenario's own); ``jobs`` (None: 16); ``allow_dirty`` (run although tracked files
    have uncommitted changes; recorded); ``note`` (attach the run as the commit's git
    note); ``draft`` (the path of a case file from outside the tree, run alone against the
    commit); ``target_env`` (``KEY=VALUE`` each) and ``public_env`` (the names recorded in
    clear); a sequential run ``against`` a base revision with ``max_trials``, ``looks``,
    ``drop`` (points), ``alpha`` and ``control``; ``sandbox`` (task verifiers in
    bubblewrap) and ``task_controls``; the goldens (``goldens``, ``goldens_only``,
    ``buckets``); ``check`` (the preflight); ``executor`` (``local`` or ``ray``; None: the
    ``[executor]`` settings), ``ray_address``, ``graders_on_workers``; ``cost_limit`` (USD)."""

    rev: str = "HEAD"
    cases: tuple[str, ...] = ()
    trials: int | None = None
    jobs: int | None = None
    allow_dirty: bool = False
    note: bool = True
    draft: str | None = None
    target_env: tuple[str, ...] = ()
    public_env: tuple[str, ...] = ()
    against: str | None = None
    max_trials: int | None = None
    looks: int | None = None
    drop: float = 20.0
    alpha: float | None = None
    control: str | None = None
    sandbox: bool = True
    task_controls: bool = False
    goldens: bool = False
    goldens_only: bool = False
    buckets: tuple[str, ...] = ()
    check: bool = True
    executor: str | None = None
    ray_address: str | None = None
    graders_on_workers: bool = False
    cost_limit: float | None = None

    def __post_init__(self) -> None:
        """A value past what ``gitevals run`` takes is refused as the flag would be."""
        bounds.check_whole("RunRequest.trials", self.trials, 1, bounds.MAX_TRIALS)
        bounds.check_whole("RunRequest.jobs", self.jobs, 1, bounds.MAX_JOBS)
        _check_sequential("RunRequest", self.max_trials, self.looks, self.drop)
        bounds.check_alpha("RunRequest.alpha", self.alpha)
        bounds.check_usd("RunRequest.cost_limit", self.cost_limit)


@dataclass(frozen=True)
class RunResult:
    """A run of a revision, kept: ``run`` the artifact, ``text`` it as written (JSON),
    ``path`` where (a temp file when the results directory could not be written),
    ``noted`` whether the commit's git note now holds it. ``refused`` the cases lint kept
    from running (reporters show them as failures), ``blocked`` something asked for did
    not run (a case, or the goldens, did not lint). ``run`` and ``path`` are None when
    nothing ran: nothing to send, or (``blocked``) every selected case refused; then
    nothing was written, so the commit's last real run stays its run."""

    run: Run | None
    path: Path | None = None
    text: str = ""
    noted: bool = False
    refused: tuple[Refused, ...] = ()
    blocked: bool = False
    draft: DraftFile | None = None

    @property
    def interrupted(self) -> bool:
        return self.run is not None and self.run["interrupted"]

    @property
    def ok(self) -> bool:
        """It ran, nothing asked for was refused, and no verdict failed."""
        from gitevals.run.artifact import failed

        return self.run is not None and not self.blocked and not failed(self.run)


@dataclass(frozen=True)
class _Staged:
    """A run made ready: the plans, the draft, what the artifact records of the tree's
    state (``dirty``, ``digest``), the refused cases, the sandbox, the names asked for."""

    plans: RunPlans
    draft: DraftFile | None
    dirty: bool
    digest: str | None
    refused: tuple[Refused, ...]
    bwrap: str | None
    names: tuple[str, ...]


def run_rev(request: RunRequest, repo: Repo | None = None,
            progress: ProgressFactory = silent, say: Say = _quiet) -> RunResult:
    """Run ``request.rev`` as committed and keep the run, as ``gitevals run`` does: plan
    it (lint refuses a case that does not lint), refuse uncommitted changes unless
    ``allow_dirty``, run it (``run_commit``, on the Ray cluster when asked), write
    ``<root>/results/<run_id>.json`` (a temp file when that cannot be written) and the
    git note. ``say`` gets the lines ``gitevals run`` prints on stderr (findings, notes,
    warnings); ``UsageError`` for what cannot run. ``repo`` None: the current directory's."""
    from gitevals.run.targets import ProcessRegistry

    ray = request.ray_address is not None and request.executor != "local"
    # The supervisor of a local run's targets (a Python start of its own) boots while
    # gitevals imports what it needs and reads the plan, not after (#27: the start).
    registry = ProcessRegistry() if not ray and request.executor != "ray" else None
    if registry is not None:
        registry.prestart()
    try:
        jobs = request.jobs or _default_jobs()
        # With ray_address, joining the cluster (seconds: importing Ray, starting a host
        # per node) goes on while the plan is made; an address nobody answers on stops it.
        early = _join(request.ray_address) if ray else None
        try:
            return _run_rev(request, repo, jobs, early, registry, progress, say)
        finally:
            if early is not None:
                early.close()
    finally:
        if registry is not None:
            registry.close()


def _run_rev(request: RunRequest, repo: Repo | None, jobs: int, early: RayExecutor | None,
             registry: ProcessRegistry | None, progress: ProgressFactory, say: Say
             ) -> RunResult:
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.run import runner
    from gitevals.run.targetenv import collect, public_names

    target_env = collect(list(request.target_env))
    public = public_names(list(request.public_env), target_env)
    repo = repo if repo is not None else require_repo()
    tree = RevisionTree(repo, request.rev)
    assert tree.commit is not None and tree.tree_sha is not None
    if registry is not None:
        _preboot(tree, registry, target_env)
    staged = _stage(repo, tree, request, say)
    the_plan, sendable = staged.plans.plan, staged.plans.sendable
    if runner.empty(the_plan) and sendable is None:  # --goldens-only, or no case to run
        return RunResult(None)
    if sendable is not None and (request.trials or 1) > 1:
        say(f"gitevals: --trials {request.trials} is for cases and tasks: each golden is "
            "sent once, as its baseline was measured (docs/goldens.md)")
    if not the_plan.cases and not the_plan.tasks and sendable is None:
        # An empty artifact would become the commit's newest run (and replace its note),
        # hiding the last real run from `show` and `diff`: write nothing.
        return RunResult(None, refused=staged.refused, blocked=True, draft=staged.draft)
    prov = runner.Provenance(request.rev, tree.commit, tree.tree_sha, staged.dirty,
                             staged.digest)
    if request.check:
        preflight_judge(tree, the_plan, sendable)
    rounds = _rounds(repo, request, the_plan)
    cluster = early if early is not None else _cluster(the_plan, request)
    with _signals_held() as hold:  # from the trials on, until the run is kept
        try:  # joined before anything starts
            # --goldens-only is recorded where the tree has cases (in a tree of goldens
            # alone, this is its complete run, as a plain run is)
            goldens_only = request.goldens_only and _has_cases(tree, the_plan.settings)
            options = RunOptions(staged.names, jobs, request.check, target_env, public,
                                 rounds, staged.bwrap, cluster, request.graders_on_workers,
                                 sendable, request.cost_limit, goldens_only, staged.draft,
                                 registry)
            artifact = _execute(tree, the_plan, prov, options, progress, hold)
        finally:
            if cluster is not None:
                cluster.close()
        blocked = bool(the_plan.blocked) or (staged.plans.suite is not None
                                             and sendable is None)
        return _keep_run(repo, artifact, request.note, staged, blocked, say)


@contextmanager
def _signals_held() -> Iterator[Callable[[], list[int]]]:
    """SIGINT and SIGTERM as they were (^C stops the start: nothing to keep yet) until
    the yielded ``hold`` is called as the trials start. From then, once the trials' own
    handlers (``_signals_stop``) are gone, a signal is held while the finished run is
    built and kept, and raised as ``KeyboardInterrupt`` (exit 130) when the block ends:
    a run paid for is not lost to a second ^C or a CI job's SIGTERM after its trials."""
    import signal

    held: list[int] = []
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def hold() -> list[int]:  # the signals held so far, as they come
        for s in old:
            signal.signal(s, lambda signum, frame: held.append(signum))
        return held

    try:
        yield hold
    finally:
        for s, handler in old.items():
            if handler is not None:  # (None: set outside Python, then left as it is)
                signal.signal(s, handler)
    if held:
        raise KeyboardInterrupt


def _preboot(tree: RevisionTree, registry: ProcessRegistry,
             target_env: Mapping[str, str]) -> None:
    """A python target's warm worker starts now, while the plan is read and the commit
    materialized (#27: the start); the preflight then only tells it what to import. The
    settings read here are read again by the plan (a few hundred microseconds)."""
    from gitevals.errors import GitevalsError
    from gitevals.run.targets import resolve_interpreter
    from gitevals.settings import load_settings

    try:
        target = load_settings(tree)[0].target
    except GitevalsError:  # the plan reads them again, and says what is wrong, in turn
        return
    if target is None or target.command or not target.python:
        return
    interpreter = resolve_interpreter(target.interpreter, str(tree.repo.work_root))
    # the environment the run's Execution gives its targets (``runner.Execution``)
    registry.preboot(interpreter, {**os.environ, **target_env} if target_env else None)


def _stage(repo: Repo, tree: RevisionTree, request: RunRequest, say: Say) -> _Staged:
    """Plan the run and check it may run here; say what lint found and what will not run."""
    from gitevals.errors import UsageError
    from gitevals.model import case_name

    # `gitevals run evals/cases/tone.yaml` (shell completion) means the case `tone`
    names = tuple(case_name(c) if c.endswith((".yaml", ".yml")) else c for c in request.cases)
    planned, draft = _with_draft(tree, request, names)
    names = names if draft is None else (draft.name,)
    plans = _plans(planned, request, names, say)
    the_plan = plans.plan
    if the_plan.settings.target is None:
        table = ("[target] in gitevals.toml" if the_plan.settings.source == "gitevals.toml"
                 else "[tool.gitevals.target] in pyproject.toml")
        raise UsageError(f"no target configured in {tree.label}: set {table}: "
                         "command = [...], python = \"module:function\", or an endpoint "
                         "(openai, http: docs/integrations.md)")
    dirty, digest = _refuse_dirty(repo, the_plan.settings.results, request.allow_dirty, draft)
    _say_findings(the_plan, draft, request.draft, say)
    refused = _refused(the_plan)
    for line in task_notes(the_plan):
        say(line)
    bwrap = find_sandbox(the_plan, not request.sandbox)
    for line in plans.suite_notes:  # the goldens do not lint: not sent
        say(line)
    return _Staged(plans, draft, dirty, digest, refused, bwrap, names)


def _with_draft(tree: RevisionTree, request: RunRequest, names: tuple[str, ...]
                ) -> tuple[Tree, DraftFile | None]:
    """The tree to plan from: ``tree``, or ``tree`` with the draft case laid over it."""
    if request.draft is None:
        return tree, None
    from gitevals.errors import UsageError
    from gitevals.run.draft import DraftTree, read_draft
    from gitevals.settings import load_settings

    if names:
        raise UsageError("--draft runs the draft alone: name no CASE with it")
    draft = read_draft(request.draft, load_settings(tree)[0].root)
    return DraftTree(tree, draft), draft


def _plans(tree: Tree, request: RunRequest, names: tuple[str, ...], say: Say) -> RunPlans:
    """The run's plans (``run_plans``), its notes about them said."""
    from gitevals.errors import UsageError

    if request.task_controls and not request.sandbox:
        raise UsageError("--task-controls runs a task's solution and verifier in the "
                         "sandbox: drop --no-sandbox")
    plans = run_plans(tree, RunSelection(
        names, request.trials, request.goldens_only, request.goldens, request.buckets,
        request.draft is not None, request.task_controls))
    for line in plans.notes:
        say(line)
    return plans


def _refuse_dirty(repo: Repo, results: str, allow: bool,
                  draft: DraftFile | None = None) -> tuple[bool, str | None]:
    """Whether tracked files have uncommitted changes (a UsageError unless ``allow``),
    and then the digest of the diff the artifact records."""
    from gitevals.errors import UsageError

    dirty = repo.dirty_paths(ignore_prefix=results)
    if draft is not None:  # a draft may be the edited copy of a tracked case
        mine = os.path.relpath(os.path.abspath(draft.given), repo.work_root)
        dirty = [p for p in dirty if p != mine]
    if not dirty:
        return False, None
    if not allow:
        raise UsageError(f"uncommitted changes to {', '.join(dirty)}: commit them, or pass "
                         "--allow-dirty to run the commit anyway (recorded as dirty)")
    return True, repo.diff_digest()


def _say_findings(the_plan: Plan, draft: DraftFile | None, given: str | None,
                  say: Say) -> None:
    """Every finding of the plan (a draft's under the draft's own path), then one line
    per case or task that does not lint and will not run."""
    for f in the_plan.findings:
        if not _calibration_warning(f.code):  # the run states calibration itself
            say(str(draft.rename(f) if draft else f))
    tasks_dir = f"{the_plan.settings.root}/tasks/{{}}/"
    for name in the_plan.blocked:
        is_task = any(f.path.startswith(tasks_dir.format(name)) for f in the_plan.findings)
        what = (f"draft {given}" if draft else f"task {name!r}" if is_task
                else f"case {name!r}")
        say(f"gitevals: {what} does not lint and was not run")


def _calibration_warning(code: str) -> bool:
    """GE510-GE519: an advisory judge grader; the run's report says so in its own words."""
    return code.startswith("GE51") and len(code) == 5


def _refused(the_plan: Plan) -> tuple[Refused, ...]:
    """The cases lint kept from running, each with its error findings: reporters show
    them as failures (a JUnit consumer must not see a blocked case as absent)."""
    if not the_plan.blocked:
        return ()  # (a --format json run never loads the reporters)
    from gitevals.model import case_name
    from gitevals.report.runs import Refused

    cases_dir = f"{the_plan.settings.root}/cases/"
    tasks_dir = f"{the_plan.settings.root}/tasks/"

    def owner(path: str) -> str | None:  # the case or task a finding belongs to
        if path.startswith(cases_dir):
            return case_name(path)
        return path[len(tasks_dir):].split("/")[0] if path.startswith(tasks_dir) else None

    return tuple(Refused(name, tuple(str(f) for f in the_plan.findings
                                     if f.severity == "error" and owner(f.path) == name))
                 for name in the_plan.blocked)


def _rounds(repo: Repo, request: RunRequest, the_plan: Plan) -> Rounds | None:
    """``against``: the sequential design (``sequential_design``), or None."""
    from gitevals.errors import UsageError

    if request.against is None:
        if request.max_trials or request.looks:
            raise UsageError("--max-trials and --looks shape a sequential run: give "
                             "--against REV with them")
        return None
    if request.draft is not None:
        raise UsageError("--draft and --against do not go together: a draft has no base")
    return sequential_design(repo, the_plan, AgainstOptions(
        request.against, request.max_trials, request.looks, request.drop, request.alpha,
        request.control))


def _has_cases(tree: Tree, settings: Settings) -> bool:
    """Whether ``tree`` has a case file or a task directory (a run can leave them out)."""
    from gitevals.run.runner import case_paths
    from gitevals.tasks.load import task_dirs

    return bool(case_paths(tree, settings.root)) or bool(task_dirs(tree, settings.root))


def _cluster(the_plan: Plan, request: RunRequest) -> RayExecutor | None:
    """The Ray executor, connected, when the run asked for one (request over settings)."""
    from gitevals.errors import UsageError
    from gitevals.run.executors import choose

    choice = choose(the_plan.settings.raw, request.executor, request.ray_address)
    if choice.kind != "ray":
        if request.graders_on_workers:
            raise UsageError("--graders-on-workers needs --executor ray: drop it, or run on "
                             "a cluster")
        return None
    return _join(choice.address)


def _join(address: str | None) -> RayExecutor:
    from gitevals.run.ray_executor import RayExecutor

    cluster = RayExecutor(address)
    cluster.connect()
    return cluster


def _keep_run(repo: Repo, artifact: Run, note: bool, staged: _Staged, blocked: bool,
              say: Say) -> RunResult:
    """Keep the finished run: its file, and its note unless a draft (a draft is not the
    commit's: its run is never the commit's note)."""
    from gitevals.run import keep
    from gitevals.run.artifact import dumps

    text = keep.writable(dumps(artifact), artifact, say)
    path = keep.keep(repo.work_root, artifact, text, staged.draft is not None, say)
    noted = note and staged.draft is None and keep.attach(repo, artifact, say)
    return RunResult(artifact, path, text, noted, staged.refused, blocked, staged.draft)


# -- gate: a goldens run against the base model's baseline ---------------------------------


@dataclass(frozen=True)
class GateOptions:
    """``baseline`` names the base model (``<root>/baseline-<NAME>.json`` of the working
    tree); ``control`` and ``alpha`` adjust the counted slices (None: the working tree's
    ``[tool.gitevals.statistics]``)."""

    baseline: str
    control: str | None = None
    alpha: float | None = None

    def __post_init__(self) -> None:
        bounds.check_alpha("GateOptions.alpha", self.alpha)


def goldens_run(what: str, repo: Repo | None = None) -> Run:
    """The run artifact file ``what``, or the goldens run of revision ``what`` (its note's
    run that counts, else the working tree's results directory); either way checked against
    the commit it names (``goldens.verify.pinned``). ``repo``: the current directory's."""
    from gitevals.errors import UsageError
    from gitevals.files import is_path
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import WorkingTree
    from gitevals.goldens.verify import goldens_run_of_commit, pinned
    from gitevals.run.artifact import load
    from gitevals.settings import load_settings

    if is_path(what):
        run = load(what)
        pinned(repo or require_repo(), run, what)
        return run
    repo = repo or require_repo()
    commit = repo.resolve(what)
    results = load_settings(WorkingTree(repo.work_root))[0].results
    found = goldens_run_of_commit(repo, results, commit)
    if found is None:
        raise UsageError(f"no goldens run of {what} ({commit[:12]}) in {results}/ or its "
                         f"git note: make one with `gitevals run --goldens-only --rev {commit}`")
    return found


def gate(what: str, options: GateOptions, repo: Repo | None = None) -> GateResult:
    """Gate the goldens run ``what`` (a file, or a revision's run) against the baseline
    ``options.baseline``, per bucket and drift slice. ``Refused`` (a ``GitevalsError``)
    when there is no baseline, it is not what its run measured, the run is not its
    commit's, they were measured with other goldens or graders, or the run's commit does
    not lint; else the result (``.passed``; ``report.gate`` renders it)."""
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import WorkingTree
    from gitevals.goldens.gate import baseline_path
    from gitevals.goldens.gate import gate as compare
    from gitevals.goldens.verify import read_baseline, verified_baseline
    from gitevals.settings import load_settings
    from gitevals.stats.multiplicity import CONTROLS

    if options.control is not None and options.control not in CONTROLS:
        from gitevals.errors import UsageError

        raise UsageError(f"control {options.control!r} is not one of {', '.join(CONTROLS)}")
    artifact = goldens_run(what, repo)
    repo = repo or require_repo()
    rel = baseline_path(artifact["root"], options.baseline)
    path = repo.work_root / rel
    data = path.read_bytes() if path.is_file() else None
    settings = load_settings(WorkingTree(repo.work_root))[0]
    baseline = verified_baseline(repo, read_baseline(data, rel), rel, notes_only=False,
                                 results=settings.results)
    result = compare(baseline, artifact, rel,  # another measuring stick is said first
                     settings.control if options.control is None else options.control,
                     settings.alpha if options.alpha is None else options.alpha)
    check_lints(repo, artifact["commit"])
    return result


def check_lints(repo: Repo, commit: str) -> None:
    """Refuse (``Refused``) a run of a commit whose eval tree does not lint (duplicate
    golden ids, a drift budget that is not a number...): its numbers measure nothing the
    gate trusts."""
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Refused

    result = lint(RevisionTree(repo, commit))
    errors = [f for f in result.findings if f.severity == "error"]
    if errors:
        f = errors[0]
        raise Refused(f"commit {commit[:12]} does not lint ({len(errors)} error"
                      f"{'s' * (len(errors) != 1)}; the first: {f.path}:{f.line}:{f.col}: "
                      f"{f.code} {f.message}): fix it; a run of it is not gated")


def gate_findings(commit: str, model: str, repo: Repo | None = None) -> list[Finding]:
    """GE639 when the run pinned to ``commit`` does not pass the gate against the
    baseline ``model`` of that commit (``publish-check --require-gate``). Everything is
    read from git objects: the published tree, the baseline in it, and the runs in git
    notes (never the working tree's results/, which anyone with the checkout can write)."""
    from gitevals.errors import GitevalsError
    from gitevals.findings import Finding
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Refused, baseline_path
    from gitevals.goldens.gate import gate as compare
    from gitevals.goldens.verify import goldens_run_of_commit, read_baseline, verified_baseline
    from gitevals.report.gate import headline
    from gitevals.settings import load_settings

    repo = repo or require_repo()
    tree = RevisionTree(repo, commit)
    settings = load_settings(tree)[0]
    rel = baseline_path(settings.root, model)
    try:
        baseline = verified_baseline(repo, read_baseline(tree.read(rel), rel), rel,
                                     notes_only=True)
        found = goldens_run_of_commit(repo, settings.results, commit, notes_only=True)
        if found is None:
            raise Refused(f"no goldens run pinned to {commit[:12]} in its git note to gate: "
                          f"`gitevals run --goldens-only --rev {commit}` (or `gitevals notes "
                          "pull`)")
        result = compare(baseline, found, rel, settings.control, settings.alpha)
    except GitevalsError as exc:
        return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {exc}")]
    if result.passed:
        return []
    return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {headline(result)}; see "
                                        f"`gitevals gate {commit[:12]} --baseline {model}`")]


# -- history and report: the runs along git --------------------------------------------------

@dataclass(frozen=True)
class HistoryOptions:
    """``limit`` commits with runs at most, the newest (``gitevals log`` shows 20);
    ``control`` and ``alpha`` decide each move as ``diff`` does (None: the working
    tree's ``[tool.gitevals.statistics]``); ``keep_tip`` keeps the tip's run whole (its
    transcripts), for a report."""

    limit: int
    control: str | None = None
    alpha: float | None = None
    keep_tip: bool = False

    def __post_init__(self) -> None:
        bounds.check_whole("HistoryOptions.limit", self.limit, 1, bounds.MAX_ROWS,
                           optional=False)
        bounds.check_alpha("HistoryOptions.alpha", self.alpha)


def history(repo: Repo, spec: str, options: HistoryOptions) -> Gathered:
    """The eval history ``spec`` names (``REV``: its first parents; ``A..B``: from A to B,
    both included): the run of each commit that has one (the results directory of the
    working tree, else its git note, as ``show`` and ``diff`` read them), each move
    decided as ``diff`` decides it. ``UsageError`` for a range that is not one line."""
    control, alpha = statistics(repo, options.control, options.alpha)
    return _gather(repo, eval_results(repo), spec, options.limit, options.keep_tip, control,
                   alpha)


@dataclass(frozen=True)
class Gathered:
    """The history from ``start`` (None: as far as ``limit`` reaches) to ``tip``, and the
    run of ``tip`` when it has one and ``keep_tip`` asked for it."""

    history: History
    tip: str
    start: str | None
    tip_run: Run | None


def split_range(spec: str) -> tuple[str | None, str]:
    """``A..B`` -> (A, B); ``REV`` -> (None, REV). A side left empty is ``HEAD``."""
    from gitevals.errors import UsageError

    if "..." in spec:
        raise UsageError(f"{spec}: a symmetric range (A...B) has no one line of history; "
                         "give A..B, A an ancestor of B along first parents")
    if ".." not in spec:
        return None, spec
    a, _, b = spec.partition("..")
    return a or "HEAD", b or "HEAD"


def _with_runs(repo: Repo, results: str, tip: str, start: str | None,
               limit: int) -> list[tuple[str, str]]:
    """``(sha, subject)`` of the newest ``limit`` commits with a run from ``tip`` back
    along first parents to ``start`` (included), oldest first."""
    from gitevals.errors import UsageError
    from gitevals.run.store import results_dir

    try:
        names = [p.name for p in results_dir(repo.work_root, results).glob("*-*-*.json")]
    except OSError:
        names = []
    local = {n.split("-")[1] for n in names if n.count("-") >= 2}
    noted = repo.noted_commits()
    found, reached = [], start is None
    for sha, subject in repo.first_parents(tip):
        if sha[:12] in local or sha in noted:
            found.append((sha, subject))
        if sha == start:
            reached = True
            break
        if len(found) >= limit:
            reached = True
            break
    if not reached:
        raise UsageError(f"{start[:12] if start else ''} is not on the first-parent history "
                         f"of {tip[:12]}: give A..B with A an ancestor of B "
                         "(`git log --first-parent --oneline B` lists them)")
    return found[::-1]


def _gather(repo: Repo, results: str, spec: str, limit: int, keep_tip: bool = False,
            control: str = "fdr", alpha: float = 0.05) -> Gathered:
    """Read the runs along the history ``spec`` names (``REV`` or ``A..B``), from the
    notes and the working tree's ``results`` (``Settings.results``); each move is decided
    as ``diff`` decides it, under ``control`` at ``alpha``."""
    from gitevals.diff.verdicts import Tally, clusters, tallies
    from gitevals.errors import ArtifactError
    from gitevals.report.history import Commit, build
    from gitevals.run.store import run_of_commit

    a, b = split_range(spec)
    tip = repo.resolve(b)
    start = repo.resolve(a) if a is not None else None
    tags = repo.tags_by_commit()
    points: list[tuple[Commit, dict[tuple[str, str], Tally] | None]] = []
    tip_run = None
    declared: dict[str, str] = {}
    for sha, subject in _with_runs(repo, results, tip, start, limit):
        try:
            # counts only: a summary's trials stay packed (but the tip's a report shows)
            found = run_of_commit(repo, repo.work_root, results, sha,
                                  trials=keep_tip and sha == tip)
        except ArtifactError as exc:
            points.append((Commit(sha, subject, tuple(tags.get(sha, ())), None, str(exc)),
                           None))
            continue
        if found is None:
            continue  # a results file of another commit sharing the short SHA
        points.append((Commit(sha, subject, tuple(tags.get(sha, ())), found.run["run_id"]),
                       tallies(found.run)))
        declared.update(clusters(found.run))  # the later run's word wins, as in diff
        if keep_tip and sha == tip:
            tip_run = found.run
    return Gathered(build(points, alpha=alpha, control=control, clusters=declared), tip, start,
                    tip_run)


def statistics(repo: Repo, control: str | None, alpha: float | None) -> tuple[str, float]:
    """``control`` and ``alpha`` when given, else the working tree's
    ``[tool.gitevals.statistics]``."""
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings, _ = load_settings(WorkingTree(repo.work_root))
    return (settings.control if control is None else control,
            settings.alpha if alpha is None else alpha)


def eval_results(repo: Repo) -> str:
    """Where the working tree's settings keep runs (``Settings.results``), as ``show``."""
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings, _ = load_settings(WorkingTree(repo.work_root))
    return settings.results


@dataclass(frozen=True)
class ReportOptions:
    """``limit`` commits with runs in the history; ``static`` the most trials whose
    transcripts the page writes as HTML that reads without JavaScript."""

    limit: int
    static: int

    def __post_init__(self) -> None:
        bounds.check_whole("ReportOptions.limit", self.limit, 1, bounds.MAX_ROWS,
                           optional=False)
        bounds.check_whole("ReportOptions.static", self.static, 0, bounds.MAX_ROWS,
                           optional=False)


@dataclass(frozen=True)
class ReportResult:
    """What ``gitevals report`` renders (``report.html.render``), and the warnings about
    what the page could not show."""

    report: Report
    warnings: tuple[str, ...] = ()


def report(repo: Repo, what: str, options: ReportOptions) -> ReportResult:
    """The report of ``what`` (``REV``: its run and the history before it, diffed with
    the previous commit that has a run; ``A..B``: that history and the diff A B, exactly
    as ``gitevals diff`` compares). ``UsageError`` when the tip has no run."""
    from gitevals import __version__
    from gitevals.errors import UsageError
    from gitevals.report.html import Report

    got = history(repo, what, HistoryOptions(options.limit, keep_tip=True))
    if got.tip_run is None:
        _, b = split_range(what)
        raise UsageError(f"no run of {b} ({got.tip[:12]}) in {eval_results(repo)}/ or its git "
                         f"note: make one with `gitevals run --rev {got.tip}`")
    found, note = _report_diff(repo, got)
    tip, warnings = _transcripts(repo, got.tip_run)
    return ReportResult(Report(tip, got.history, what, found, note, __version__,
                               options.static), warnings)


def _transcripts(repo: Repo, run: Run) -> tuple[Run, tuple[str, ...]]:
    """The tip's run whole, for its transcripts: a summary's full artifact is fetched
    when not here; when it cannot be had the page shows the summary, and says why."""
    from gitevals.errors import ArtifactError
    from gitevals.run.runstore import full_run
    from gitevals.run.summary import is_summary

    if not is_summary(run):
        return run, ()
    try:
        return full_run(repo, run, f"the full artifact of run {run['run_id']}"), ()
    except ArtifactError as exc:
        return run, (f"{exc}; the page shows verdicts without transcripts",)


def _report_diff(repo: Repo, got: Gathered) -> tuple[Diff | None, str]:
    """The diff A B for ``A..B``; for one revision, the previous commit with a run
    against it; none when the history holds one commit only."""
    from gitevals.diff.stats import DEFAULT_ALPHA
    from gitevals.errors import ArtifactError

    commits = got.history.commits
    earlier = [c.sha for c in commits[:-1] if c.run_id is not None]
    if got.start is not None:
        a = got.start
    elif earlier:
        a = earlier[-1]
    else:
        return None, ("No earlier commit along this history has a readable run: there is "
                      "nothing to compare with yet.")
    labels = {c.sha: c.tags[0] for c in commits if c.tags}
    try:
        return diff(repo, labels.get(a, a), labels.get(got.tip, got.tip),
                    DiffOptions(alpha=DEFAULT_ALPHA)), ""
    except ArtifactError as exc:  # the history already says which run; the page still helps
        return None, f"No diff: {exc}"


# -- experiment: the same cases against several harness lanes -------------------------------

#: Where experiments keep their samples and reports, under ``<results>/``.
EXPERIMENTS_DIR = "experiments"


@dataclass(frozen=True)
class ExperimentOptions:
    """``lanes`` (``NAME=REV[,env:K=V...]``, at least two), the ``cases`` (``()``: all),
    ``public`` (the env names whose values are recorded in clear; None: none), ``repeat``
    (each scenario's trials, N times per lane), ``jobs`` (None: 16), ``max_samples``
    (the bound on conversations; None: 1,000), ``test``, ``control`` and ``alpha`` of the
    pairwise comparisons (None: the working tree's settings), ``check`` the preflight."""

    lanes: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    public: tuple[str, ...] | None = None
    repeat: int = 1
    jobs: int | None = None
    max_samples: int | None = None
    test: str = field(default_factory=_default_test)
    control: str | None = None
    alpha: float | None = None
    check: bool = True

    def __post_init__(self) -> None:
        bounds.check_whole("ExperimentOptions.repeat", self.repeat, 1, bounds.MAX_REPEAT,
                           optional=False)
        bounds.check_whole("ExperimentOptions.jobs", self.jobs, 1, bounds.MAX_JOBS)
        bounds.check_whole("ExperimentOptions.max_samples", self.max_samples, 1,
                           bounds.MOST_SAMPLES)
        bounds.check_alpha("ExperimentOptions.alpha", self.alpha)


@dataclass(frozen=True)
class ExperimentResult:
    """The experiment's report (``experiment.results.build``; ``report.experiment``
    renders it) and where it was kept; both None when a lane's case did not lint and
    nothing ran."""

    report: ExperimentDoc | None
    path: Path | None

    @property
    def interrupted(self) -> bool:
        return self.report is not None and any(d["interrupted"] for d in self.report["lanes"])


def _lanes(repo: Repo, specs: list[str]) -> list[Lane]:
    from gitevals.experiment.lanes import parse_lane, resolve
    from gitevals.git.trees import RevisionTree

    def to_commit(rev: str) -> tuple[str, str]:
        tree = RevisionTree(repo, rev)
        assert tree.commit is not None and tree.tree_sha is not None
        return tree.commit, tree.tree_sha

    return resolve([parse_lane(s) for s in specs], to_commit)


def _lane_plan(tree: RevisionTree, lane: Lane, names: list[str]) -> Plan:
    from gitevals.errors import UsageError

    try:
        the_plan = plan(tree, names)
    except UsageError as exc:
        raise UsageError(f"lane {lane.name}: {exc}") from exc
    if the_plan.settings.target is None:
        raise UsageError(f"lane {lane.name}: no target configured in {tree.label}: set "
                         "[tool.gitevals.target] (or [target] in gitevals.toml)")
    return the_plan


def _snapshot(tree: RevisionTree, the_plan: Plan) -> Snapshot:
    from gitevals import __version__
    from gitevals.experiment.controls import Snapshot, timing, without_target

    root = the_plan.settings.root
    results = f"{the_plan.settings.results}/"  # runs (git-ignored, unless committed) pin nothing
    files = {p: s for p, s in tree.blob_shas(f"{root}/").items() if not p.startswith(results)}
    # A helper a grader imports from outside the eval root (the repository's top) is a
    # control too: an edit there changes every verdict (graderimports.py).
    from gitevals.graderimports import closure

    graders = [p for p in files if p.startswith(f"{root}/graders/") and p.endswith(".py")]
    files.update(closure(tree, graders, root))
    settings = without_target(the_plan.settings.as_dict())
    from gitevals.run.tasks import DEFAULT_AGENT_TIMEOUT, SCENARIO

    times = timing({f"{c.name}/{s.id}": (s.trials, float(s.timeout))
                    for c in the_plan.cases for s in c.scenarios}
                   | {f"{t.name}/{SCENARIO}": (the_plan.task_trials(),
                                               float(t.agent_timeout_sec or DEFAULT_AGENT_TIMEOUT))
                      for t in the_plan.tasks})
    return Snapshot(root, files, settings, times, __version__)


def _refuse_blocked(lanes: list[Lane], plans: list[Plan], say: Say) -> bool:
    """Say the lint findings of cases a lane cannot run; True when there were any."""
    blocked = False
    for lane, the_plan in zip(lanes, plans, strict=True):
        for f in the_plan.findings:
            say(str(f))
        for name in the_plan.blocked:
            blocked = True
            say(f"gitevals: lane {lane.name}: case {name!r} does not lint")
    return blocked


def _controls_before(lanes: list[Lane], snaps: list[Snapshot], say: Say) -> None:
    from gitevals.errors import UsageError
    from gitevals.experiment.controls import before
    from gitevals.text import visible

    diffs = before(lanes, snaps)
    if diffs:
        for line in diffs:
            say(f"gitevals: {visible(line)}")
        raise UsageError(f"{len(diffs)} difference{'s' * (len(diffs) != 1)} between the lanes "
                         "besides the harness: nothing was run; only harness files and the "
                         "target env may differ (commit the eval tree to every lane's revision)")


def experiment(repo: Repo, options: ExperimentOptions, progress: ProgressFactory = silent,
               say: Say = _quiet) -> ExperimentResult:
    """Run the same cases against every lane of ``options`` (``NAME=REV[,env:K=V...]``),
    each ``repeat`` times, after checking that nothing but the harness and the target
    env differs between the lanes (``UsageError`` naming each difference otherwise);
    keep each lane's artifact and the report under ``<results>/experiments/``.
    ``say`` gets the lines ``gitevals experiment`` prints on stderr (lint findings, which
    lane runs, a fallback directory). A case that does not lint in some lane runs
    nothing: the result has no report."""
    import time

    from gitevals.experiment.controls import pins_of
    from gitevals.experiment.lanes import MAX_SAMPLES, check_matrix, repeated
    from gitevals.git.trees import RevisionTree
    from gitevals.model import case_name
    from gitevals.run.targetenv import public_names

    names = [case_name(c) if c.endswith((".yaml", ".yml")) else c for c in options.cases]
    lanes = _lanes(repo, list(options.lanes))
    public = public_names(None if options.public is None else list(options.public),
                          {k for lane in lanes for k in lane.env})
    trees = [RevisionTree(repo, lane.commit) for lane in lanes]
    plans = [_lane_plan(t, lane, names) for t, lane in zip(trees, lanes, strict=True)]
    if _refuse_blocked(lanes, plans, say):
        return ExperimentResult(None, None)
    snaps = [_snapshot(t, p) for t, p in zip(trees, plans, strict=True)]
    _controls_before(lanes, snaps, say)
    total = check_matrix(plans[0], len(lanes), options.repeat,
                         options.max_samples or MAX_SAMPLES)
    if options.check:
        preflight_judge(trees[0], plans[0])
    root, kept = plans[0].settings.root, plans[0].settings.results
    exp_id = _new_id()
    started = time.time()
    results: list[LaneResult] = []
    stopped = False
    # A signal between lanes (a lane kept, the next starting) or as the report is written
    # is held: the lanes still to run are not run, and the report is kept (as `run`).
    with _signals_held() as hold:
        held = hold()
        for lane, tree, the_plan, snap in zip(lanes, trees, plans, snaps, strict=True):
            pins = pins_of(lane, the_plan.files, snap, options.repeat, public)
            if stopped or held:  # listed, never left out: the report says which did not run
                results.append(_not_run(repo.work_root, kept, exp_id, lane, pins))
                continue
            result = _run_lane(repo, kept, exp_id, lane, tree,
                               repeated(the_plan, options.repeat), pins, names, options,
                               public, progress, say)
            results.append(result)
            stopped = result.run is not None and result.run["interrupted"]
        meta = _meta(exp_id, root, plans[0], options, total, snaps[0], started, time.time())
        finished = _finish(repo, kept, meta, results, options, say)
        if finished.interrupted:  # said as an interrupted experiment, with its report
            held.clear()
        return finished


def _new_id() -> str:
    import secrets
    import time

    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"


def _run_lane(repo: Repo, kept: str, exp_id: str, lane: Lane, tree: RevisionTree,
              the_plan: Plan, pins: Pins, names: list[str], options: ExperimentOptions,
              public: frozenset[str], progress: ProgressFactory, say: Say) -> LaneResult:
    """Run one lane's share with the ordinary runner, score it by its judge graders'
    calibration as ``run`` does (an advisory grader's failures are not counted in the
    lane's rates), keep its artifact, and read it back from disk: the after-check reads
    the sample as kept, not the value in memory."""
    from gitevals.run import runner
    from gitevals.run.artifact import dumps

    say(f"gitevals: lane {lane.name} ({lane.commit[:12]})")
    prov = runner.Provenance(lane.rev, lane.commit, lane.tree)
    jobs = options.jobs or runner.DEFAULT_JOBS
    # task verifiers run in bubblewrap as in `gitevals run` (refused without it)
    for line in task_notes(the_plan):
        say(line)
    bwrap = find_sandbox(the_plan, no_sandbox=False)
    run_options = RunOptions(tuple(names), jobs, options.check, lane.env, public_env=public,
                             bwrap=bwrap)
    artifact = run_commit(tree, the_plan, prov, run_options, progress)
    path = _keep(repo.work_root, kept, exp_id, f"{exp_id}/{lane.name}.json", dumps(artifact),
                 say)
    return _read_lane(repo.work_root, lane.name, lane.rev, pins, path)


def _not_run(work_root: Path, kept: str, exp_id: str, lane: Lane, pins: Pins) -> LaneResult:
    from gitevals.experiment.results import LaneResult

    path = os.path.relpath(_lane_path(work_root, kept, exp_id, lane.name), work_root)
    return LaneResult(lane.name, lane.rev, pins, path, None,
                      "not run: the experiment was interrupted before this lane", ran=False)


def _read_lane(work_root: Path, name: str, rev: str, pins: Pins, path: Path) -> LaneResult:
    from gitevals.errors import ArtifactError
    from gitevals.experiment.results import LaneResult
    from gitevals.run.artifact import load

    inside = work_root.resolve() in path.resolve().parents
    shown = os.path.relpath(path, work_root) if inside else str(path)
    try:
        return LaneResult(name, rev, pins, shown, load(path, shown))
    except ArtifactError as exc:
        return LaneResult(name, rev, pins, shown, None, str(exc))


def _meta(exp_id: str, root: str, the_plan: Plan, options: ExperimentOptions, total: int,
          snap: Snapshot, started: float, finished: float) -> Meta:
    from gitevals.run.artifact import utc_stamp
    from gitevals.run.runner import DEFAULT_JOBS

    return {"id": exp_id, "tool_version": snap.tool_version, "root": root,
            "cases": [c.name for c in the_plan.cases], "repeat": options.repeat,
            "jobs": options.jobs or DEFAULT_JOBS, "conversations": total,
            "max_samples": options.max_samples, "settings": snap.settings,
            "started_at": utc_stamp(started), "finished_at": utc_stamp(finished)}


def experiments_dir(work_root: Path, kept: str) -> Path:
    """``<results>/experiments`` of the working tree (``kept``: ``Settings.results``;
    refused when a committed symlink would send it outside the repository)."""
    import errno

    from gitevals.run.store import results_dir

    directory = results_dir(work_root, kept) / EXPERIMENTS_DIR
    real, top = directory.resolve(), work_root.resolve()
    if top not in real.parents:
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    return directory


def _lane_path(work_root: Path, kept: str, exp_id: str, lane: str) -> Path:
    return experiments_dir(work_root, kept) / exp_id / f"{lane}.json"


def _keep(work_root: Path, kept: str, exp_id: str, name: str, text: str, say: Say) -> Path:
    """Write ``name`` under ``<results>/experiments/``, atomically; when that cannot be
    written (read-only, full, a symlink out of the repository), to a temp directory
    instead, and say so: finished samples are never thrown away."""
    import tempfile

    from gitevals.files import write_atomic

    try:
        path = experiments_dir(work_root, kept) / name
        write_atomic(path, text)
        return path
    except OSError as exc:
        fallback = Path(tempfile.gettempdir(), f"gitevals-experiment-{exp_id}", name)
        write_atomic(fallback, text)
        say(f"gitevals: warning: cannot write {kept}/{EXPERIMENTS_DIR}/ "
            f"({exc.strerror or exc}); {name} is in {fallback} instead")
        return fallback


def _finish(repo: Repo, kept: str, meta: Meta, results: list[LaneResult],
            options: ExperimentOptions, say: Say) -> ExperimentResult:
    from gitevals.experiment.results import build, dumps
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings = load_settings(WorkingTree(repo.work_root))[0]
    doc = build(meta, results, options.test,
                settings.alpha if options.alpha is None else options.alpha,
                settings.control if options.control is None else options.control)
    path = _keep(repo.work_root, kept, meta["id"], f"{meta['id']}.json", dumps(doc), say)
    return ExperimentResult(doc, path)


#: An experiment's id: when it started, and six hex digits (``_new_id``).
_EXPERIMENT_ID = r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$"


def recheck_experiment(repo: Repo, exp_id: str, options: ExperimentOptions | None = None,
                       say: Say = _quiet) -> ExperimentResult:
    """Run nothing: re-read experiment ``exp_id``'s kept samples, re-check each against
    the pins its lanes recorded before they ran, and report (and keep) the result again
    (``options``: only ``test``, ``control`` and ``alpha`` are read)."""
    import re

    from gitevals.errors import UsageError
    from gitevals.experiment.results import kept_meta
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    options = options or ExperimentOptions()
    if not re.match(_EXPERIMENT_ID, exp_id):
        raise UsageError(f"--recheck {exp_id!r}: an experiment id looks like "
                         "20261130T211500Z-1a2b3c (the name of its report, without .json)")
    kept = load_settings(WorkingTree(repo.work_root))[0].results
    path = experiments_dir(repo.work_root, kept) / f"{exp_id}.json"
    doc = _read_report(path)
    lanes, kept_id = doc.get("lanes"), doc.get("id")
    if not isinstance(lanes, list) or not isinstance(kept_id, str) or not re.match(
            _EXPERIMENT_ID, kept_id):
        raise UsageError("the experiment report is damaged (no 'lanes' list, or no 'id' "
                         "of an experiment): it cannot be re-checked; run the experiment "
                         "again")
    results = [_recheck_lane(repo.work_root, kept, kept_id, doc, lane) for lane in lanes]
    try:
        meta = kept_meta(doc)
    except (KeyError, TypeError) as exc:
        raise UsageError(f"the experiment report is damaged (no {exc}): it cannot be "
                         "re-checked; run the experiment again") from exc
    return _finish(repo, kept, meta, results, options, say)


def _read_report(path: Path) -> JSONObject:
    import json

    from gitevals.errors import UsageError
    from gitevals.experiment.results import FORMAT

    try:
        doc = json.loads(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}; name an experiment "
                         "kept in this repository's results/experiments/") from exc
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not an experiment report: not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{path}: not an experiment report: no \"format\": {FORMAT!r}")
    return doc


def _recheck_lane(work_root: Path, kept: str, exp_id: str, doc: JSONObject,
                  lane: JSON) -> LaneResult:
    from gitevals.errors import UsageError
    from gitevals.experiment.results import kept_lane

    try:
        name, rev, pins = kept_lane(doc, lane)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"the experiment report is damaged ({exc}): it cannot be "
                         "re-checked; run the experiment again") from exc
    path = _lane_path(work_root, kept, exp_id, name)
    return _read_lane(work_root, name, rev, pins, path)
