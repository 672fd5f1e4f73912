"""The eval history of a line of commits: runs per commit -> one series per scenario (pure).

``gitevals report`` plots it and ``gitevals log`` prints it. The command gathers, oldest
first, each commit that has a run along first-parent history with its verdict tallies
(``diff.verdicts.tallies``); ``build`` turns them into points: per scenario and commit,
passes of trials, the pass rate's 95 % interval (Wilson's score interval) and the
change since the previous commit with a run, judged as ``gitevals diff`` judges it: the
same exact test (``diff.verdicts.compare_tallies``) under the same multiple-comparison
control, with the same paired suite test (``diff.suite.assess``), so a regression marked
here is one ``diff`` of the two commits would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import sqrt

from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST
from gitevals.diff.suite import SuiteResult, assess
from gitevals.diff.verdicts import Tally, compare_tallies
from gitevals.stats.multiplicity import DEFAULT_CONTROL

#: The 0.975 quantile of the standard normal: a two-sided 95 % interval.
Z95 = 1.959963984540054

Key = tuple[str, str]  # (case, scenario)


@dataclass(frozen=True)
class Commit:
    """A commit of the history: its subject, the tags on it, and the run read for it
    (``run_id``), or why its run could not be read (``problem``)."""

    sha: str
    subject: str
    tags: tuple[str, ...] = ()
    run_id: str | None = None
    problem: str | None = None

    @property
    def label(self) -> str:
        """The tags on it, else its short SHA."""
        return ", ".join(self.tags) if self.tags else self.sha[:12]


@dataclass(frozen=True)
class Point:
    """One scenario at one commit: the tally, its interval, and the move since the
    previous commit with a run (``change`` as ``diff`` names it; ``new`` when that run
    did not hold the scenario, or this is the first commit)."""

    verdict: str
    passes: int
    trials: int
    low: float
    high: float
    change: str = "new"
    p: float | None = None
    beyond_noise: bool = False  # under the history's control: q < alpha
    q: float | None = None      # p adjusted for the scenarios of that comparison

    @property
    def rate(self) -> float | None:
        return self.passes / self.trials if self.trials else None

    @property
    def regressed(self) -> bool:
        """Regressed beyond trial noise: what makes ``gitevals diff`` exit 1."""
        return self.change == "regressed" and self.beyond_noise


@dataclass(frozen=True)
class History:
    """Commits oldest first; ``points[i][j]`` is scenario ``i`` at commit ``j`` (None:
    that commit's run did not hold it)."""

    commits: tuple[Commit, ...]
    scenarios: tuple[Key, ...]
    points: tuple[tuple[Point | None, ...], ...]
    test: str = DEFAULT_TEST
    alpha: float = DEFAULT_ALPHA
    control: str = DEFAULT_CONTROL
    #: per commit, the paired suite test against the previous commit with a run (None for
    #: the first, or an unreadable run)
    suites: tuple[SuiteResult | None, ...] = ()
    #: the control, its error rate and its level, in words (of the widest comparison)
    control_text: str = ""

    def regressions(self) -> int:
        """How many points regressed beyond noise."""
        return sum(p is not None and p.regressed for row in self.points for p in row)

    def suite_regressions(self) -> int:
        """How many commits' suites regressed beyond noise since the commit before."""
        return sum(s is not None and s.regressed for s in self.suites)


def wilson(passes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for ``passes`` of ``trials``: unlike the normal
    approximation it stays inside [0, 1] and is not empty at 0/n or n/n, the rates a
    handful of trials often gives. ``(0.0, 1.0)`` for no trial."""
    if trials <= 0:
        return 0.0, 1.0
    p = passes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # at 0/n and n/n the bound is exactly the rate; rounding must not move it past it
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return low, high


def build(runs: Sequence[tuple[Commit, dict[Key, Tally] | None]],
          test: str = DEFAULT_TEST, alpha: float = DEFAULT_ALPHA,
          control: str = DEFAULT_CONTROL, clusters: Mapping[str, str] | None = None
          ) -> History:
    """The history of ``runs`` (oldest first; None where a commit's run was unreadable):
    each commit's tallies compared with the previous readable run's, as ``diff`` would
    (``control`` over the scenarios, the paired suite test clustered by ``clusters``)."""
    keys = sorted({k for _, t in runs if t for k in t})
    index = {k: i for i, k in enumerate(keys)}
    columns: list[list[Point | None]] = [[None] * len(runs) for _ in keys]
    suites: list[SuiteResult | None] = [None] * len(runs)
    before: dict[Key, Tally] | None = None
    words = ""
    for j, (_, tally) in enumerate(runs):
        if tally is None:
            continue
        rows = compare_tallies(before or {}, tally, None, test, alpha, powered=False)
        if before is not None:
            rows, suite = assess(rows, clusters, control, alpha, test=test, mde=False)
            suites[j] = suite
            words = max(words, suite.control_text, key=len)
        for r in rows:
            if r.b is None:
                continue  # gone: no point at this commit
            low, high = wilson(r.b.passes, r.b.trials)
            change = r.change if before is not None else "new"
            columns[index[(r.case, r.scenario)]][j] = Point(
                r.b.verdict, r.b.passes, r.b.trials, low, high, change, r.p, r.beyond_noise,
                r.q)
        before = tally
    return History(tuple(c for c, _ in runs), tuple(keys),
                   tuple(tuple(col) for col in columns), test, alpha, control, tuple(suites),
                   words)


def select(history: History, spec: str | None) -> History:
    """Only the scenarios ``CASE`` or ``CASE/SCENARIO`` names (all when ``spec`` is None);
    commits stay, so a case missing from a commit reads as not run there."""
    if not spec:
        return history
    case, _, scenario = spec.partition("/")
    keep = [i for i, (c, s) in enumerate(history.scenarios)
            if c == case and (not scenario or s == scenario)]
    return replace(history, scenarios=tuple(history.scenarios[i] for i in keep),
                   points=tuple(history.points[i] for i in keep))
