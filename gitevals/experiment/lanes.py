"""Lanes of an experiment: ``NAME=REV[,env:KEY=VALUE...]`` parsed, resolved and checked.

A lane is a revision of the harness, optionally with variables for the target (the
usual way a harness picks its model). Every lane's revision is resolved once, before
anything runs, so a branch that moves during the experiment changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

from gitevals.errors import UsageError
from gitevals.model import Scenario
from gitevals.run.runner import Plan
from gitevals.run.targetenv import parse

#: Lane names become file names (``results/experiments/<id>/<lane>.json``).
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: Conversations an experiment may make unless ``--max-samples`` raises it.
MAX_SAMPLES = 1000


@dataclass(frozen=True)
class LaneSpec:
    """A lane as given on the command line."""

    name: str
    rev: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Lane:
    """A lane with its revision resolved to a commit (and that commit's tree)."""

    name: str
    rev: str
    commit: str
    tree: str
    env: dict[str, str] = field(default_factory=dict)


def parse_lane(text: str) -> LaneSpec:
    """``base=v1.2,env:MODEL=base-7b`` -> ``LaneSpec("base", "v1.2", {"MODEL": ...})``."""
    head, *envs = text.split(",env:")
    name, sep, rev = head.partition("=")
    if not sep or not rev:
        raise UsageError(f"--lane {text!r}: expected NAME=REV[,env:KEY=VALUE...], e.g. "
                         "--lane base=v1.2,env:MODEL=base-7b")
    if "," in rev and "=" in rev.partition(",")[2]:
        extra = rev.partition(",")[2]
        raise UsageError(f"--lane {text!r}: {extra!r} is not an env: setting; write "
                         f"NAME=REV[,env:KEY=VALUE...], e.g. --lane {name}="
                         f"{rev.partition(',')[0]},env:{extra}")
    if not _LABEL.fullmatch(name):
        raise UsageError(f"--lane {text!r}: the name {name!r} must be 1-64 letters, digits, "
                         "'.', '_' or '-', starting with a letter or digit")
    env: dict[str, str] = {}
    for item in envs:
        key, value = parse(item, f"--lane {name} env:")
        if key in env:
            raise UsageError(f"--lane {name}: env:{key} is given twice: give it once")
        env[key] = value
    return LaneSpec(name, rev, dict(sorted(env.items())))


def resolve(specs: Sequence[LaneSpec], to_commit: Callable[[str], tuple[str, str]]
            ) -> list[Lane]:
    """Each lane with ``to_commit(rev) -> (commit, tree)``; names must be distinct, and so
    must lanes (the same commit with the same env twice measures nothing new)."""
    if not specs:
        raise UsageError("no lanes: give at least one --lane NAME=REV (two or more to compare)")
    seen: dict[str, LaneSpec] = {}
    for s in specs:
        if s.name in seen:
            raise UsageError(f"two lanes are named {s.name!r}: give each lane its own name")
        seen[s.name] = s
    lanes = [Lane(s.name, s.rev, *to_commit(s.rev), s.env) for s in specs]
    for i, a in enumerate(lanes):
        for b in lanes[:i]:
            if (a.commit, a.env) == (b.commit, b.env):
                raise UsageError(
                    f"lanes {b.name!r} and {a.name!r} are the same lane: both run "
                    f"{a.commit[:12]} with {_env_text(a.env)}; give one another revision or "
                    "other env: values")
    return lanes


def _env_text(env: dict[str, str]) -> str:
    return "no env" if not env else "env " + ", ".join(sorted(env))


@dataclass(frozen=True)
class RepeatedPlan(Plan):
    """A run's ``Plan`` with every scenario's trials made ``repeats`` times over: one
    lane's whole share of an experiment is one run of the ordinary runner.

    Conversation ``t`` of a case is repeat ``t % repeats`` of its conversation
    ``t // repeats``, so a scenario that sits out the later conversations of a case sits
    them out in every repeat.
    """

    repeats: int = 1

    def trials_of(self, scenario: Scenario) -> int:
        return super().trials_of(scenario) * self.repeats

    def task_trials(self) -> int:
        return super().task_trials() * self.repeats


def repeated(the_plan: Plan, repeats: int) -> RepeatedPlan:
    """``the_plan`` made ``repeats`` times over."""
    return RepeatedPlan(**{f.name: getattr(the_plan, f.name) for f in fields(the_plan)},
                        repeats=repeats)


def check_matrix(the_plan: Plan, lanes: int, repeats: int, limit: int) -> int:
    """The conversations the experiment makes; over ``limit`` is refused, saying the product."""
    per_repeat = (sum(the_plan.conversations(c) for c in the_plan.cases)
                  + len(the_plan.tasks) * the_plan.task_trials())  # a task trial is one
    total = per_repeat * lanes * repeats
    if total > limit:
        cases, tasks = len(the_plan.cases), len(the_plan.tasks)
        what = " and ".join(
            [f"{cases} case{'s' * (cases != 1)}"] * bool(cases or not tasks)
            + [f"{tasks} task{'s' * (tasks != 1)}"] * bool(tasks))
        if per_repeat != cases + tasks:
            what += f" ({per_repeat} conversations with their trials)"
        raise UsageError(f"this experiment would make {what} × {lanes} lane"
                         f"{'s' * (lanes != 1)} × {repeats} repeat{'s' * (repeats != 1)} = "
                         f"{total:,} conversations, over the bound of {limit:,}; name fewer "
                         "cases, lanes or repeats, or raise the bound with --max-samples N")
    return total


def valid_name(name: object) -> bool:
    """True when ``name`` can label a lane (and name its artifact file)."""
    return isinstance(name, str) and _LABEL.fullmatch(name) is not None
