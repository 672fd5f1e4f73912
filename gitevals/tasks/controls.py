"""A task's validity controls: does its verifier tell doing nothing from doing the work?

Two controls, after Harbor's oracle agent and the Agentic Benchmark Checklist:

- **do-nothing**: the verifier runs on the untouched workspace (a fresh copy of
  ``environment/``). It must *not* satisfy the task: a verifier that passes an agent
  which did nothing measures nothing.
- **oracle**: ``solution/solve.sh`` runs in the sandbox (the workspace at ``workdir``,
  the task's ``solution/`` read-only at ``/solution``, as Harbor places it), then the
  verifier runs on what it left. It *must* satisfy the task: a task its own reference
  solution cannot pass is unsolvable or its verifier is wrong.

A reward that cannot be read fails the control (the verifier cannot score that
workspace either). A task without ``solution/solve.sh`` has no oracle control (lint's
GE913 warns); its do-nothing control still runs. ``Controls.valid`` is False when a
control that ran failed: a run that checked it (``run --task-controls``) marks the task
**broken**, never pass or fail.

The judging (``do_nothing``, ``oracle``) is pure; ``run_controls`` is the IO, always in
the bubblewrap sandbox (the solution is code from the task: as hostile as a verifier).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.tasks import verifier as rewards
from gitevals.tasks.calls import copy_within, verifier_call
from gitevals.tasks.confine import TestsTooLarge, seal_tests
from gitevals.tasks.limits import limited
from gitevals.tasks.sandbox import (
    SOLUTION,
    TESTS_BYTES,
    TESTS_FILES,
    Call,
    Mounts,
    Outcome,
    prepare,
    workdir_problem,
)

if TYPE_CHECKING:
    from gitevals.jsontypes import JSONObject
    from gitevals.tasks.confine import Sealed
    from gitevals.tasks.definition import Task

#: The oracle's script, in the task and as the sandbox runs it.
SOLVE_FILE = "solution/solve.sh"
SOLVE_ARGV = ("bash", f"{SOLUTION}/solve.sh")
#: Seconds ``solve.sh`` may take when ``[agent] timeout_sec`` is absent (the agent's budget:
#: the oracle stands in for the agent).
DEFAULT_SOLVE_TIMEOUT = 600.0
#: Verifier calls per control: a grading failure is retried once, as in a run.
ATTEMPTS = 2


@dataclass(frozen=True)
class Control:
    """One control's outcome: whether it ``holds``, the deciding reward (None: none
    could be read), every reward, and one line saying why."""

    name: str                           # "do_nothing" | "oracle"
    holds: bool
    reward: float | None
    rewards: tuple[tuple[str, float], ...]
    why: str
    solve_exit: int | None = None       # the oracle's solve.sh exit (None: killed, or none)

    def as_dict(self) -> JSONObject:
        out: JSONObject = {"holds": self.holds, "reward": self.reward,
                           "rewards": dict(self.rewards), "why": self.why}
        if self.name == "oracle":
            out["solve_exit"] = self.solve_exit
        return out


@dataclass(frozen=True)
class Controls:
    """Both controls of a task; ``oracle`` None when the task has no ``solve.sh``."""

    do_nothing: Control
    oracle: Control | None

    @property
    def valid(self) -> bool:
        return self.do_nothing.holds and (self.oracle is None or self.oracle.holds)

    def reason(self) -> str:
        """Why the task is broken, in one line ("" when it is valid)."""
        failed = [c for c in (self.do_nothing, self.oracle) if c is not None and not c.holds]
        return "; ".join(f"{_label(c.name)} control failed: {c.why}" for c in failed)

    def as_dict(self) -> JSONObject:
        return {"valid": self.valid, "do_nothing": self.do_nothing.as_dict(),
                "oracle": None if self.oracle is None else self.oracle.as_dict()}


def _label(name: str) -> str:
    return "do-nothing" if name == "do_nothing" else name


# -- judging (pure) --------------------------------------------------------------------


def do_nothing(found: rewards.Rewards, problem: str | None, threshold: float) -> Control:
    """The do-nothing control from the verifier's rewards on the untouched workspace."""
    reward = rewards.deciding(found)
    kept = tuple(sorted(found.items()))
    if problem is not None or reward is None:
        return Control("do_nothing", False, None, kept,
                       f"the verifier gives no reward on the untouched workspace ({problem})")
    if reward >= threshold:
        return Control("do_nothing", False, reward, kept,
                       f"the verifier passes the untouched workspace (reward {reward:g} >= "
                       f"pass_threshold {threshold:g}): an agent that does nothing passes")
    return Control("do_nothing", True, reward, kept,
                   f"reward {reward:g} < pass_threshold {threshold:g} on the untouched "
                   "workspace")


