"""The Python API: what the commands call, and what a notebook or another tool uses.

Each function takes typed values and returns typed results; none prints, parses argv
or exits (the commands in ``gitevals/commands/`` do that). This module sits above the
features (lint, goldens, diff, ...) and the engine (``run/``), and is the one place
that puts them together: the engine never imports a feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitevals.findings import Finding, has_errors
from gitevals.model import Case, load_case
from gitevals.settings import Settings, load_settings

if TYPE_CHECKING:
    from types import FrameType

    from gitevals.diff import Diff
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree, Tree
    from gitevals.goldens.execute import SuiteExecution
    from gitevals.goldens.plan import SuitePlan
    from gitevals.lint import LintResult
    from gitevals.report.progress import Update
    from gitevals.run.artifact import Run
    from gitevals.run.ray_executor import RayExecutor
    from gitevals.run.runner import Plan, Provenance
    from gitevals.run.sequential import Rounds
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
    executor, ``suite`` the goldens to send, ``cost_limit`` in USD."""

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


#: Shows progress while a block runs (``report.progress.progress``, or ``silent``).
ProgressFactory = Callable[..., AbstractContextManager["Update"]]


@contextmanager
def silent(label: str, total: int, unit: str = "trials",
           groups: tuple[str, int] | None = None) -> Iterator[Update]:
    """No progress shown: what ``run_commit`` uses unless it is handed a display."""
    yield lambda done, failures, running=None, groups_done=None: None


def run_commit(tree: RevisionTree, the_plan: Plan, prov: Provenance,
               options: RunOptions | None = None,
               progress: ProgressFactory = silent) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the
    artifact. The caller keeps it (``run.store``), scores it by calibration
    (``calibrated``) and renders it; nothing is printed here but ``progress``."""
    options = options or RunOptions()
    return _execute(tree, the_plan, prov, list(options.names), options.jobs, options.check,
                    options.target_env, options.rounds, options.bwrap, options.cluster,
                    options.graders_on_workers, options.suite, options.public_env,
                    options.cost_limit, progress)


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


def _execute(tree: RevisionTree, the_plan: Plan, prov: Provenance, names: list[str],
             jobs: int, check: bool = True, target_env: Mapping[str, str] | None = None,
             rounds: Rounds | None = None, bwrap: str | None = None,
             cluster: RayExecutor | None = None, graders_on_workers: bool = False,
             suite: SuitePlan | None = None, public_env: frozenset[str] = frozenset(),
             cost_limit: float | None = None, progress: ProgressFactory = silent) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the artifact."""
    import signal
    import time

    from gitevals.run import runner
    from gitevals.run.reaper import subreaper
    from gitevals.run.workdir import workdir

    # gitevals adopts what escapes its targets and graders, and kills it all before the
    # materialized tree is removed (gitevals.run.reaper).
    target = the_plan.settings.target
    interpreter = _interpreter(tree, the_plan)
    with workdir("run") as tmp, subreaper():
        from gitevals.run import preflight
        from gitevals.run.targets import ProcessRegistry

        registry = ProcessRegistry()
        if cluster is None and target is not None:
            registry.prestart()  # while the commit is materialized
        tree.materialize(tmp)
        # A python target run here is imported once, by the worker its conversations fork
        # from (after the execution exists); anything else is checked now.
        warm = check and target is not None and preflight.warms(target, cluster is None)
        if check and target is not None and not warm:
            preflight.check_target(target, str(tmp), interpreter, target_env)
        if cluster is not None:
            from gitevals.run.executors import RunShared

            cluster.start(str(tmp), prov.tree,
                          RunShared(the_plan, jobs, grader_timeout(), graders_on_workers,
                                    dict(target_env or {}), sandboxed=bwrap is not None))
        execution = runner.Execution(the_plan, str(tmp), jobs, grader_timeout(), target_env,
                                     bwrap, executor=cluster, interpreter=interpreter,
                                     public_env=public_env, registry=registry)
        if warm and target is not None:
            try:
                preflight.check_warm(execution, target, str(tmp), interpreter)
            except BaseException:
                execution.registry.close()
                raise
        goldens = _suite_execution(suite, the_plan, str(tmp), jobs, target_env, interpreter)
        started = time.time()

        def halt() -> None:
            execution.interrupt()
            if goldens is not None:
                goldens.interrupt()

        def stop(signum: int, frame: FrameType | None) -> None:
            halt()
            if execution.looking:  # a look's computation checks no flag: end it here
                raise KeyboardInterrupt

        meter = None
        if cost_limit is not None:
            from gitevals.run.pricing import CostMeter

            meter = CostMeter(the_plan.settings.pricing, cost_limit, halt)
            execution.on_trial = meter.add

        old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        cases = len(the_plan.cases)
        label = f"{cases} case{'s' * (cases != 1)}" + (
            f", {len(the_plan.tasks)} task{'s' * (len(the_plan.tasks) != 1)}"
            if the_plan.tasks else "")
        try:
            # a sequential run (--against) may go to every scenario's last look
            total = the_plan.total() if rounds is None else (
                rounds.most() + len(the_plan.tasks) * the_plan.task_trials())
            with progress(label, total, groups=("cases", cases)) as update:
                def report(t: runner.Tally) -> None:
                    update(t.done, t.failures, t.running, t.cases_done)

                if rounds is None:
                    execution.run(report)
                else:
                    from gitevals.run.sequential import run_rounds

                    run_rounds(execution, rounds, report, _advisory(tree, the_plan, started))
            if goldens is not None and not execution.stop.is_set():
                with progress("goldens", len(goldens.plan.items), unit="items") as sent:
                    goldens.run(lambda done, bad: sent(done, bad))
        finally:
            execution.registry.close()
            if cluster is not None:
                cluster.close()
            if goldens is not None:
                goldens.registry.close()
            for s, handler in old.items():
                signal.signal(s, handler)
        finished = time.time()
    artifact = runner.build_artifact(prov, the_plan, execution, names, jobs, started, finished)
    if rounds is not None:
        from gitevals.run.sequential import annotate

        annotate(artifact, rounds)
    if goldens is not None:
        artifact["goldens"] = goldens.part()
        artifact["files"] = dict(sorted({**artifact["files"], **goldens.plan.files}.items()))
        artifact["interrupted"] = artifact["interrupted"] or goldens.stop.is_set()
    if meter is not None:
        artifact["options"]["cost_limit"] = meter.limit
        if meter.reached:
            artifact["interrupted_reason"] = meter.reason()
    return artifact


def _suite_execution(suite: SuitePlan | None, the_plan: Plan, tree_dir: str,
                     jobs: int, target_env: Mapping[str, str] | None = None,
                     interpreter: str | None = None) -> SuiteExecution | None:
    if suite is None:
        return None
    from gitevals.goldens.execute import SuiteExecution

    return SuiteExecution(suite, the_plan.settings, tree_dir, jobs, grader_timeout(),
                          target_env, interpreter)


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
