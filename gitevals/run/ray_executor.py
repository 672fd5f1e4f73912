"""``run --executor ray``: a run's conversations as calls on a Ray cluster.

The plan is made on the driver as for every run; then:

- the materialized commit is packed once (a tar keyed by the tree SHA) and put in the
  cluster's object store; each node unpacks it once into its cache
  (``$XDG_CACHE_HOME/gitevals/ray-trees/<tree sha>/``, reused by later runs of the same
  tree) and copies it into a fresh work directory for the run, so targets never change
  the cached tree. Nothing depends on a shared filesystem or on the repository;
- one *host* actor per live node (``num_cpus=0``, pinned to its node) runs
  conversations in threads, as the local executor does: targets are processes, so a
  conversation waiting on a model must not hold a whole CPU of the node, and a Ray
  worker process per conversation would cost more to start than a turn takes
  (benchmarks/bench_ray.py). Hosts are detached and shared by runs, and exit after
  ``IDLE_EXIT`` idle seconds: a run finds them warm. ``--jobs`` bounds the calls in
  flight across the cluster;
- a job with resource hints (a task's ``cpus``/``memory_mb``) runs as a plain Ray task
  asking for exactly those resources instead;
- a node that dies under a conversation: the conversation is started again on a live
  node, up to ``ATTEMPTS`` attempts in all (recorded in the trial's ``placement``),
  then recorded as an infrastructure error (``node_lost``), never dropped;
- a node that joins the cluster during the run gets a host and the tree within
  ``WATCH_EVERY`` seconds and takes work from then on;
- an interrupt stops the run's targets on every host and cancels what is queued; the
  end of a run (interrupted or not) removes its copies of the tree.

Ray's own log lines never reach stdout: workers do not log to the driver and the
driver logs errors only, to stderr.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeGuard, TypeVar, overload

from gitevals import __version__
from gitevals.errors import UsageError
from gitevals.run.executors import Context, Placed, RunShared

if TYPE_CHECKING:
    from gitevals.run.artifact import ErrorRecord, ExecutorRecord, Placement, Trial
    from gitevals.run.executors import Job
    from gitevals.run.runner import Done, Execution

R = TypeVar("R")

#: Attempts a conversation gets when the nodes under it die: the first and two retries.
ATTEMPTS = 3
#: How long the address check waits for the cluster's head to accept a connection.
CONNECT_TIMEOUT = 5.0
#: A host with no run for this long exits (seconds); the next run starts a new one.
IDLE_EXIT = float(os.environ.get("GITEVALS_RAY_HOST_IDLE", "600"))
#: Conversation threads of a host, for all the runs it serves at once (--jobs each).
HOST_THREADS = 512
#: How often a run looks for nodes that joined the cluster after it started (seconds).
WATCH_EVERY = float(os.environ.get("GITEVALS_RAY_WATCH", "2"))
#: How long a node that joined during the run may take to start its host (seconds).
JOIN_TIMEOUT = 60.0
_MIB = 1024 * 1024


# --- the parts of Ray's API the driver calls ---------------------------------------------
#
# Ray is an optional extra, imported only when a run asks for a cluster. What gitevals
# calls of it is written down here, once, as Protocols; ``_import_ray`` checks the module
# it imported has each of them (``_is_ray``) before the driver calls any.

#: An object reference (``ray.put``, ``.remote(...)``): opaque here, handed back to Ray.
ObjectRef = object


class _RemoteMethod(Protocol):
    """A method of an actor, called on the cluster (``actor.load.remote(...)``)."""

    def remote(self, *args: object) -> ObjectRef: ...


class _HostHandle(Protocol):
    """The driver's handle on a ``HostActor``: its methods, each called remotely."""

    @property
    def load(self) -> _RemoteMethod: ...
    @property
    def run(self) -> _RemoteMethod: ...
    @property
    def interrupt(self) -> _RemoteMethod: ...
    @property
    def finish(self) -> _RemoteMethod: ...


class _HostClass(Protocol):
    """``ray.remote(HostActor)``: placed by ``options``, started by ``remote``."""

    def options(self, **options: object) -> _HostClass: ...
    def remote(self) -> _HostHandle: ...


class _SizedTask(Protocol):
    """``ray.remote(run_sized_job)``: a task asking for the resources ``options`` name."""

    def options(self, **options: float) -> _SizedTask: ...
    def remote(self, *args: object) -> ObjectRef: ...


