"""Task directories in a run: which ones a run takes, and one trial's conversation.

A trial of a task is one conversation with the configured target (pinned as for
cases) in a fresh scratch workspace, a copy of the task's ``environment/`` without
its Dockerfile. Iteration *i* sends one user turn -- the instruction, then a
revision message (``gitevals.tasks.verifier.revision_message``) -- with the fields
``task``, ``workspace`` (absolute path) and ``iteration`` added to the protocol
message; then the task's verifier runs in the sandbox (``gitevals.tasks.sandbox``)
and its reward decides: satisfied, or another iteration until ``max_iterations``.
A reward that cannot be read is tried once more, then it is the trial's error.

The outcome is a ``CaseRun`` marked ``task`` with one scenario (``task``), so
verdicts, ``show``, ``score`` and ``diff`` treat tasks and cases alike.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.run.artifact import (
    AssertionOutcome,
    CaseRun,
    ErrorRecord,
    Iteration,
    JSONObject,
    ScenarioRun,
    TaskInfo,
    TaskTrial,
    Trial,
    transcript,
)
from gitevals.tasks import verifier as rewards
from gitevals.tasks.calls import copy_within, verifier_call
from gitevals.tasks.limits import record, resource_problem
from gitevals.tasks.sandbox import (
    DEFAULT_TIMEOUT,
    Call,
    Mounts,
    Pending,
    agent_argv,
    hidden_program,
    prepare,
    sandbox_user,
    workdir_problem,
)
from gitevals.tasks.selection import Selected as Selected

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.run.targets import Conversation, ProcessRegistry, Turn
    from gitevals.settings import Settings
    from gitevals.tasks.confine import Sealed
    from gitevals.tasks.definition import Task
    from gitevals.tasks.image import Realized
    from gitevals.tasks.pids import Group

#: The one scenario id of a task's entry in a run.
SCENARIO = "task"
#: The target's budget for one iteration when ``[agent] timeout_sec`` is absent.
DEFAULT_AGENT_TIMEOUT = 600.0
#: Verifier calls per iteration: a grading failure is retried once.
ATTEMPTS = 2


# -- selection ----------------------------------------------------------------------


def select(tree: Tree, settings: Settings, cases: dict[str, str],
           names: Sequence[str]) -> Selected:
    """Split ``names`` between cases and tasks (none: every case and task) and load the
    selected tasks. A name that is neither, or both, is a usage error."""
    from gitevals.errors import UsageError
    from gitevals.tasks.load import load_tasks, skipped_note, task_dirs, tasks_dir

    dirs = task_dirs(tree, settings.root)
    for n in names:  # a directory under tasks/ that is no task: say why, not "unknown"
        path = f"{tasks_dir(settings.root)}/{n}"
        if (n not in cases and n not in dirs and n.strip(".") and "/" not in n
                and tree.exists(path)):
            raise UsageError(f"cannot run {n!r}: {skipped_note(tree, path)}")
    both = sorted(set(cases) & set(dirs) & (set(names) if names else set(cases)))
    if both:
        raise UsageError(f"{both[0]!r} names both case {cases[both[0]]} and task "
                         f"{dirs[both[0]]}: rename one (a run keys its results by name)")
    if names and not dirs:  # every name is a case's (runner.select_cases says unknown)
        return Selected(list(names), (), (), (), (), {})
    unknown = [n for n in names if n not in cases and n not in dirs]
    if unknown:
        raise UsageError(f"unknown case or task {unknown[0]!r}: available cases are "
                         f"{', '.join(cases) or 'none'}; tasks are {', '.join(dirs) or 'none'}")
    wanted = sorted({n for n in names if n in dirs})
    if names and not wanted:
        return Selected([n for n in names if n in cases], (), (), (), (), {})
    # all tasks when no name is given: the loader also notes directories it skipped
    tasks, findings, notes = load_tasks(tree, settings, names=wanted)
    errors = {f.path for f in findings if f.severity == "error"}
    ok = tuple(t for t in tasks if not any(p == t.path or p.startswith(t.path + "/")
                                          for p in errors))
    blocked = tuple(n for n in (wanted or dirs) if n not in {t.name for t in ok})
    files = {p: sha for t in ok for p, sha in t.files.items()}
    return Selected([n for n in names if n in cases] if names else None, ok, blocked,
                    tuple(findings), tuple(str(n) for n in notes), files)


def gaps(task: Task, image: bool = False) -> list[str]:
    """What a run does not realize of ``task``: its image (unless ``image``: it was
    built or pulled, ``gitevals.tasks.image``), and ``storage_mb`` (``cpus`` and
    ``memory_mb`` are applied: ``gitevals.tasks.limits``)."""
    storage = ["storage_mb"] if task.environment.storage_mb is not None else []
    return sorted({*(() if image else task.gaps()), *storage})


def gap_lines(tasks: Sequence[Task]) -> list[str]:
    """One line per task with unrealized parts, for the run to print once (an image is
    realized when a container engine is usable here)."""
    out = []
    engine = None
    if any(t.gaps() for t in tasks):
        from gitevals.tasks.image import find_engine

        engine = find_engine()
    for t in tasks:
        missing = gaps(t, image=engine is not None)
        if missing:
            out.append(f"gitevals: task {t.name!r}: not realized: {', '.join(missing)} "
                       "(the verifier runs on this machine's system, read-only, in the "
                       "sandbox; see docs/tasks.md)")
    return out


# -- one trial -----------------------------------------------------------------------


def sandbox_name(bwrap: str | None) -> str:
    """What a task trial records it ran in: ``bwrap``, or ``none`` with --no-sandbox."""
    return "none" if bwrap is None else "bwrap"


class TaskTrials:
    """Runs the trials of tasks in a materialized commit (``tree_dir``); thread-safe."""

    def __init__(self, tree_dir: str, argv: list[str], python_target: bool,
                 registry: ProcessRegistry, stop: threading.Event, bwrap: str | None,
                 env: dict[str, str] | None = None) -> None:
        self.tree_dir = tree_dir
        self.env = env  # the target's (``run --target-env``), as a case's conversation
        self.argv = argv
        self.python_target = python_target
        self.registry = registry
        self.stop = stop
        self.bwrap = bwrap
        self.scratch = Path(tree_dir).parent / "tasks"
        self._images: dict[str, Realized | str] = {}  # task -> its image, or why not
        #: How a task's cpus and memory_mb hold its verifier calls: a cgroup v2 of each
        #: call where this process has a delegated subtree (sandboxed), else rlimits.
        self.mechanism = "rlimit"
        if bwrap is not None:
            from gitevals.tasks.cgroup2 import MECHANISM, parent

            self.mechanism = MECHANISM if parent() is not None else "rlimit"
        self._image_lock = threading.Lock()
        if bwrap is not None and sandbox_user(bwrap) is not None:
            # the verifier's bubblewrap, started as nobody, resolves the workspace's path:
            # the run's directory lets it through (not list), the commit stays private
            os.chmod(Path(tree_dir).parent, 0o711)
            os.chmod(tree_dir, 0o700)

    @property
    def sandbox(self) -> str:
        return sandbox_name(self.bwrap)

    def image(self, task: Task) -> tuple[Realized | None, str | None]:
        """The task's image, realized once a run (built or pulled, unpacked: its
        sandbox's system), or why it could not be; ``(None, None)`` when the task names
        none, no container engine is usable here, or the run has no sandbox."""
        from gitevals.tasks.image import ImageError, find_engine, for_task

        if self.bwrap is None or not task.gaps() or find_engine() is None:
            return None, None
        with self._image_lock:  # one build of a task at a time; the others wait for it
            if task.name not in self._images:
                try:
                    made = for_task(task, Path(self.tree_dir) / task.path)
                    self._images[task.name] = made if made is not None else "no engine"
                except ImageError as exc:
                    self._images[task.name] = str(exc)
            got = self._images[task.name]
        return (None, got) if isinstance(got, str) else (got, None)

    def image_record(self, task: Task) -> JSONObject | None:
        """What the run recorded of the task's image: realized, or None."""
        with self._image_lock:
            got = self._images.get(task.name)
        return got.as_dict() if got is not None and not isinstance(got, str) else None

    def trial(self, task: Task, k: int) -> Trial | None:
        """Trial ``k`` of ``task``; None when the run was interrupted meanwhile."""
        from gitevals.run.targets import Conversation

        base = self.scratch / task.name / str(k)
        started = time.monotonic()
        iterations: list[Iteration] = []
        replies: list[JSONObject] = []
        realized, why = self.image(task)
        if why is not None:
            return self._trial(task, k, [], [], started, {
                "kind": "image_error", "message": f"the task's image could not be "
                f"realized: {why}"})
        try:
            places = self._prepare(task, base)
            places.root = realized.root if realized is not None else None
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return self._trial(task, k, [], [], started,
                               {"kind": "workspace_error", "message": f"cannot make the "
                                f"workspace: {why}"})
        ran: list[Pending] = []  # their sandboxes wind down while the target shuts down
        if task.agent_sandbox:  # a sandbox of its own, stricter than ``_target``'s
            refused = self._agent_refused(places.root is None)
            if refused is not None:
                places.close()
                return self._trial(task, k, [], [], started, refused)
            assert self.bwrap is not None
            argv = agent_argv(self.bwrap, self.argv, self.tree_dir, places.workspace,
                              task.environment.workdir, root=places.root)
            python_target, group, places.told = False, None, task.environment.workdir
        else:
            argv, python_target, group = self._target()
        try:
            with Conversation(argv, self.tree_dir, env=self.env, registry=self.registry,
                              python_target=python_target) as conv:
                error = self._iterate(task, k, conv, places, iterations, replies, ran)
        finally:
            for pending in ran:
                self._close(pending)
            places.close()
            if group is not None:
                group.remove()
        shutil.rmtree(base, ignore_errors=True)
        if self.stop.is_set():
            return None
        return self._trial(task, k, iterations, replies, started, error)

    def _agent_refused(self, host: bool) -> ErrorRecord | None:
        """Why ``[agent] sandbox = true`` cannot start this target, if it cannot: no
        bubblewrap, or (on the host's system) a program where the sandbox has empty
        directories of its own."""
        if self.bwrap is None:
            return {"kind": "target_start", "message": "[agent] sandbox = true runs the "
                    "target in bubblewrap: run without --no-sandbox"}
        hidden = hidden_program(self.argv, self.env) if host else None
        if hidden is None:
            return None
        return {"kind": "target_start", "message": f"[agent] sandbox = true: the target's "
                f"program {hidden[0]} is under {hidden[1]}, which the sandbox replaces "
                "with an empty one of its own: install it elsewhere (e.g. a virtualenv "
                "under your home), or set [agent] sandbox = false"}

    def _target(self) -> tuple[list[str], bool, Group | None]:
        """How this trial's target starts: under bubblewrap, in a pid namespace of its own
        (``sandbox.target_argv``; a python target then starts cold in it, not from the
        slot's warm worker, which lives outside), with a pids cgroup of its own as root
        where one can be made; with ``--no-sandbox`` as configured."""
        if self.bwrap is None:
            return self.argv, self.python_target, None
        from gitevals.tasks import pids
        from gitevals.tasks.sandbox import TARGET_PIDS, protected_paths, target_argv

        root = os.geteuid() == 0
        group = pids.make(TARGET_PIDS) if root else None
        argv = target_argv(self.bwrap, self.argv, root, protected_paths(),
                           pids_procs=group.procs if group is not None else None)
        return argv, False, group

    def _prepare(self, task: Task, base: Path) -> Places:
        """A fresh workspace (``environment/`` without its Dockerfile) and the verifier's
        tests, read before the trial's target starts: sealed in memory for a sandbox,
        else copied into a private directory of their own (``Places``)."""
        from gitevals.tasks.confine import TestsTooLarge, seal_tests
        from gitevals.tasks.sandbox import TESTS_BYTES, TESTS_FILES

        shutil.rmtree(base, ignore_errors=True)
        source = Path(self.tree_dir) / task.path
        ws = base / "workspace"
        copy_within(source / "environment", ws, frozenset(("Dockerfile",)))
        places = Places(str(ws.resolve()), os.open(base, os.O_PATH | os.O_DIRECTORY
                                                    | os.O_NOFOLLOW | os.O_CLOEXEC))
        try:
            places.check()  # the workspace as made: what each call must find again
            if self.bwrap is None:
                places.private = tempfile.mkdtemp(prefix="gitevals-verifier-")
                copy_within(source / "tests", Path(places.private) / "tests")
            else:
                try:
                    places.tests = seal_tests(str(source / "tests"), TESTS_BYTES, TESTS_FILES)
                except TestsTooLarge as exc:
                    raise ValueError(f"{task.path}/tests holds {exc}, over what the sandbox "
                                     "copies into each verifier call; make it smaller "
                                     "(docs/tasks.md)") from None
        except BaseException:
            places.close()
            raise
        return places

    def _iterate(self, task: Task, k: int, conv: Conversation, places: Places,
                 iterations: list[Iteration], replies: list[JSONObject],
                 ran: list[Pending]) -> ErrorRecord | None:
        """The iterations of one trial; the error that ended it, if any."""
        from gitevals.run.targets import TargetError

        text = task.instruction
        timeout = task.agent_timeout_sec or DEFAULT_AGENT_TIMEOUT
        call = verifier_call(task, places.root, cgroup=self.mechanism == "cgroup2")
        for i in range(task.max_iterations):
            if self.stop.is_set():
                return None
            msg: Turn = {"text": text, "turn": i, "case": task.name, "scenario": SCENARIO,
                   "trial": k, "task": task.name, "workspace": places.told,
                   "iteration": i}
            # the sandbox starts while the target works (gitevals.tasks.sandbox.WAITER)
            ahead = self._start(call, places)
            try:
                replies.append(conv.ask(msg, time.monotonic() + timeout))
            except TargetError as exc:
                return exc.as_dict()
            finally:
                if self.stop.is_set() or len(replies) <= i:
                    self._cancel(ahead)
            if self.stop.is_set():
                return None
            it = self._verify(task, call, i, text, places, ahead, ran)
            iterations.append(it)
            if it["error"] is not None:
                return it["error"]
            if it["passed"]:
                return None
            assert it["reward"] is not None
            text = rewards.revision_message(it["reward"], task.pass_threshold, i,
                                            task.max_iterations, it["verifier_tail"])
        return None

    def _start(self, call: Call, places: Places) -> Pending:
        """A verifier call, started and waiting: the workspace as the trial made it (by
        descriptor), fresh logs. What cannot be set up is the call's ``problem``."""
        try:
            ws = places.check()
        except OSError as exc:
            return Pending([], {}, "/", call.timeout, kind="workspace_error",
                           problem=f"the workspace {places.workspace} is no longer the "
                           f"directory the trial made: {places.what(exc)}; gitevals binds "
                           "only the workspace it made, never what the target put there")
        try:
            if self.bwrap is None:
                assert places.private is not None
                logs = tempfile.mkdtemp(prefix="logs-", dir=places.private)
                mounts = Mounts(places.workspace, str(Path(places.private) / "tests"), logs)
            else:
                mounts = Mounts(f"/proc/self/fd/{ws}", "", "")
            pending = prepare(call, mounts, self.bwrap, places.tests)
        except OSError as exc:
            pending = Pending([], {}, "/", call.timeout, problem=f"cannot set up the "
                              f"verifier's call: {exc.strerror or exc}")
        finally:
            os.close(ws)
        if pending.proc is not None:  # an interrupt kills it with the targets
            self.registry.add(pending.proc)
        return pending

    def _cancel(self, pending: Pending) -> None:
        pending.cancel()
        if pending.proc is not None:
            self.registry.discard(pending.proc)

    def _close(self, pending: Pending) -> None:
        pending.close()
        if pending.proc is not None:
            self.registry.discard(pending.proc)

    def _verify(self, task: Task, call: Call, i: int, text: str, places: Places,
                ahead: Pending, ran: list[Pending]) -> Iteration:
        """Run the verifier (twice when its reward cannot be read) on iteration ``i``;
        ``ahead`` is its first call, already started; each call made joins ``ran``."""
        started = time.monotonic()
        found: dict[str, float] = {}
        code, tail, attempt = None, "", 0
        bad = problem = workdir_problem(call.workdir)  # the definition: no call can help
        if bad is not None:
            self._cancel(ahead)
        while bad is None and attempt < ATTEMPTS:
            attempt += 1
            pending = ahead if attempt == 1 else self._start(call, places)
            ran.append(pending)
            if pending.problem is not None:  # it could not be set up: no retry helps
                return _refused(i, text, pending, started)
            out = pending.run()
            code, tail = out.exit_code, out.tail
            if out.timed_out:
                found, problem = {}, f"the verifier ran past its timeout of {call.timeout:g} s"
            else:
                found, problem = rewards.pending_rewards(pending, task.verifier.reward_format)
            pending.release()  # what the verifier left behind dies before the next turn
            if problem is None:
                break
        error: ErrorRecord | None = None
        if problem is not None:
            if self.bwrap is None and problem.startswith("the verifier wrote no "):
                name = rewards.REWARD_FILES.get(task.verifier.reward_format, "reward.txt")
                problem += (f"; with --no-sandbox there is no /logs/verifier: a verifier "
                            f"writes \"$GITEVALS_LOGS/{name}\" instead (docs/tasks.md)")
            error = {"kind": "reward_unreadable",
                     "message": f"{problem} (after {attempt} verifier run"
                                f"{'s' * (attempt != 1)}: a grading failure, not a verdict)"}
            if attempt == 0:
                error = {"kind": "verifier_error", "message": f"cannot run the verifier: {problem}"}
            hit = resource_problem(code, tail, task.environment.cpus,
                                   task.environment.memory_mb, self.mechanism)
            if attempt and hit is not None:
                error = {"kind": "resource_limit", "message": f"{hit}; no reward ({problem}): "
                         "not a verdict"}
        return {"iteration": i, "message": text, "rewards": found,
                "reward": rewards.deciding(found),
                "passed": error is None and rewards.satisfied(found, task.pass_threshold),
                "verifier_exit": code, "verifier_tail": tail, "attempts": attempt,
                "error": error, "duration_ms": int((time.monotonic() - started) * 1000)}

    def _trial(self, task: Task, k: int, iterations: list[Iteration],
               replies: list[JSONObject], started: float, error: ErrorRecord | None) -> Trial:
        ms = int((time.monotonic() - started) * 1000)
        record: TaskTrial = {"state": "error", "final_reward": None, "sandbox": self.sandbox,
                             "iterations": iterations}
        if task.environment.cpus is not None or task.environment.memory_mb is not None:
            record["limits"] = self.mechanism  # how cpus and memory_mb held this trial
        result: Trial = {"trial": k, "transcript": transcript(replies, ms), "error": error,
                         "graders": [], "assertions": [], "passed": False, "task": record}
        return judged(result, task.pass_threshold, task.max_iterations)