def oracle(found: rewards.Rewards, problem: str | None, threshold: float,
           solve: Outcome) -> Control:
    """The oracle control from ``solve.sh``'s outcome and the verifier's rewards after it."""
    reward = rewards.deciding(found)
    kept = tuple(sorted(found.items()))
    ran = ("solve.sh passed its timeout" if solve.timed_out
           else "solve.sh did not run" if solve.exit_code is None
           else f"solve.sh exited {solve.exit_code}")
    if problem is not None or reward is None:
        return Control("oracle", False, None, kept,
                       f"the verifier gives no reward after {SOLVE_FILE} ({ran}; {problem})",
                       solve.exit_code)
    if reward < threshold:
        return Control("oracle", False, reward, kept,
                       f"the reference solution does not pass (reward {reward:g} < "
                       f"pass_threshold {threshold:g} after {SOLVE_FILE}, {ran})",
                       solve.exit_code)
    return Control("oracle", True, reward, kept,
                   f"reward {reward:g} >= pass_threshold {threshold:g} after {SOLVE_FILE} "
                   f"({ran})", solve.exit_code)


# -- running (IO) ----------------------------------------------------------------------


def has_solution(source: Path) -> bool:
    """Whether the task directory on disk at ``source`` holds a regular ``solve.sh``."""
    path = source / SOLVE_FILE
    return path.is_file() and not path.is_symlink()


def run_controls(task: Task, source: Path, bwrap: str, root: str | None = None) -> Controls:
    """Both controls of ``task``, whose files are on disk at ``source``, under ``bwrap``
    (``root``: its image, unpacked, as the sandbox's system: ``gitevals.tasks.image``)."""
    bad = workdir_problem(task.environment.workdir)
    if bad is not None:
        broken = Control("do_nothing", False, None, (), f"cannot run the verifier: {bad}")
        return Controls(broken, None)
    threshold = task.pass_threshold
    found, problem = _attempt(task, source, bwrap, solve=False, root=root)[:2]
    nothing = do_nothing(found, problem, threshold)
    if not has_solution(source):
        return Controls(nothing, None)
    found, problem, outcome = _attempt(task, source, bwrap, solve=True, root=root)
    assert outcome is not None
    return Controls(nothing, oracle(found, problem, threshold, outcome))


def _attempt(task: Task, source: Path, bwrap: str, solve: bool, root: str | None = None
             ) -> tuple[rewards.Rewards, str | None, Outcome | None]:
    """A fresh workspace; ``solve.sh`` in it when ``solve``; then the verifier: its
    rewards, why there are none, and the solution's outcome."""
    base = Path(tempfile.mkdtemp(prefix="gitevals-check-"))
    # a verifier started as another user (root runs it as nobody) resolves the
    # workspace's path: let it through, not list
    os.chmod(base, 0o711)
    sealed: list[Sealed] = []
    try:
        ws = base / "workspace"
        copy_within(source / "environment", ws, frozenset(("Dockerfile",)))
        sealed.append(_seal(source / "tests", "tests"))
        solved = None
        if solve:
            sealed.append(_seal(source / "solution", "solution"))
            env, budget = task.environment, task.agent_timeout_sec or DEFAULT_SOLVE_TIMEOUT
            call = Call(limited(SOLVE_ARGV, env.cpus, env.memory_mb, budget), env.workdir, (),
                        budget, env.allow_internet, mount=SOLUTION, root=root)
            with prepare(call, Mounts(str(ws), "", ""), bwrap, sealed[-1]) as pending:
                solved = pending.run()
        found, problem = _verify(task, ws, bwrap, sealed[0], root)
        return found, problem, solved
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return {}, f"cannot set up the control: {why}", Outcome(None, "", False, 0)
    finally:
        for s in sealed:
            s.close()
        shutil.rmtree(base, ignore_errors=True)


def _seal(src: Path, what: str) -> Sealed:
    try:
        return seal_tests(str(src), TESTS_BYTES, TESTS_FILES)
    except TestsTooLarge as exc:
        raise ValueError(f"{what}/ holds {exc}, over what the sandbox copies in") from None


def _verify(task: Task, ws: Path, bwrap: str, tests: Sealed, root: str | None = None
            ) -> tuple[rewards.Rewards, str | None]:
    """The verifier on ``ws``, retried once when its reward cannot be read."""
    call = verifier_call(task, root)
    found: rewards.Rewards = {}
    problem: str | None = None
    for _ in range(ATTEMPTS):
        with prepare(call, Mounts(str(ws), "", ""), bwrap, tests) as pending:
            outcome = pending.run()
            if outcome.timed_out:
                found, problem = {}, f"the verifier passed its timeout of {call.timeout:g} s"
            elif pending.problem is not None and outcome.exit_code is None:
                found, problem = {}, pending.problem
            else:
                found, problem = rewards.pending_rewards(pending, task.verifier.reward_format)
        if problem is None:
            break
    return found, problem
