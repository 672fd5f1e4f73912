"""``gitevals plan [REV]``: the trials each scenario needs for ``diff`` to see a drop."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from gitevals.commands._args import (
    DEFAULT_TEST,
    add_control,
    add_format,
    add_test,
    level,
    points,
    rate,
)

if TYPE_CHECKING:
    from gitevals.run.artifact import Run
    from gitevals.run.runner import Plan

NAME = "plan"
HELP = "the trials each scenario needs for diff to detect a drop, from the pass rates at REV"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # the defaults of gitevals.diff.power and .stats, written here: every command's
    # arguments are built at each start, and importing gitevals.diff costs ~40 ms
    # (tests/diff/test_power.py checks they agree)
    DEFAULT_DROP, DEFAULT_POWER, DEFAULT_PRIOR = 0.20, 0.8, 0.5

    parser.add_argument("rev", nargs="?", default="HEAD", metavar="REV",
                        help="the revision whose cases and run to plan from (default HEAD)")
    parser.add_argument("--drop", type=points, default=DEFAULT_DROP * 100, metavar="PTS",
                        help=f"the drop in pass rate to detect, in points "
                             f"(default {DEFAULT_DROP * 100:g})")
    add_control(parser, "scenarios: a lone scenario's drop is tested at alpha / scenarios "
                        "under fdr and fwer")
    parser.add_argument("--suite-drop", type=points, default=5.0, metavar="PTS",
                        help="the suite-wide drop the suite test should see, in points "
                             "(default 5)")
    parser.add_argument("--power", type=level, default=DEFAULT_POWER, metavar="P",
                        help=f"the chance of calling such a drop (default {DEFAULT_POWER})")
    parser.add_argument("--prior", type=rate, default=DEFAULT_PRIOR, metavar="RATE",
                        help=f"the pass rate assumed for a scenario with no run at REV "
                             f"(default {DEFAULT_PRIOR}: the rate that needs the most trials)")
    add_test(parser, f"diff's exact test (default {DEFAULT_TEST})")
    add_format(parser, ("text", "json"))


@dataclass(frozen=True)
class Row:
    case: str
    scenario: str
    rate: float
    source: str            # "observed" (passes/trials at REV) | "prior"
    observed: str | None   # "passes/trials"
    trials: int            # what the case asks for now
    needed: int | None     # trials a side for the power asked; None: no such drop
    power_now: float | None
    status: str            # enough | underpowered | no_drop_possible | over_limit


def rows(the_plan: Plan, run: Run | None, drop: float, goal: float, prior: float,
         test: str, alpha: float) -> list[Row]:
    """One row per scenario of the plan, then one per task (its one scenario ``task``,
    keyed in a run as a case is): pure but for the exact sums."""
    from gitevals.diff.power import MAX_PLANNED, power, trials_needed
    from gitevals.run.sequential import bases_of
    from gitevals.run.tasks import SCENARIO

    tallies = bases_of(run) if run is not None else {}
    planned = [(case.name, s.id, the_plan.trials_of(s))
               for case in the_plan.cases for s in case.scenarios]
    planned += [(task.name, SCENARIO, the_plan.task_trials()) for task in the_plan.tasks]
    out = []
    for name, scenario, trials in planned:
        tally = tallies.get((name, scenario))
        if tally is not None and tally[1] > 0:
            rate, source, observed = tally[0] / tally[1], "observed", f"{tally[0]}/{tally[1]}"
        else:
            rate, source, observed = prior, "prior", None
        if rate - drop < -1e-12:
            out.append(Row(name, scenario, rate, source, observed, trials, None, None,
                           "no_drop_possible"))
            continue
        needed = trials_needed(rate, drop, goal, test, alpha)
        # over the limit, the trials asked for now are underpowered too: no exact sum
        now = (power(trials, rate, drop, test, alpha)
               if needed is not None and trials <= MAX_PLANNED else None)
        status = ("over_limit" if needed is None
                  else "enough" if now is not None and now >= goal else "underpowered")
        out.append(Row(name, scenario, rate, source, observed, trials, needed, now, status))
    return out


@dataclass(frozen=True)
class SuitePlan:
    """The suite as a whole: what its paired test sees at the trials asked for now, and
    the trials a side it needs to see ``drop`` suite-wide (trial noise alone)."""

    scenarios: int
    clusters: int
    level: float            # the suite test's (two-sided)
    scenario_level: float   # the level a lone scenario's drop faces under the control
    mde_pts_now: float | None
    drop_pts: float
    needed: int | None


def suite_plan(the_plan: Plan, table: list[Row], drop: float, goal: float, alpha: float,
               scenario_level: float) -> SuitePlan:
    """The suite rows of ``plan``: the same paired test ``diff`` makes (pure)."""
    from gitevals.stats import power as suite_power

    clusters = {c.name: c.cluster or c.name for c in the_plan.cases}
    groups = len({clusters.get(r.case, r.case) for r in table})
    trials = [max(1, r.trials) for r in table]
    # A rate seen as 0 or 1 is not a rate without noise: half a trial each way keeps the
    # prediction from claiming that no drop could hide (a "0.0-point" suite).
    rates = [(r.rate * n + 0.5) / (n + 1) for r, n in zip(table, trials, strict=True)]
    se = suite_power.predicted_se(rates, trials, trials)
    mde = suite_power.suite_mde(se, groups - 1, alpha, goal) if groups > 1 else None
    return SuitePlan(len(table), groups, alpha, scenario_level,
                     None if mde is None else round(100 * mde, 2), 100 * drop,
                     suite_power.suite_trials(rates, groups, drop, alpha, goal))


def suite_text(s: SuitePlan, goal: float) -> str:
    if s.clusters < 2:
        return (f"suite: {s.scenarios} scenarios in {s.clusters} cluster: no suite test "
                "(diff needs 2 clusters or more)")
    now = f"{s.mde_pts_now:.1f}" if s.mde_pts_now is not None else "-"
    need = f"{s.needed} trials a side" if s.needed is not None else "more than 100,000 trials"
    return (f"suite: {s.scenarios} scenarios in {s.clusters} clusters, paired test at "
            f"{s.level:g}: the trials now detect a {now}-point suite-wide drop with power "
            f"{goal:g}; a {s.drop_pts:g}-point one needs {need} (trial noise alone: "
            f"scenarios that move together need more)")


def render_text(table: list[Row], drop: float, goal: float, alpha: float, test: str) -> str:
    from gitevals.diff.power import MAX_PLANNED
    from gitevals.text import visible

    head = (f"trials a side for {test} at level {alpha:g} to call a {drop * 100:g}-point "
            f"drop in one scenario with power {goal:g}")
    cols = ["case", "scenario", "rate", "trials now", "power now", "needed", "status"]
    cells = [cols]
    for r in table:
        rate = f"{r.rate:.2f} ({r.observed})" if r.observed else f"{r.rate:.2f} (prior)"
        cells.append([visible(r.case), visible(r.scenario), rate, str(r.trials),
                      "-" if r.power_now is None else f"{r.power_now:.2f}",
                      (f"over {MAX_PLANNED:,}" if r.status == "over_limit" else
                       "-" if r.needed is None else str(r.needed)), r.status.replace("_", " ")])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    lines = [head] + ["  ".join(c[i].ljust(widths[i]) for i in range(len(cols))).rstrip()
                      for c in cells]
    short = sum(r.status in ("underpowered", "over_limit") for r in table)
    lines.append(f"{short} of {len(table)} scenario{'s' * (len(table) != 1)} underpowered")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from gitevals import api
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.run.store import run_of_commit

    repo = require_repo()
    tree = RevisionTree(repo, args.rev)
    the_plan = api.plan(tree, [])
    found = run_of_commit(repo, repo.work_root, the_plan.settings.results, tree.commit or "")
    drop = args.drop / 100
    alpha = the_plan.settings.alpha if args.alpha is None else args.alpha
    control = the_plan.settings.control if args.control is None else args.control
    count = sum(len(c.scenarios) for c in the_plan.cases) + len(the_plan.tasks)
    # diff's "regressed" family under fdr/fwer holds a lone drop to one-sided alpha / 2m:
    # the two-sided exact test at alpha / m (and the suite test has the other half)
    per = alpha / max(1, count) if control != "none" else alpha
    table = rows(the_plan, found.run if found else None, drop, args.power, args.prior,
                 args.test, per)
    suite = suite_plan(the_plan, table, args.suite_drop / 100, args.power, alpha, per)
    if args.format == "json":
        doc = {"format": "gitevals-plan/1", "rev": args.rev, "commit": tree.commit,
               "run_id": found.run["run_id"] if found else None, "drop": drop,
               "alpha": alpha, "control": control, "scenario_level": per,
               "power": args.power, "prior": args.prior,
               "test": args.test, "scenarios": [asdict(r) for r in table],
               "suite": asdict(suite)}
        sys.stdout.write(json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    else:
        if found is None:
            print(f"gitevals: no run of {args.rev}: every scenario uses the prior rate "
                  f"{args.prior:g} (--prior)", file=sys.stderr)
        sys.stdout.write(suite_text(suite, args.power) + "\n")
        sys.stdout.write(render_text(table, drop, args.power, per, args.test))
    return 0