class Places:
    """Where one trial's verifier calls come from: the workspace (its host path, given to
    the target, and a descriptor of the directory holding it, so a swapped workspace is
    seen), the tests sealed for the sandbox, or (``--no-sandbox``) a private directory
    (``mkdtemp``, 0700) of the tests' copy and each call's fresh logs. Nothing of the
    tests or the logs is under a directory the target is told of."""

    def __init__(self, workspace: str, base: int) -> None:
        self.workspace = workspace
        self.told = workspace  # the workspace's path as the target sees it
        self.base = base
        self.made: tuple[int, int] | None = None
        self.tests: Sealed | None = None
        self.private: str | None = None
        self.root: str | None = None  # the task's image, unpacked: the sandbox's system

    def check(self) -> int:
        """A descriptor (``O_PATH``) of the workspace, opened without following a link
        and checked to be the directory the trial made; raises ``OSError``."""
        fd = os.open("workspace", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=self.base)
        st = os.fstat(fd)
        if self.made is None:
            self.made = (st.st_dev, st.st_ino)
        elif self.made != (st.st_dev, st.st_ino):
            os.close(fd)
            raise OSError(errno.ENOTDIR, "another directory is in its place")
        return fd

    def what(self, exc: OSError) -> str:
        """What is at the workspace's place now, in words (``check`` refused it)."""
        try:
            st = os.stat("workspace", dir_fd=self.base, follow_symlinks=False)
        except OSError:
            return "the target removed it"
        if stat.S_ISLNK(st.st_mode):
            return "the target replaced it with a symbolic link"
        if stat.S_ISDIR(st.st_mode):
            return "the target replaced it with another directory"
        return f"the target replaced it with something else ({exc.strerror or exc})"

    def close(self) -> None:
        os.close(self.base)
        if self.tests is not None:
            self.tests.close()
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)


