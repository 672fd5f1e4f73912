"""Runs pinned to commits: drive the conversations of a plan, build the artifact.

The plan (``Plan``) is read from the commit by ``gitevals.api.plan`` (settings, cases,
lint) without executing tree code. ``Execution`` runs the plan in a materialized copy of the
commit: one conversation per (case, trial) on a thread pool (the targets are
processes, so threads only wait), graders in warm worker processes, scoring by
``gitevals.run.scoring``. ``gitevals.run.build`` assembles the contract's JSON.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.findings import Finding
from gitevals.git.trees import Tree
from gitevals.jsontypes import JSONObject
from gitevals.model import Case, Scenario, case_name
from gitevals.run.artifact import (
    CaseRun,
    ErrorRecord,
    GraderAnswer,
    ScenarioRun,
    Transcript,
    Trial,
    grader_arguments,
    grader_calls,
    judge_calls,
    transcript,
    unkeepable,
)
from gitevals.run.grading import GRADER_TIMEOUT, GraderPool, GraderReply
from gitevals.run.judge import judge_config
from gitevals.run.targets import (
    Conversation,
    ProcessRegistry,
    SharedConversation,
    SharedTarget,
    TargetError,
    Turn,
    keeps_holders,
    target_argv,
    zygote_argv,
)
from gitevals.settings import Settings

if TYPE_CHECKING:
    from gitevals.run.executors import Executor
    from gitevals.run.tasks import TaskTrials
    from gitevals.tasks.controls import Controls
    from gitevals.tasks.definition import Task


@dataclass(frozen=True)
class Tally:
    """Where a run stands: trials done of ``total``, failures among them, conversations in
    flight, and cases whose every conversation finished."""

    done: int
    total: int
    failures: int
    running: int
    cases_done: int


Progress = Callable[[Tally], None]
#: ``--jobs`` when not given: conversations mostly wait on model APIs, not on CPU, so
#: the default is a fixed number of slots rather than the core count (docs/choices.md).
DEFAULT_JOBS = 16
#: Most trials (scenario runs, summed over cases) one run may plan.
MAX_TRIALS = 100_000


@dataclass(frozen=True)
class Plan:
    """What a run will do, read from one revision before anything executes."""

    settings: Settings
    cases: tuple[Case, ...]           # cases that linted clean, sorted by name
    blocked: tuple[str, ...]          # selected cases that did not lint
    findings: tuple[Finding, ...]     # lint findings of the selected cases
    files: dict[str, str]             # path -> blob sha of every case/grader/settings used
    trials: int | None = None
    tasks: tuple[Task, ...] = ()      # task directories that loaded clean (gitevals.run.tasks)
    notes: tuple[str, ...] = ()       # what the task loader skipped, in words
    #: ``run --task-controls``: each task's validity controls run before its trials; a task
    #: whose controls fail is broken (``gitevals.tasks.controls``)
    task_controls: bool = False

    def task_trials(self) -> int:
        """Trials of each task: ``--trials``, else one."""
        return self.trials or 1

    def trials_of(self, scenario: Scenario) -> int:
        return self.trials if self.trials is not None else scenario.trials

    def conversations(self, case: Case) -> int:
        """How many conversations ``case`` makes: the most any scenario asks for."""
        return max((self.trials_of(s) for s in case.scenarios), default=0)

    def total(self) -> int:
        return (sum(self.trials_of(s) for c in self.cases for s in c.scenarios)
                + len(self.tasks) * self.task_trials())


def case_paths(tree: Tree, root: str) -> dict[str, str]:
    """Case name -> path, for every ``<root>/cases/<name>.yaml`` (or .yml) of ``tree``."""
    prefix = f"{root}/cases/"
    out: dict[str, str] = {}
    for path in tree.blob_shas(prefix):  # regular files only, as lint reads (GE113)
        rest = path[len(prefix):]
        if "/" not in rest and rest.endswith((".yaml", ".yml")):
            out.setdefault(case_name(path), path)
    return dict(sorted(out.items()))


def select_cases(available: dict[str, str], names: Sequence[str]) -> dict[str, str]:
    """The named cases (all when none named); an unknown name is a usage error."""
    from gitevals.errors import UsageError

    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        have = ", ".join(available) or "none"
        raise UsageError(f"unknown case {unknown[0]!r}: available cases are {have}")
    return {n: available[n] for n in sorted(set(names))}


def empty(the_plan: Plan) -> bool:
    """No case or task, not even a blocked one: a run of the goldens alone."""
    return not the_plan.cases and not the_plan.tasks and not the_plan.blocked


# --- execution --------------------------------------------------------------------------


@dataclass
class Done:
    """One scenario of one conversation, before grading."""

    scenario: int
    transcript: Transcript
    error: ErrorRecord | None
    graders: list[GraderAnswer] | None = None  # already graded (on a cluster's worker)


class Execution:
    """Runs a ``Plan`` in ``tree_dir`` (a materialized commit). Thread-safe ``interrupt``."""

    def __init__(self, the_plan: Plan, tree_dir: str, jobs: int,
                 grader_timeout: float = GRADER_TIMEOUT,
                 target_env: Mapping[str, str] | None = None, bwrap: str | None = None,
                 executor: Executor | None = None, registry: ProcessRegistry | None = None,
                 stop: threading.Event | None = None, interpreter: str | None = None,
                 public_env: frozenset[str] = frozenset()) -> None:
        from gitevals.run.executors import LocalExecutor

        self.plan = the_plan
        # Given to the target only (``run --target-env``, an experiment lane's ``env:``):
        # graders run with gitevals' own environment.
        self.target_env = dict(sorted((target_env or {}).items()))
        self.public_env = public_env  # recorded in clear; every other value hashed
        self._env = {**os.environ, **self.target_env} if self.target_env else None
        # Where conversations run (gitevals.run.executors); grading stays here unless
        # the executor graded on its workers.
        self.executor: Executor = executor or LocalExecutor()
        self.tree_dir = tree_dir
        self.jobs = max(1, jobs)
        target = the_plan.settings.target
        # a python target runs in ``interpreter`` (run.targets.resolve_interpreter)
        self.argv = target_argv(target.command, target.python, interpreter,
                                 target.endpoint) if target else []
        self.python_target = bool(target and not target.command and target.python)
        self.stop = stop or threading.Event()
        #: True while the main thread computes a sequential run's look: an interrupt
        #: may then raise there (gitevals.run.sequential)
        self.looking = False
        self.registry = registry or ProcessRegistry()
        self.registry.keep_holders = keeps_holders(self.jobs)
        # ``[target] conversations = "many"``: one command process serves them all
        self.shared = (SharedTarget(self.argv, tree_dir, self._env, self.registry)
                       if target and target.command and target.conversations == "many"
                       else None)
        self.graders = GraderPool(tree_dir, the_plan.settings.root,
                                  judge_config(the_plan.settings.judge), grader_timeout,
                                  self.registry)
        # (case index, scenario index) -> {trial: result}
        self.results: dict[tuple[int, int], dict[int, Trial]] = {}
        self._lock = threading.Lock()
        self.done = 0
        self.failures = 0
        self.running = 0  # conversations in flight
        self._left = [the_plan.conversations(c) for c in the_plan.cases]
        # Counted once: a progress display asks ten times a second, and counting every
        # trial of a 1,000-case plan each time was a CPU-second of a run.
        self._total = the_plan.total()
        self._cases_done = sum(1 for n in self._left if n == 0)
        #: (case, scenario, trial) -> run it?; None: each scenario's planned trials
        self.wanted: Callable[[Case, Scenario, int], bool] | None = None
        self._bwrap = bwrap  # None: the verifier runs without a sandbox (`run --no-sandbox`)
        self.task_results: dict[int, dict[int, Trial]] = {}
        #: task index -> its controls, once ``check_tasks`` ran them (``--task-controls``)
        self.controls: dict[int, Controls] = {}
        #: told of every trial recorded, after it is (``run --cost-limit``'s meter)
        self.on_trial: Callable[[Trial], None] | None = None

    def warm_target(self, wait: float) -> str | None:
        """Import a python target in its warm worker now, the one its conversations fork
        from (the preflight: the import is paid once): its one line when it does not
        import; None when it did, or when there is no warm worker here (then the caller
        checks in a process of its own)."""
        from gitevals.run.reaper import SupervisorGone

        if not self.python_target:
            return None
        sup = self.registry.acquire()
        if sup is None:
            raise SupervisorGone("no supervisor here")
        try:
            return sup.warm(zygote_argv(self.argv), self.tree_dir, self._env, wait)
        finally:
            self.registry.release(sup)

    @cached_property
    def task_trials(self) -> TaskTrials:
        """The tasks' trials, made on first use: a run of cases alone never imports the
        task machinery (its sandbox, verifier)."""
        from gitevals.run.tasks import TaskTrials

        return TaskTrials(self.tree_dir, self.argv, self.python_target, self.registry,
                          self.stop, self._bwrap, self._env)

    def _task(self, ti: int, trial: int) -> None:
        """Trial ``trial`` of task ``ti``: a conversation and its verifier calls."""
        with self._lock:
            self.running += 1
        try:
            result = self.executor.task_trial(self, ti, trial)
        finally:
            with self._lock:
                self.running -= 1
        if result is None:
            return
        with self._lock:
            self.task_results.setdefault(ti, {})[trial] = result
            self.done += 1
            self.failures += 0 if result["passed"] else 1
        if self.on_trial is not None:
            self.on_trial(result)

    def interrupt(self) -> None:
        """Start no more work and kill every running target and grader."""
        self.stop.set()
        self.registry.kill_all()
        self.executor.interrupt()

    def _converse(self, case: Case, trial: int,
                  only: frozenset[int] | None = None) -> list[Done]:
        """Conversation ``trial`` of ``case``: its scenarios in order on one target process
        (those ``wants`` runs, or the indices ``only`` when the driver decided them)."""
        done: list[Done] = []
        ended: ErrorRecord | None = None  # the error every later scenario inherits
        with self._conversation(case, trial) as conv:
            for index, s in enumerate(case.scenarios):
                if index not in only if only is not None else not self.wants(case, s, trial):
                    continue  # this scenario sits out the later conversations
                if self.stop.is_set():
                    return []
                started = time.monotonic()
                replies, error = ([], ended) if ended else self._turns(conv, case, s, trial)
                if error is not None and ended is None:
                    ended = {"kind": error["kind"], "message": "not run: the conversation "
                             f"ended in scenario {s.id!r}: {error['message']}"}
                ms = int((time.monotonic() - started) * 1000)
                done.append(Done(index, transcript(replies, ms), error))
        return [] if self.stop.is_set() else done

    def _conversation(self, case: Case, trial: int) -> Conversation | SharedConversation:
        if self.shared is not None:
            return self.shared.conversation(f"{case.name}#{trial}")
        return Conversation(self.argv, self.tree_dir, env=self._env, registry=self.registry,
                            python_target=self.python_target)

    def wants(self, case: Case, s: Scenario, trial: int) -> bool:
        """Does conversation ``trial`` of ``case`` run scenario ``s``? (A sequential run
        narrows this round by round: ``gitevals.run.sequential``.)"""
        if self.wanted is not None:
            return self.wanted(case, s, trial)
        return self.plan.trials_of(s) > trial

    @staticmethod
    def _turns(conv: Conversation | SharedConversation, case: Case, s: Scenario,
               trial: int) -> tuple[list[JSONObject], ErrorRecord | None]:
        """Send the scenario's user turns; the replies, and the error that ended it if any."""
        deadline = time.monotonic() + s.timeout
        replies: list[JSONObject] = []
        for turn, text in enumerate(s.user):
            msg: Turn = {"text": text, "turn": turn, "case": case.name, "scenario": s.id,
                   "trial": trial}
            try:
                replies.append(conv.ask(msg, deadline))
            except TargetError as exc:
                return replies, exc.as_dict()
        return replies, None

    def tally(self) -> Tally:
        """A snapshot for progress displays."""
        with self._lock:
            return Tally(self.done, self._total, self.failures, self.running,
                         self._cases_done)

    def _trial(self, ci: int, trial: int) -> None:
        with self._lock:
            self.running += 1
        try:
            self._score(ci, trial)
        finally:
            with self._lock:
                self.running -= 1
                left = self._left[ci] = self._left[ci] - 1
                self._cases_done += (left == 0) - (left == -1)

    def _score(self, ci: int, trial: int) -> None:
        from gitevals.run.scoring import expect_of, score_trial

        case = self.plan.cases[ci]
        scored = []
        placed = self.executor.converse(self, ci, trial)
        for d in placed.done:
            s = case.scenarios[d.scenario]
            expect = expect_of(s)
            graders = d.graders if d.graders is not None else (
                grade(self.graders.call, s.id, list(s.user), expect, d.transcript)
                if d.error is None else [])
            assertions, passed = score_trial(expect, d.transcript, graders, d.error)
            result: Trial = {"trial": trial, "transcript": d.transcript, "error": d.error,
                             "graders": graders, "assertions": assertions, "passed": passed}
            if placed.placement is not None:
                result["placement"] = placed.placement
            scored.append((d.scenario, result))
        if self.stop.is_set():
            return  # abandoned: an interrupted conversation is not recorded
        with self._lock:
            for si, result in scored:
                self.results.setdefault((ci, si), {})[trial] = result
                self.done += 1
                self.failures += 0 if result["passed"] else 1
        if self.on_trial is not None:
            for _, done in scored:
                self.on_trial(done)

    def run(self, progress: Progress | None = None,
            work: Iterable[tuple[int, int]] | None = None, last: bool = True,
            tasks: bool = True) -> None:
        """Run every conversation and task trial (or the ``(case index, trial)`` pairs of
        ``work``, and the task trials only when ``tasks``); returns early (with what
        finished) once interrupted. ``last=False`` keeps the grader workers for another
        call.

        The work is drawn lazily, one item at a time by the thread that will run it: a
        plan of many trials never becomes a list of them in memory, and an interrupt
        stops the drawing at once."""
        counts = [self.plan.conversations(c) for c in self.plan.cases]
        if tasks:
            self.check_tasks()
        # a task whose controls failed is not run: its trials are broken (``cases``)
        runs = [0 if ti in self.controls and not self.controls[ti].valid
                else self.plan.task_trials() for ti in range(len(self.plan.tasks))]
        # Trial-major order: every case gets its first conversations early.
        items = chain(
            ((self._trial, ci, t) for ci, t in (work if work is not None
                                                else _trial_major(counts))),
            ((self._task, ti, t) for ti, t in _trial_major(runs if tasks else [])))
        try:
            _Slots(self, items).run(progress)
        finally:
            if last or self.stop.is_set():
                self.graders.close()
                if self.shared is not None:
                    self.shared.close()
        if progress is not None:
            progress(self.tally())

    def check_tasks(self) -> None:
        """Run the validity controls of every task not yet checked, when the plan asks
        (``run --task-controls``), in the sandbox, one task after another."""
        if not self.plan.task_controls or self.task_trials.bwrap is None:
            return
        from gitevals.tasks.controls import run_controls

        for ti, task in enumerate(self.plan.tasks):
            if ti not in self.controls and not self.stop.is_set():
                realized = self.task_trials.image(task)[0]  # its system, when realized
                self.controls[ti] = run_controls(task, Path(self.tree_dir) / task.path,
                                                 self.task_trials.bwrap,
                                                 realized.root if realized else None)

    def cases(self) -> list[CaseRun]:
        """The run's ``cases`` from what finished (results in trial order)."""
        from gitevals.run.scoring import expect_of, verdict

        out: list[CaseRun] = []
        for ci, case in enumerate(self.plan.cases):
            scenarios: list[ScenarioRun] = []
            for si, s in enumerate(case.scenarios):
                by_trial = self.results.get((ci, si), {})
                results = [by_trial[t] for t in sorted(by_trial)]
                scenarios.append({
                    "id": s.id, "user": list(s.user), "expect": expect_of(s),
                    "trials": self.plan.trials_of(s), "timeout": s.timeout,
                    "results": results, "verdict": verdict(results)})
            record: CaseRun = {"name": case.name, "path": case.path,
                               "blob": self.plan.files.get(case.path), "scenarios": scenarios}
            if case.cluster is not None:
                record["cluster"] = case.cluster
            out.append(record)
        if self.plan.tasks:
            from gitevals.run.tasks import broken_trials, case_run, sandbox_name

            # not ``self.task_trials.sandbox``: making the trials' machinery touches the
            # commit directory, gone here when the trials ran on Ray nodes
            sandbox = sandbox_name(self._bwrap)

            for ti, task in enumerate(self.plan.tasks):
                by_trial = self.task_results.get(ti, {})
                controls = self.controls.get(ti)
                results = ([by_trial[t] for t in sorted(by_trial)]
                           if controls is None or controls.valid
                           else broken_trials(task, self.plan.task_trials(),
                                              controls.reason(), sandbox))
                made = self.__dict__.get("task_trials")  # None: the trials ran on Ray nodes
                limits = next((r["task"]["limits"] for r in results
                               if "task" in r and "limits" in r["task"]), None)
                out.append(case_run(task, self.plan.task_trials(), results, sandbox,
                                    None if controls is None else controls.as_dict(),
                                    made.image_record(task) if made is not None else None,
                                    limits or (made.mechanism if made is not None
                                               else "rlimit")))
            out.sort(key=lambda c: c["name"])
        return out


