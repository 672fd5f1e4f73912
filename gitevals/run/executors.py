"""Executors: what runs a plan's conversations once the driver has made the plan.

The driver (``gitevals.run.runner.Execution``) keeps its thread pool in every case: one
thread per conversation in flight (``--jobs``), which scores and grades what comes
back and feeds the progress bar. An executor decides where the conversation itself
runs:

- ``local``: in that thread, against the commit materialized on this machine (today's
  behaviour, unchanged);
- ``ray``: as a call on a Ray cluster (``gitevals.run.ray_executor``, which imports
  ``ray`` lazily), the thread waiting for its answer.

The seam is ``Executor.converse``. A cluster ships work as *conversation jobs*: any
picklable callable ``job(ctx) -> result`` (``Job``), run on a worker against that
node's copy of the tree (``Context``), with optional resource hints
(``Resources``: a task's ``cpus``/``memory_mb``) that become the cluster's resource
requests. Cases use ``CaseConversation``; task trials and goldens conversations plug
in the same way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from gitevals.errors import UsageError

if TYPE_CHECKING:
    from gitevals.jsontypes import JSONObject
    from gitevals.run.artifact import ExecutorRecord, Placement, Trial
    from gitevals.run.runner import Done, Execution, Plan
    from gitevals.run.targets import ProcessRegistry
    from gitevals.tasks.definition import Task

KINDS = ("local", "ray")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class Resources:
    """What one job asks of a node: CPUs (may be fractional) and memory in MiB."""

    cpus: float | None = None
    memory_mb: int | None = None


@dataclass
class Context:
    """Where a job runs: the node's copy of the pinned tree, its process registry and
    stop flag, the run's shared plan, and per-run state jobs may keep (``state``)."""

    tree_dir: str
    registry: ProcessRegistry
    stop: threading.Event
    shared: RunShared
    node: str = ""
    state: dict[str, object] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Job(Protocol[R_co]):
    """A picklable unit of work for a cluster: called once per attempt on some node."""

    @property
    def resources(self) -> Resources | None: ...

    def __call__(self, ctx: Context) -> R_co: ...


@dataclass(frozen=True)
class RunShared:
    """What every job of one run shares, shipped to each node once with the tree."""

    plan: Plan
    jobs: int
    grader_timeout: float
    graders_on_workers: bool = False
    target_env: dict[str, str] = field(default_factory=dict)  # run --target-env
    #: task verifiers run in bubblewrap (each node finds its own bwrap); False only for
    #: ``run --no-sandbox``
    sandboxed: bool = True


@dataclass(frozen=True)
class Placed:
    """A conversation's scenarios as run, and where it ran (None on the local executor)."""

    done: list[Done]
    placement: Placement | None = None


class Executor(Protocol):
    """Runs one conversation of a planned case; called from the driver's job threads."""

    kind: str

    def converse(self, execution: Execution, ci: int, trial: int) -> Placed: ...

    def task_trial(self, execution: Execution, ti: int, trial: int) -> Trial | None: ...

    def interrupt(self) -> None: ...

    def record(self) -> ExecutorRecord: ...


class LocalExecutor:
    """Today's executor: the conversation runs in the calling thread, on this machine."""

    kind = "local"

    def converse(self, execution: Execution, ci: int, trial: int) -> Placed:
        return Placed(execution._converse(execution.plan.cases[ci], trial))

    def task_trial(self, execution: Execution, ti: int, trial: int) -> Trial | None:
        return execution.task_trials.trial(execution.plan.tasks[ti], trial)

    def interrupt(self) -> None:
        """Nothing of its own to stop: the execution kills its targets."""

    def record(self) -> ExecutorRecord:
        return {"kind": "local", "address": None, "nodes": []}


@dataclass(frozen=True)
class CaseConversation:
    """Conversation ``trial`` of the plan's case ``ci``, as a cluster job: its scenarios
    in order on one target process in the node's tree, graded there too when the run
    asked for ``--graders-on-workers``."""

    ci: int
    trial: int
    resources: Resources | None = None
    #: the scenarios (indices) this conversation runs, as the driver's ``Execution.wants``
    #: decided them (a sequential run narrows them round by round)
    scenarios: frozenset[int] | None = None

    def __call__(self, ctx: Context) -> list[Done]:
        from gitevals.run.runner import grade
        from gitevals.run.scoring import expect_of

        execution = worker_execution(ctx)
        case = execution.plan.cases[self.ci]
        done = execution._converse(case, self.trial, self.scenarios)
        if ctx.shared.graders_on_workers:
            for d in done:
                s = case.scenarios[d.scenario]
                d.graders = (grade(execution.graders.call, s.id, list(s.user), expect_of(s),
                                   d.transcript) if d.error is None else [])
        return done


@dataclass(frozen=True)
class TaskTrialJob:
    """Trial ``trial`` of the plan's task ``ti`` as a cluster job: its conversation and
    every verifier call, in bubblewrap on the node that runs it. A task's ``cpus`` and
    ``memory_mb`` become the job's resource request."""

    ti: int
    trial: int
    resources: Resources | None = None

    def __call__(self, ctx: Context) -> Trial | None:
        import time

        execution = worker_execution(ctx)
        trials = execution.task_trials
        task = execution.plan.tasks[self.ti]
        if ctx.shared.sandboxed and trials.bwrap is None:
            # never a verifier run unsandboxed because this node lacks bubblewrap
            return trials._trial(task, self.trial, [], [], time.monotonic(), {
                "kind": "verifier_error", "message": f"no bwrap on Ray node {ctx.node[:12]}: "
                "install bubblewrap on every node (docs/run.md)"})
        return trials.trial(task, self.trial)


def task_resources(task: Task) -> Resources | None:
    env = task.environment
    if env.cpus is None and env.memory_mb is None:
        return None
    return Resources(env.cpus, env.memory_mb)


def worker_execution(ctx: Context) -> Execution:
    """The node's ``Execution`` of the shared plan (one per run and node): it owns the
    node's target processes and, with ``--graders-on-workers``, its grader pool."""
    from gitevals.run.runner import Execution

    with ctx.lock:
        found = ctx.state.get("execution")
        if isinstance(found, Execution):
            return found
        shared = ctx.shared
        bwrap = None
        if shared.sandboxed and shared.plan.tasks:
            from gitevals.tasks.sandbox import find_bwrap

            bwrap = find_bwrap()  # this node's own
        made = Execution(shared.plan, ctx.tree_dir, shared.jobs, shared.grader_timeout,
                         target_env=shared.target_env, bwrap=bwrap, registry=ctx.registry,
                         stop=ctx.stop)
        ctx.state["execution"] = made
        return made


@dataclass(frozen=True)
class ExecutorChoice:
    """The executor a run uses: ``--executor``/``--ray-address`` over the commit's
    ``[executor]`` settings over ``local``."""

    kind: str = "local"
    address: str | None = None


def choose(raw_settings: JSONObject, kind: str | None, address: str | None) -> ExecutorChoice:
    """Resolve the executor from the command line and the settings table (schema-valid)."""
    table = raw_settings.get("executor")
    table = table if isinstance(table, dict) else {}
    set_kind, set_address = table.get("kind"), table.get("address")
    if kind is None:
        kind = "ray" if address is not None else (set_kind if isinstance(set_kind, str)
                                                  else "local")
    if kind == "local":
        if address is not None:
            raise UsageError("--ray-address is for --executor ray: drop it, or add "
                             "--executor ray")
        return ExecutorChoice()
    if address is None and isinstance(set_address, str):
        address = set_address
    return ExecutorChoice("ray", address)