def _refused(i: int, text: str, pending: Pending, started: float) -> Iteration:
    """The iteration of a verifier call that could not be set up: the trial's error."""
    error: ErrorRecord = {"kind": pending.kind, "message": pending.problem or ""}
    return {"iteration": i, "message": text, "rewards": {}, "reward": None, "passed": False,
            "verifier_exit": None, "verifier_tail": "", "attempts": 0, "error": error,
            "duration_ms": int((time.monotonic() - started) * 1000)}


# -- judging (pure) --------------------------------------------------------------------


def judged(result: Trial, threshold: float, budget: int) -> Trial:
    """``result`` (a task trial) with state, final reward, outcome and ``passed`` derived
    from its stored iterations under ``threshold`` and ``budget``."""
    record = result["task"]
    iterations: list[Iteration] = []
    for it in record["iterations"]:
        again: Iteration = {**it, "passed": it["error"] is None
                            and rewards.satisfied(it["rewards"], threshold)}
        iterations.append(again)
    state, final = rewards.judge(iterations, threshold, budget, result["error"] is not None)
    used = next((n for n, it in enumerate(iterations, 1) if it["passed"]), len(iterations))
    passed = state == rewards.SATISFIED
    error = result["error"]
    # an error no verifier had (the target crashed before, or between, its iterations)
    ended = error if error is not None and (
        not iterations or iterations[-1]["error"] != error) else None
    outcome: AssertionOutcome = {
        "index": 0, "kind": "reward", "passed": passed, "error": None, "score": final,
        "message": rewards.summary(state, final, threshold, used, ended)}
    task: TaskTrial = {**record, "state": state, "final_reward": final,
                       "iterations": iterations}
    out: Trial = {**result, "assertions": [outcome], "passed": passed, "task": task}
    return out