class _Slots:
    """The job slots of one ``Execution.run``: ``jobs`` threads, each drawing its next item
    itself (under a lock) as it finishes one, until the work is done or the run stops.

    Why not a pool fed by the main thread: handing each conversation over woke the main
    thread and then a pool thread through a queue, futures and a waiter, system calls
    and switches of the GIL for every conversation; here a slot goes from one
    conversation to the next without waking anyone. The main thread only shows progress
    and, once the run is interrupted, kills what is running."""

    def __init__(self, execution: Execution,
                 items: Iterator[tuple[Callable[[int, int], None], int, int]]) -> None:
        self.execution = execution
        self.items = items
        self.failed: list[BaseException] = []
        self._lock = threading.Lock()
        self._closed = False  # no more drawing: the main thread is leaving

    def _draw(self) -> tuple[Callable[[int, int], None], int, int] | None:
        with self._lock:
            if self._closed or self.execution.stop.is_set():
                return None
            try:
                return next(self.items, None)
            except BaseException as exc:  # a bug making the work: raised once all stopped
                self.failed.append(exc)
                self._closed = True
                return None

    def _serve(self, first: tuple[Callable[[int, int], None], int, int]) -> None:
        item: tuple[Callable[[int, int], None], int, int] | None = first
        while item is not None:
            fn, index, trial = item
            try:
                fn(index, trial)
            except BaseException as exc:  # a bug in a trial: raised once all stopped
                with self._lock:
                    self.failed.append(exc)
            item = self._draw()

    def run(self, progress: Progress | None) -> None:
        """Run every item; a bug in a trial thread surfaces here once everything stopped,
        not silently."""
        stop = self.execution.stop
        threads: list[threading.Thread] = []
        try:
            # a slot for each of the first ``jobs`` items: no idle thread when there are fewer
            while len(threads) < self.execution.jobs and (first := self._draw()) is not None:
                threads.append(threading.Thread(target=self._serve, args=(first,),
                                                name=f"gitevals-trial_{len(threads)}"))
                threads[-1].start()
            shown = 0.0
            for thread in threads:
                while thread.is_alive() and not stop.is_set():
                    thread.join(0.1 if progress is not None else 0.5)
                    if progress is not None and time.monotonic() - shown >= 0.1:
                        progress(self.execution.tally())
                        shown = time.monotonic()
        finally:
            with self._lock:
                self._closed = True
            if stop.is_set():
                self.execution.registry.kill_all()
            for thread in threads:
                thread.join()
        if self.failed:
            raise self.failed[0]


