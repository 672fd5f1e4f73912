"""``gitevals plan [REV]``: the trials each scenario needs for ``diff`` to see a drop."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from gitevals.commands._args import level, points, rate

if TYPE_CHECKING:
    from gitevals.run.artifact import Run
    from gitevals.run.runner import Plan

NAME = "plan"
HELP = "the trials each scenario needs for diff to detect a drop, from the pass rates at REV"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # the defaults of gitevals.diff.power and .stats, written here: every command's
    # arguments are built at each start, and importing gitevals.diff costs ~40 ms
    # (tests/test_power.py checks they agree)
    DEFAULT_DROP, DEFAULT_POWER, DEFAULT_PRIOR = 0.20, 0.8, 0.5
    DEFAULT_ALPHA, DEFAULT_TEST, TESTS = 0.05, "boschloo", ("boschloo", "fisher")

    parser.add_argument("rev", nargs="?", default="HEAD", metavar="REV",
                        help="the revision whose cases and run to plan from (default HEAD)")
    parser.add_argument("--drop", type=points, default=DEFAULT_DROP * 100, metavar="PTS",
                        help=f"the drop in pass rate to detect, in points "
                             f"(default {DEFAULT_DROP * 100:g})")
    parser.add_argument("--alpha", type=level, default=DEFAULT_ALPHA, metavar="A",
                        help=f"diff's level: p below it is beyond noise (default {DEFAULT_ALPHA})")
    parser.add_argument("--power", type=level, default=DEFAULT_POWER, metavar="P",
                        help=f"the chance of calling such a drop (default {DEFAULT_POWER})")
    parser.add_argument("--prior", type=rate, default=DEFAULT_PRIOR, metavar="RATE",
                        help=f"the pass rate assumed for a scenario with no run at REV "
                             f"(default {DEFAULT_PRIOR}: the rate that needs the most trials)")
    parser.add_argument("--test", choices=TESTS, default=DEFAULT_TEST,
                        help=f"diff's exact test (default {DEFAULT_TEST})")
    parser.add_argument("--format", choices=("text", "json"), default="text")


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


def render_text(table: list[Row], drop: float, goal: float, alpha: float, test: str) -> str:
    from gitevals.diff.power import MAX_PLANNED
    from gitevals.report.text import visible

    head = (f"trials a side for {test} at alpha {alpha:g} to call a {drop * 100:g}-point drop "
            f"with power {goal:g}")
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
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.run import runner
    from gitevals.run.store import run_of_commit

    repo = require_repo()
    tree = RevisionTree(repo, args.rev)
    the_plan = runner.plan(tree, [])
    found = run_of_commit(repo, repo.work_root, the_plan.settings.root, tree.commit or "")
    drop = args.drop / 100
    table = rows(the_plan, found.run if found else None, drop, args.power, args.prior,
                 args.test, args.alpha)
    if args.format == "json":
        doc = {"format": "gitevals-plan/1", "rev": args.rev, "commit": tree.commit,
               "run_id": found.run["run_id"] if found else None, "drop": drop,
               "alpha": args.alpha, "power": args.power, "prior": args.prior,
               "test": args.test, "scenarios": [asdict(r) for r in table]}
        sys.stdout.write(json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    else:
        if found is None:
            print(f"gitevals: no run of {args.rev}: every scenario uses the prior rate "
                  f"{args.prior:g} (--prior)", file=sys.stderr)
        sys.stdout.write(render_text(table, drop, args.power, args.alpha, args.test))
    return 0