def rule(threshold: float, budget: int) -> JSONObject:
    """A task's one ``expect`` item: what its trials are judged by."""
    return {"reward": {"pass_threshold": threshold, "max_iterations": budget}}


def rule_of(expect: list[JSONObject]) -> tuple[float, int] | None:
    """``(pass_threshold, max_iterations)`` of a task scenario's ``expect``, or None."""
    arg = expect[0].get("reward") if len(expect) == 1 else None
    if not isinstance(arg, dict):
        return None
    threshold, budget = arg.get("pass_threshold"), arg.get("max_iterations")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        return None
    if isinstance(budget, bool) or not isinstance(budget, int):
        return None
    return float(threshold), budget


def rescore_task(case: CaseRun) -> CaseRun:
    """A task's entry re-judged from its stored rewards by its scenario's ``expect``."""
    from gitevals.run.scoring import verdict

    scenarios: list[ScenarioRun] = []
    for s in case["scenarios"]:
        got = rule_of(s["expect"])
        results = s["results"] if got is None else [judged(r, *got) if "task" in r else r
                                                    for r in s["results"]]
        scored: ScenarioRun = {**s, "results": results, "verdict": verdict(results)}
        scenarios.append(scored)
    out: CaseRun = {**case, "scenarios": scenarios}
    return out