def _trial_major(counts: Sequence[int]) -> Iterator[tuple[int, int]]:
    """``(index, trial)`` for every trial of ``counts`` (item ``i`` has ``counts[i]``),
    trial by trial: ``(0, 0), (1, 0), (0, 1), ...``, drawn as needed."""
    for t in range(max(counts, default=0)):
        for i, n in enumerate(counts):
            if t < n:
                yield i, t


@dataclass(frozen=True)
class Provenance:
    """Where a run came from: revision as given, commit, tree, dirty state."""

    rev: str
    commit: str
    tree: str
    dirty: bool = False
    dirty_diff: str | None = None


#: ``call(grader name, case, run) -> GraderReply`` (``GraderPool.call``).
GraderCall = Callable[[str, JSONObject, JSONObject], GraderReply]


def grade(call: GraderCall, scenario_id: str, user: list[str], expect: list[JSONObject],
          t: Transcript) -> list[GraderAnswer]:
    """The answers of every grader ``expect`` names, on one trial's transcript: the one
    place a grader call's arguments are built (a run, and ``score --regrade``)."""
    case, run = grader_arguments(scenario_id, user, expect, t)
    out: list[GraderAnswer] = []
    for index, name in grader_calls(expect):
        answer = call(name, case, run)
        raw, error = answer["raw"], answer["error"]
        why = unkeepable(raw)
        if why is not None:  # kept as an error, so the run can always be written and read
            raw, error = None, {"kind": "grader_malformed",
                                "message": f"grader {name}: its answer cannot be kept: {why}"}
        graded: GraderAnswer = {"index": index, "name": name, "raw": raw, "error": error,
                                "duration_ms": answer["duration_ms"]}
        used = judge_calls(answer.get("usage"))
        if used is not None:  # only a grader that asked the judge: older runs stay as they were
            graded["usage"] = used
        out.append(graded)
    return out
