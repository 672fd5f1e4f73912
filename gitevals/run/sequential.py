"""``gitevals run --against REV``: trials in rounds, each scenario stopped once its call is settled.

The base of every scenario is its tally in the run pinned to REV (``passes`` of
``trials``). A scenario with a base runs in rounds on the schedule of its
``gitevals.stats.sequential.Design``; after each round the design calls it
"regressed", "ruled out" (the drop that matters is excluded) or "continue". A scenario
without a base (new since REV) runs its planned trials in the first round, as any run.

``Rounds`` is the pure part (what each scenario runs next, what a look decided);
``run_rounds`` drives an ``Execution`` with it; ``annotate`` writes the design, every
look and why each scenario stopped into the artifact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitevals.stats.sequential import Design, decide

if TYPE_CHECKING:
    from collections.abc import Iterator

    from gitevals.model import Case, Scenario
    from gitevals.run.artifact import Run, SequentialLook, SequentialRecord
    from gitevals.run.runner import Execution, Progress

Key = tuple[str, str]  # (case name, scenario id)


@dataclass(frozen=True)
class Settings:
    """What ``run --against`` was given."""

    against: str            # the base commit
    base_run: str           # the run_id of its run the bases come from
    max_trials: int | None  # B's trials at most (None: each scenario's own trials)
    looks: int
    alpha: float
    drop: float


@dataclass
class _Scenario:
    design: Design | None     # None: no base, runs its planned trials at once
    base: tuple[int, int] | None
    planned: int
    limit: int = 0            # trials this scenario may run so far
    looks: list[SequentialLook] = field(default_factory=list)
    stopped: str | None = None


class Rounds:
    """Which trials each scenario runs, round by round, and what each look decided (pure)."""

    def __init__(self, settings: Settings, planned: dict[Key, int],
                 bases: dict[Key, tuple[int, int]]) -> None:
        self.settings = settings
        self.scenarios: dict[Key, _Scenario] = {}
        for key, n in planned.items():
            base = bases.get(key)
            top = settings.max_trials or n
            design = (Design(base_trials=base[1], max_trials=top, looks=settings.looks,
                             alpha=settings.alpha, drop=settings.drop)
                      if base is not None and base[1] > 0 else None)
            self.scenarios[key] = _Scenario(design, base, top if design else n)
        self.round = -1

    def advance(self) -> bool:
        """Open the next round: raise the limit of every scenario still running. False
        when none is."""
        self.round += 1
        more = False
        for s in self.scenarios.values():
            if s.stopped is not None:
                continue
            if s.design is None:
                if self.round == 0:
                    s.limit, more = s.planned, True
                else:
                    s.stopped = "no_base"
                continue
            schedule = s.design.schedule()
            if self.round < len(schedule):
                s.limit, more = schedule[self.round], True
        return more

    def most(self) -> int:
        """The most trials the scenarios may run, every one to its last look (a progress
        total: the run usually stops short of it)."""
        return sum(s.planned for s in self.scenarios.values())

    def limit(self, key: Key) -> int:
        s = self.scenarios.get(key)
        return s.limit if s is not None else 0

    def look(self, key: Key, passed: list[bool]) -> None:
        """Record the look at the end of this round for ``key`` (its trials' outcomes)."""
        s = self.scenarios[key]
        if s.design is None or s.stopped is not None or s.base is None:
            return
        passes, trials = sum(passed), len(passed)
        index = len(s.looks)
        call = (decide(s.design, s.base[0], index, passes) if trials == s.limit
                else "incomplete")
        s.looks.append({"trials": trials, "passes": passes, "call": call})
        if call in ("regressed", "ruled_out"):
            s.stopped = call
        elif call == "no_regression":
            s.stopped = "max_trials"
        elif call == "incomplete":
            s.stopped = "incomplete"

    def record(self, key: Key) -> SequentialRecord | None:
        s = self.scenarios.get(key)
        if s is None:
            return None
        out: SequentialRecord = {"stopped": s.stopped or "interrupted", "looks": s.looks}
        if s.base is not None:
            out["base"] = {"passes": s.base[0], "trials": s.base[1]}
        if s.design is not None:
            out["design"] = dict(s.design.as_dict())
        return out


def bases_of(run: Run) -> dict[Key, tuple[int, int]]:
    """``(case, scenario) -> (passes, trials)`` of a base run's verdicts."""
    from gitevals.run.artifact import scenarios

    return {(case["name"], s["id"]): (s["verdict"]["passes"], s["verdict"]["trials"])
            for case, s in scenarios(run)}


def run_rounds(execution: Execution, rounds: Rounds, progress: Progress | None = None,
               advisory: frozenset[str] = frozenset()) -> None:
    """Run ``execution``'s plan round by round as ``rounds`` allows; stops when every
    scenario is settled, or at once when interrupted (what finished is kept). A look
    counts trials as the run's verdicts will: the failures of the ``advisory`` judge
    graders (not calibrated) do not fail a trial."""
    cases = execution.plan.cases

    def wants(case: Case, s: Scenario, trial: int) -> bool:
        return trial < rounds.limit((case.name, s.id))

    execution.wanted = wants
    done = [0] * len(cases)  # conversations of each case run so far
    try:
        while rounds.advance() and not execution.stop.is_set():
            tops = [max((rounds.limit((c.name, s.id)) for s in c.scenarios), default=0)
                    for c in cases]
            # task trials (no base tallies to look at) run once, in the first round
            execution.run(progress, work=_round_work(done, tops), last=False,
                          tasks=rounds.round == 0)
            done = [max(d, t) for d, t in zip(done, tops, strict=True)]
            if execution.stop.is_set() or not _look(execution, rounds, advisory):
                break
    finally:
        execution.graders.close()


def _look(execution: Execution, rounds: Rounds, advisory: frozenset[str]) -> bool:
    """Every scenario's look at the end of a round; False when interrupted meanwhile.

    The first look computes the design's exact bounds (seconds to minutes with many
    trials) in this thread: ``execution.looking`` lets an interrupt raise
    ``KeyboardInterrupt`` here (``api.run_commit``'s handler), so SIGINT or SIGTERM stops
    the run at once, and the trials that finished are kept."""
    from gitevals.run.scoring import expect_of, rescore_trials

    try:
        execution.looking = True
        for ci, case in enumerate(execution.plan.cases):
            for si, s in enumerate(case.scenarios):
                got = execution.results.get((ci, si), {})
                trials = [got[t] for t in sorted(got)]
                if advisory:
                    trials = rescore_trials(expect_of(s), trials, advisory)
                rounds.look((case.name, s.id), [t["passed"] for t in trials])
    except KeyboardInterrupt:
        execution.looking = False
        execution.interrupt()
        return False
    finally:
        execution.looking = False
    return True


def _round_work(done: list[int], tops: list[int]) -> Iterator[tuple[int, int]]:
    """``(case index, trial)`` of one round, trial-major: the trials from ``done[ci]``
    up to ``tops[ci]``, drawn as the run needs them (never a list in memory)."""
    for t in range(min(done, default=0), max(tops, default=0)):
        for ci, (start, top) in enumerate(zip(done, tops, strict=True)):
            if start <= t < top:
                yield ci, t


def annotate(run: Run, rounds: Rounds) -> Run:
    """``run`` with the design of ``rounds``, its looks and every scenario's stop."""
    s = rounds.settings
    run["sequential"] = {"against": s.against, "base_run": s.base_run,
                         "max_trials": s.max_trials, "looks": s.looks, "alpha": s.alpha,
                         "drop": s.drop}
    for case in run["cases"]:
        for scenario in case["scenarios"]:
            record = rounds.record((case["name"], scenario["id"]))
            if record is not None:
                scenario["sequential"] = record
                if record["stopped"] not in ("interrupted", "incomplete"):
                    scenario["trials"] = max(1, len(scenario["results"]))
    return run