class _RayErrors(Protocol):
    """``ray.exceptions``: the errors the driver tells apart."""

    RayError: type[Exception]
    RayActorError: type[Exception]
    TaskCancelledError: type[Exception]
    NodeDiedError: type[Exception]
    ObjectLostError: type[Exception]
    WorkerCrashedError: type[Exception]
    LocalRayletDiedError: type[Exception]


#: What a sized job's task runs (``run_sized_job``), as ``ray.remote`` takes it.
_SizedJob = Callable[["Job[object]", bytes, str, RunShared], tuple[object, str]]


class _Ray(Protocol):
    """The ``ray`` module, as far as the driver uses it."""

    @property
    def exceptions(self) -> _RayErrors: ...
    def init(self, *, address: str, log_to_driver: bool, logging_level: int,
             namespace: str) -> object: ...
    def nodes(self) -> list[Mapping[str, object]]: ...
    def put(self, value: object) -> ObjectRef: ...
    def get(self, ref: ObjectRef, *, timeout: float | None = None) -> object: ...
    def wait(self, refs: list[ObjectRef], *, num_returns: int, timeout: float) -> object: ...
    def cancel(self, ref: ObjectRef) -> None: ...
    def shutdown(self) -> None: ...
    @overload
    def remote(self, target: type[HostActor]) -> _HostClass: ...
    @overload
    def remote(self, target: _SizedJob) -> _SizedTask: ...


_RAY_CALLS = ("init", "nodes", "put", "get", "wait", "cancel", "shutdown", "remote")
_RAY_ERRORS = ("RayError", "RayActorError", "TaskCancelledError", "NodeDiedError",
               "ObjectLostError", "WorkerCrashedError", "LocalRayletDiedError")


def _is_ray(module: object) -> TypeGuard[_Ray]:
    """Whether ``module`` has every function and error class the driver calls (``_Ray``):
    a Ray too old or too new for them is refused in one line, not met mid-run."""
    errors = getattr(module, "exceptions", None)
    return (all(callable(getattr(module, name, None)) for name in _RAY_CALLS)
            and all(isinstance(e := getattr(errors, name, None), type)
                    and issubclass(e, Exception) for name in _RAY_ERRORS))


def _is_reply(value: object, job: Job[R]) -> TypeGuard[tuple[R, str]]:
    """Whether ``value``, what ``ray.get`` gave for ``job``, is ``(result, node id)``, as
    ``HostActor.run`` and ``run_sized_job`` return it. The result is what ``job`` itself
    returned on the node (the same gitevals: hosts are named by version)."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str)


def _alive(nodes: list[Mapping[str, object]]) -> list[str]:
    """The ids of the live nodes of ``ray.nodes()``, sorted."""
    return sorted(n for n in (node.get("NodeID") for node in nodes if node.get("Alive"))
                  if isinstance(n, str))


# --- the driver side ------------------------------------------------------------------


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse, in one line, a ``host:port`` no cluster head answers on."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(f"--ray-address {address!r} is not host:port (e.g. 127.0.0.1:6379, "
                         "the address `ray start --head` printed)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise UsageError(f"no Ray cluster answers at {address} ({why}): start one with "
                         "`ray start --head` (docs/run.md), or pass its address with "
                         "--ray-address") from None


def _import_ray() -> _Ray:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray installed: pip install 'gitevals[ray]' "
                         "(on the driver and on every node of the cluster)") from None
    module: object = ray
    if not _is_ray(module):
        raise UsageError(f"Ray {getattr(module, '__version__', '(unknown version)')} lacks "
                         "calls gitevals makes: pip install 'gitevals[ray]' for a Ray it "
                         "knows (on the driver and on every node of the cluster)")
    return module


def pack_tree(tree_dir: str) -> bytes:
    """The materialized commit as an uncompressed tar (trees are small; gzip only costs)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in sorted(os.listdir(tree_dir)):
            tar.add(os.path.join(tree_dir, name), arcname=name)
    return buf.getvalue()


@dataclass
class _Host:
    """The driver's handle on one node's host actor."""

    actor: _HostHandle
    node: str
    inflight: int = 0
    alive: bool = True


