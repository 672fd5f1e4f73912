"""Two revisions -> ``Diff``: rules, graders, goldens and verdicts (pure functions of values).

The command (``gitevals.commands.diff``) reads blobs and run artifacts; everything
here takes bytes and values and returns frozen values, so each part is tested with
plain inputs. Only files whose blob differs between A and B are ever handed in.
``rules``, ``graders``, ``goldens`` and ``verdicts`` each own one part; ``stats``
holds the exact tests that say whether a move is beyond trial noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING

from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST

if TYPE_CHECKING:  # the parts' types only: a diff of one part loads only that part
    from gitevals.diff.buckets import SliceRow
    from gitevals.diff.goldens import GoldensDiff
    from gitevals.diff.graders import GraderChange, GraderUse
    from gitevals.diff.rules import CaseFileChange, ScenarioChange
    from gitevals.diff.suite import SuiteResult
    from gitevals.diff.tasks import TaskChange
    from gitevals.diff.verdicts import VerdictRow
    from gitevals.run.artifact import JSONObject


@dataclass(frozen=True)
class Side:
    """One revision: as the user named it, its commit, and where its run came from."""

    rev: str
    commit: str
    root: str
    has_evals: bool = True
    run_id: str | None = None
    run_source: str | None = None  # "results" | "note" | "file"
    run_commit: str | None = None
    missing_run_hint: str | None = None
    #: why the run is not its commit's complete one (named cases, --goldens-only, ...)
    partial: str | None = None


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    cases: tuple[CaseFileChange, ...] = ()
    graders: tuple[GraderChange, ...] = ()
    grader_users: tuple[GraderUse, ...] = ()
    goldens: GoldensDiff | None = None
    verdicts: tuple[VerdictRow, ...] = ()
    rescored: bool = False
    test: str = DEFAULT_TEST
    alpha: float = DEFAULT_ALPHA
    notes: tuple[str, ...] = field(default=())
    tasks: tuple[TaskChange, ...] = ()  # task definitions that changed (the rules part)
    slices: tuple[SliceRow, ...] = ()  # goldens pass rates per bucket / drift slice
    #: the paired suite-level comparison and the control the rows were decided under
    suite: SuiteResult | None = None
    control: str = "fdr"

    def scenario_changes(self) -> list[ScenarioChange]:
        return [s for c in self.cases for s in c.scenarios]

    def counts(self) -> dict[str, int]:
        """The numbers the summary line states."""
        v = self.verdicts
        g = self.goldens
        return {
            "regressed_beyond_noise": sum(r.change == "regressed" and r.beyond_noise for r in v),
            "regressed_within_noise": sum(r.change == "regressed" and not r.beyond_noise
                                          for r in v),
            "improved": sum(r.change == "improved" for r in v),
            "improved_beyond_noise": sum(r.change == "improved" and r.beyond_noise for r in v),
            "new": sum(r.change == "new" for r in v),
            "gone": sum(r.change == "gone" for r in v),
            "rules_changed": len(self.scenario_changes())
            + sum(c.kind == "unreadable" for c in self.cases),
            "graders_changed": len(self.graders),
            "goldens_changed": len(g.changes) if g else 0,
            "goldens_problems": len(g.problems) if g else 0,
            "tasks_changed": len(self.tasks),
            "buckets_regressed_beyond_noise": sum(r.change == "regressed" and r.beyond_noise
                                                  for r in self.slices),
            "suite_regressed_beyond_noise": int(self.suite is not None and self.suite.regressed),
        }

    def any_change(self) -> bool:
        c = self.counts()
        verdict_moves = any(r.change not in ("unchanged",) for r in self.verdicts)
        verdict_moves = verdict_moves or any(r.change != "unchanged" for r in self.slices)
        return bool(c["rules_changed"] or c["graders_changed"] or c["goldens_changed"]
                    or c["tasks_changed"] or verdict_moves)

    def to_json(self) -> str:
        """The ``--format json`` document: every field, keys sorted, one line (C encoder)."""
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc.update(counts=self.counts(), format="gitevals-diff/1")
        return json.dumps(doc, default=_plain, sort_keys=True, ensure_ascii=False)

    def as_dict(self) -> JSONObject:
        """The JSON document as plain Python."""
        doc: JSONObject = json.loads(self.to_json())  # to_json writes one object
        return doc


def _plain(obj: object) -> object:
    """json.dumps fallback: dataclasses become their fields (tuples are lists already);
    a judge-corrected rate its documented fields."""
    from gitevals.stats.judge_correction import Corrected

    if isinstance(obj, Corrected):
        return obj.as_json()
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in fields(obj)}
    return str(obj)