def with_rules(case: CaseRun, task: Task | None) -> CaseRun:
    """A task's entry judged by ``task``'s threshold (another revision's definition):
    ``rules`` says applied, or stored when that revision has no such task."""
    scenarios: list[ScenarioRun] = []
    for s in case["scenarios"]:
        if task is None:
            kept: ScenarioRun = {**s, "rules": "stored"}
            scenarios.append(kept)
        else:
            new = [rule(task.pass_threshold, task.max_iterations)]
            applied: ScenarioRun = {**s, "expect": new, "rules": "applied"}
            scenarios.append(applied)
    out: CaseRun = {**case, "scenarios": scenarios}
    return out


def added(task: Task) -> CaseRun:
    """The entry of a task only the rules' revision has: not run (``score --rules``)."""
    entry = case_run(task, 1, [], "none")
    scenarios: list[ScenarioRun] = [{**s, "rules": "added"} for s in entry["scenarios"]]
    out: CaseRun = {**entry, "scenarios": scenarios}
    return out


def broken_trials(task: Task, trials: int, reason: str, sandbox: str) -> list[Trial]:
    """The trials of a task whose validity controls failed: none ran; each is the error
    ``task_broken`` (so the task's verdict is broken, never pass or fail, also when a
    run is re-scored)."""
    error: ErrorRecord = {"kind": "task_broken", "message": f"not run: {reason} "
                          "(`gitevals task check`; docs/tasks.md)"}
    out = []
    for k in range(trials):
        record: TaskTrial = {"state": "error", "final_reward": None, "sandbox": sandbox,
                             "iterations": []}
        result: Trial = {"trial": k, "transcript": transcript([], 0), "error": error,
                         "graders": [], "assertions": [], "passed": False, "task": record}
        out.append(judged(result, task.pass_threshold, task.max_iterations))
    return out