@dataclass(frozen=True)
class _Shipped:
    """A run's tree and plan, put in the cluster's object store once (``start``)."""

    tree_sha: str
    tree: ObjectRef
    shared: ObjectRef


class RayExecutor:
    """Runs conversations on the Ray cluster at ``address`` (``connect`` first)."""

    kind = "ray"

    def __init__(self, address: str | None) -> None:
        self.address = address
        self.ray: _Ray | None = None
        self._hosts: list[_Host] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._refs: set[ObjectRef] = set()
        self._nodes: set[str] = set()
        self._tree: _Shipped | None = None
        # HostActor and run_sized_job, made remote once
        self._host_class: _HostClass | None = None
        self._sized: _SizedTask | None = None
        self._run = os.urandom(4).hex()
        self._stdout = sys.stdout
        self._joining: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._ended = threading.Event()  # the run is over: no more hosts to start
        self._failed: UsageError | None = None

    def connect(self) -> None:
        """Reach the cluster before anything of the run starts: an address nobody answers
        on is one line and exit 2 here. Importing Ray, joining the cluster and starting
        a host per node then go on in the background while the driver materializes the
        commit (together about 4 s on 2 cores: half of it is ``import ray``);
        ``start`` waits for them."""
        if self.address is not None:
            check_reachable(self.address)
        # Ray's driver prints cluster events ("(raylet) The node ... has been marked dead")
        # to whatever sys.stdout is: they go to stderr until ``close``, so stdout holds the
        # result alone (``--format json`` stays one JSON document).
        self._stdout = sys.stdout
        sys.stdout = sys.stderr
        self._joining = threading.Thread(target=self._join, name="gitevals-ray-join",
                                         daemon=True)
        self._joining.start()

    def _join(self) -> None:
        try:
            ray = _import_ray()
            try:
                ray.init(address=self.address or "auto", log_to_driver=False,
                         logging_level=logging.ERROR, namespace="gitevals")
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "auto (RAY_ADDRESS, or a cluster on this machine)"
                text = str(exc).strip()
                first = text.splitlines()[0] if text else type(exc).__name__
                raise UsageError(f"cannot join the Ray cluster at {where}: {first}; start "
                                 "one with `ray start --head` (docs/run.md)") from None
            self.ray = ray
            self._hosts = [self._host(n) for n in _alive(ray.nodes())]
        except UsageError as exc:
            self._failed = exc

    def start(self, tree_dir: str, tree_sha: str, shared: RunShared) -> None:
        """Ship the tree and the plan once; every host unpacks them (once per node)."""
        if self._joining is not None:
            self._joining.join()
        if self._failed is not None:
            raise self._failed
        ray = self._api()
        self._tree = _Shipped(tree_sha, ray.put(pack_tree(tree_dir)), ray.put(shared))
        self._load(self._hosts)
        if not any(h.alive for h in self._hosts):
            raise UsageError("no node of the Ray cluster could start a gitevals host: is "
                             "the same gitevals installed on every node? (docs/run.md)")
        self._watcher = threading.Thread(target=self._watch, name="gitevals-ray-watch",
                                         daemon=True)
        self._watcher.start()

    def _load(self, hosts: list[_Host], timeout: float | None = None) -> None:
        """Give each of ``hosts`` the run's tree and plan; a node that cannot start a host
        (or unpack the tree, within ``timeout`` seconds) is left out of the run."""
        ray, shipped = self._api(), self._shipped()
        loading = [(h, h.actor.load.remote(self._run, shipped.tree, shipped.tree_sha,
                                           shipped.shared))
                   for h in hosts]
        for h, ref in loading:
            try:
                ray.get(ref, timeout=timeout)
            except ray.exceptions.RayActorError:
                self._reload(h)  # found as it exited idle: a new one, once
            except ray.exceptions.RayError:
                h.alive = False

    def _watch(self) -> None:
        """Every ``WATCH_EVERY`` seconds until the run ends: a node that joined the cluster
        since gets a host and the tree, and takes work from then on."""
        while not self._ended.wait(WATCH_EVERY) and not self._stop.is_set():
            try:
                alive = set(_alive(self._api().nodes()))
            except Exception:  # the head is busy or going: look again later
                continue
            with self._lock:
                new = sorted(alive - {h.node for h in self._hosts})
            if not new:
                continue
            try:
                hosts = [self._host(node) for node in new]
            except Exception:  # the node went again: look again later
                continue
            self._load(hosts, timeout=JOIN_TIMEOUT)
            with self._lock:
                self._hosts += hosts

    def _reload(self, host: _Host) -> None:
        ray, shipped = self._api(), self._shipped()
        try:
            host.actor = self._host(host.node).actor
            ray.get(host.actor.load.remote(self._run, shipped.tree, shipped.tree_sha,
                                           shipped.shared))
        except ray.exceptions.RayError:
            host.alive = False

    def _api(self) -> _Ray:
        """Ray, once joined (``connect``, then ``start``); a RuntimeError before."""
        if self.ray is None:
            raise RuntimeError("the Ray executor is used before it joined the cluster")
        return self.ray

    def _shipped(self) -> _Shipped:
        if self._tree is None:
            raise RuntimeError("the Ray executor is used before start() shipped the tree")
        return self._tree

    def _host(self, node: str) -> _Host:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if self._host_class is None:
            self._host_class = self._api().remote(HostActor)
        cls = self._host_class
        # One host per node and gitevals version, shared by the runs of every driver:
        # named in the gitevals namespace, found if it exists, kept warm between runs.
        actor = cls.options(num_cpus=0, max_concurrency=HOST_THREADS, max_restarts=0,
                            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                            name=f"host-{__version__}-{node}", lifetime="detached",
                            get_if_exists=True).remote()
        return _Host(actor, node)

    # -- running jobs --

    def converse(self, execution: Execution, ci: int, trial: int) -> Placed:
        from gitevals.run.executors import CaseConversation

        case = execution.plan.cases[ci]
        wanted = frozenset(i for i, s in enumerate(case.scenarios)
                           if execution.wants(case, s, trial))
        done, placement = self.submit(CaseConversation(ci, trial, scenarios=wanted))
        if self._stop.is_set():
            return Placed([])
        if done is None:
            done = _lost(execution, ci, trial, placement)
        return Placed(done, placement)

    def task_trial(self, execution: Execution, ti: int, trial: int) -> Trial | None:
        """A task trial (conversation and verifier calls) on some node; a trial whose
        nodes all died is an infrastructure error of that trial, never dropped."""
        from gitevals.run.executors import TaskTrialJob, task_resources

        task = execution.plan.tasks[ti]
        result, placement = self.submit(TaskTrialJob(ti, trial, task_resources(task)))
        if self._stop.is_set():
            return None
        if result is None:
            import time

            result = execution.task_trials._trial(task, trial, [], [], time.monotonic(), {
                "kind": "node_lost", "message": _lost_why(placement)})
        trial_result: Trial = result
        trial_result["placement"] = placement
        return trial_result

    def submit(self, job: Job[R]) -> tuple[R | None, Placement]:
        """Run ``job`` on some node; its result (None when every attempt lost its node,
        or the run was interrupted) and where it ran."""
        lost: list[str] = []
        for attempt in range(1, ATTEMPTS + 1):
            host = self._pick()
            if host is None or self._stop.is_set():
                return None, {"node": "", "attempts": attempt - 1, "lost": lost}
            errors = self._api().exceptions
            try:
                result, node = self._call(host, job)
            except errors.TaskCancelledError:
                return None, {"node": host.node, "attempts": attempt, "lost": lost}
            except (errors.RayActorError, errors.NodeDiedError, errors.ObjectLostError,
                    errors.WorkerCrashedError, errors.LocalRayletDiedError) as exc:
                # A sized job ran as a task, not on the host: only the host's own death
                # takes the host out.
                if isinstance(exc, errors.RayActorError) or not _sized(job):
                    self._lose(host)
                lost.append(host.node if not _sized(job) else "task")
                continue
            with self._lock:
                self._nodes.add(node)
            return result, {"node": node, "attempts": attempt, "lost": lost}
        return None, {"node": "", "attempts": ATTEMPTS, "lost": lost}

    def _pick(self) -> _Host | None:
        """The live host with the fewest calls in flight (None when no node is left)."""
        with self._lock:
            live = [h for h in self._hosts if h.alive]
            if not live:
                return None
            host = min(live, key=lambda h: h.inflight)
            host.inflight += 1
            return host

    def _call(self, host: _Host, job: Job[R]) -> tuple[R, str]:
        ray = self._api()
        res = job.resources
        if res is not None and _sized(job):
            options: dict[str, float] = {"max_retries": 0}
            if res.cpus:
                options["num_cpus"] = res.cpus
            if res.memory_mb:
                options["memory"] = res.memory_mb * _MIB
            shipped = self._shipped()
            if self._sized is None:
                self._sized = ray.remote(run_sized_job)
            ref = self._sized.options(**options).remote(job, shipped.tree, shipped.tree_sha,
                                                        shipped.shared)
        else:
            ref = host.actor.run.remote(self._run, job)
        with self._lock:
            self._refs.add(ref)
        try:
            out = ray.get(ref)
            if not _is_reply(out, job):
                raise RuntimeError(f"a Ray call of {type(job).__name__} returned "
                                   f"{type(out).__name__}, not (result, node)")
            return out
        finally:
            with self._lock:
                self._refs.discard(ref)
                host.inflight -= 1

    def _lose(self, host: _Host) -> None:
        with self._lock:
            host.alive = False

    # -- stopping --

    def interrupt(self) -> None:
        """Stop every host's targets and cancel queued calls; never blocks (it is called
        from the signal handler)."""
        if self.ray is None or self._stop.is_set():
            self._stop.set()
            return
        self._stop.set()
        with self._lock:
            hosts = [h for h in self._hosts if h.alive]
            refs = list(self._refs)
        for h in hosts:
            with contextlib.suppress(Exception):
                h.actor.interrupt.remote(self._run)
        for ref in refs:
            with contextlib.suppress(Exception):
                self.ray.cancel(ref)

    def close(self) -> None:
        """Stop the hosts (their targets killed, work copies removed) and leave the cluster."""
        if self._joining is not None:
            self._joining.join()
        self._ended.set()
        if self._watcher is not None:
            self._watcher.join()
        ray = self.ray
        if ray is None:
            sys.stdout = self._stdout
            return
        with self._lock:
            hosts = [h for h in self._hosts if h.alive]
        closing = []
        for h in hosts:
            with contextlib.suppress(Exception):
                closing.append(h.actor.finish.remote(self._run))
        with contextlib.suppress(Exception):
            ray.wait(closing, num_returns=len(closing), timeout=10)
        with contextlib.suppress(Exception):
            ray.shutdown()
        self.ray = None
        sys.stdout = self._stdout

    def record(self) -> ExecutorRecord:
        with self._lock:
            nodes = sorted(self._nodes)
        return {"kind": "ray", "address": self.address, "nodes": nodes}