def case_run(task: Task, trials: int, results: list[Trial], sandbox: str,
             controls: JSONObject | None = None, image: JSONObject | None = None,
             mechanism: str = "rlimit") -> CaseRun:
    """The run's entry for ``task``: one scenario, its trials in order; ``controls`` when
    the run checked them (``run --task-controls``); ``image`` when its image was
    realized (``TaskTrials.image_record``)."""
    from gitevals.run.scoring import verdict

    info: TaskInfo = {
        "instruction_file": task.instruction_file, "max_iterations": task.max_iterations,
        "pass_threshold": task.pass_threshold, "verifier": list(task.verifier.argv),
        "verifier_default": task.verifier.default,
        "reward_format": task.verifier.reward_format, "workdir": task.environment.workdir,
        "allow_internet": task.environment.allow_internet, "sandbox": sandbox,
        "gaps": gaps(task, image=image is not None)}
    if image is not None:
        info["image"] = image
    if task.agent_sandbox:
        info["agent_sandbox"] = sandbox == "bwrap"
    if controls is not None:
        info["controls"] = controls
    env = task.environment
    applied = record(env.cpus, env.memory_mb, task.verifier.timeout_sec or DEFAULT_TIMEOUT,
                     mechanism)
    if applied is not None:
        info["limits"] = applied
    scenario: ScenarioRun = {
        "id": SCENARIO, "user": [task.instruction],
        "expect": [rule(task.pass_threshold, task.max_iterations)], "trials": trials,
        "timeout": task.agent_timeout_sec or DEFAULT_AGENT_TIMEOUT, "results": results,
        "verdict": verdict(results)}
    toml = f"{task.path}/task.toml"
    return {"name": task.name, "path": task.path, "blob": task.files.get(toml),
            "scenarios": [scenario], "task": info}