def _sized(job: Job[object]) -> bool:
    """A job that asked for resources runs as its own task, sized as asked."""
    res = job.resources
    return res is not None and bool(res.cpus or res.memory_mb)


def _lost_why(placement: Placement) -> str:
    lost = placement["lost"]
    if not lost:
        return "no node of the Ray cluster was left to run this conversation"
    nodes = ", ".join(n[:12] for n in lost)
    if placement["attempts"] < ATTEMPTS:
        return f"the Ray nodes under this conversation died ({nodes}) and no node was left"
    return (f"the Ray nodes under this conversation died {len(lost)} times ({nodes}); "
            f"not retried past {ATTEMPTS} attempts")


def _lost(execution: Execution, ci: int, trial: int, placement: Placement) -> list[Done]:
    """Every scenario of a conversation whose nodes all died: an infrastructure error."""
    from gitevals.run.artifact import transcript
    from gitevals.run.runner import Done

    why = _lost_why(placement)
    error: ErrorRecord = {"kind": "node_lost", "message": why}
    case = execution.plan.cases[ci]
    return [Done(i, transcript([], 0), error) for i, s in enumerate(case.scenarios)
            if execution.wants(case, s, trial)]


# --- the worker side ------------------------------------------------------------------


def cache_root() -> Path:
    """Where a node keeps unpacked trees: ``$XDG_CACHE_HOME/gitevals/ray-trees``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gitevals" / "ray-trees"


def unpack_cached(archive: bytes, tree_sha: str, root: Path | None = None) -> Path:
    """The tree ``tree_sha`` unpacked in this node's cache, unpacking ``archive`` only
    when no earlier run (or host of this run) did; concurrent unpackers race safely."""
    root = root or cache_root()
    final = root / tree_sha
    if (final / ".complete").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{tree_sha[:12]}-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            tar.extractall(scratch, filter="data")  # nothing outside, no device files
        (scratch / ".complete").write_text(tree_sha)
        try:
            os.rename(scratch, final)
        except OSError:  # another host got there first (or a stale half-made copy)
            if not (final / ".complete").is_file():
                shutil.rmtree(final, ignore_errors=True)
                os.rename(scratch, final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final


class _Workspace:
    """A fresh copy of the cached tree for one run on one node, removed at the end."""

    def __init__(self, archive: bytes, tree_sha: str) -> None:
        from gitevals.run.workdir import workdir

        cached = unpack_cached(archive, tree_sha)
        self._stack = contextlib.ExitStack()
        self.tree = self._stack.enter_context(workdir("ray"))
        shutil.copytree(cached, self.tree, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".complete"))

    def close(self) -> None:
        self._stack.close()


def _node_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id())


class HostActor:
    """One node's gitevals host (a detached Ray actor): runs the conversation jobs of any
    number of runs in threads, each run against its own copy of its tree, and kills a
    run's targets when that run is interrupted or finishes.

    It outlives the run that started it, so the next run on the cluster finds it warm
    (a Ray worker process takes seconds to start); after ``IDLE_EXIT`` seconds with no
    run it exits, and the next run starts a new one.
    """

    def __init__(self) -> None:
        self.node = _node_id()
        self.runs: dict[str, tuple[_Workspace, Context]] = {}
        self.inflight: dict[str, int] = {}
        self.lock = threading.Lock()
        self.idle_since = time.monotonic()
        threading.Thread(target=self._exit_when_idle, daemon=True).start()

    def _exit_when_idle(self) -> None:
        while True:
            time.sleep(min(IDLE_EXIT / 4, 15.0))
            with self.lock:
                if not self.runs and time.monotonic() - self.idle_since > IDLE_EXIT:
                    os._exit(0)  # Ray frees the name; the next run starts a new host

    def load(self, run: str, archive: bytes, tree_sha: str, shared: RunShared) -> str:
        """Take run ``run``'s tree (from the node's cache when it is there) and plan."""
        from gitevals.run.targets import ProcessRegistry

        space = _Workspace(archive, tree_sha)
        ctx = Context(str(space.tree), ProcessRegistry(), threading.Event(), shared, self.node)
        with self.lock:
            self.runs[run] = (space, ctx)
        return self.node

    def _context(self, run: str) -> Context | None:
        with self.lock:
            found = self.runs.get(run)
        return found[1] if found else None

    def run(self, run: str, job: Job[R]) -> tuple[R, str]:
        ctx = self._context(run)
        if ctx is None:
            raise RuntimeError(f"run {run} is not loaded on this host")
        with self.lock:
            self.inflight[run] = self.inflight.get(run, 0) + 1
        try:
            return job(ctx), self.node
        finally:
            with self.lock:
                self.inflight[run] -= 1

    def interrupt(self, run: str) -> None:
        ctx = self._context(run)
        if ctx is not None:
            ctx.stop.set()
            ctx.registry.kill_all()

    def finish(self, run: str) -> None:
        """Kill what is left of run ``run`` (targets, grader workers) and remove its copy."""
        from gitevals.run.runner import Execution

        self.interrupt(run)
        with self.lock:
            found = self.runs.pop(run, None)
            self.inflight.pop(run, None)
            self.idle_since = time.monotonic()
        if found is None:
            return
        space, ctx = found
        execution = ctx.state.get("execution")
        if isinstance(execution, Execution):
            execution.graders.close()
        ctx.registry.close()
        space.close()

    def active(self) -> dict[str, int]:
        """The runs loaded here, each with its conversations in flight: empty once every
        run that used this host has ended."""
        with self.lock:
            return {run: self.inflight.get(run, 0) for run in self.runs}


def run_sized_job(job: Job[R], archive: bytes, tree_sha: str,
                  shared: RunShared) -> tuple[R, str]:
    """A job with resource hints, as a plain Ray task on whichever node has them."""
    from gitevals.run.targets import ProcessRegistry

    space = _Workspace(archive, tree_sha)
    ctx = Context(str(space.tree), ProcessRegistry(), threading.Event(), shared, _node_id())
    try:
        return job(ctx), ctx.node
    finally:
        ctx.registry.kill_all()
        ctx.registry.close()
        space.close()

