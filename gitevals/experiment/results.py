"""The experiment's results document: built from the lanes' run artifacts (pure).

``build`` makes the JSON document ``gitevals experiment`` writes to
``<root>/results/experiments/<id>.json``: per lane the pass rate with its 95 % interval,
the scenario verdicts, every measure's observed n, missing n, mean and population
variance, its judge graders' calibration (as its run recorded it: an advisory grader's
failures were not counted), and whether its controls held; per pair of lanes and
scenario, the exact test ``gitevals diff`` uses. ``report/experiment.py`` renders it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST
from gitevals.diff.verdicts import VerdictRow, compare_verdicts
from gitevals.experiment.controls import (
    Pins,
    Sample,
    across,
    after,
    lane_value,
    realized_counts,
    samples,
    within,
)
from gitevals.experiment.metrics import lane_metrics, pass_rate
from gitevals.jsontypes import JSONObject
from gitevals.run.artifact import Run, Trial, scenarios
from gitevals.stats.multiplicity import DEFAULT_CONTROL

FORMAT = "gitevals-experiment/1"

Doc = dict[str, Any]


class Meta(TypedDict):
    """What an experiment is, as its report begins: its id, the gitevals that ran it, the
    eval root, cases, repeat, jobs, conversations and their bound, the lanes' common
    settings, and when it started and finished."""

    id: str
    tool_version: str
    root: str
    cases: list[str]
    repeat: int
    jobs: int
    conversations: int
    max_samples: int | None
    settings: JSONObject
    started_at: str
    finished_at: str


@dataclass(frozen=True)
class LaneResult:
    """One lane as run: its label and revision, its pins, and its artifact (None when it
    did not run or cannot be read: ``problem`` says why)."""

    name: str
    rev: str
    pins: Pins
    artifact_path: str
    run: Run | None
    problem: str | None = None
    ran: bool = True  # False for a lane an interruption kept from starting


def _trials(run: Run) -> list[Trial]:
    return [t for _, s in scenarios(run) for t in s["results"]]


def _pins_json(p: Pins) -> Doc:
    return {"files": p.files, "timing": {k: list(v) for k, v in p.timing.items()}}


def _lane(lane: LaneResult, found: Sequence[Sample], more: Sequence[str] = ()) -> Doc:
    """``lane``'s part of the report; ``found``: its samples' realized model and driver;
    ``more``: control problems found across lanes."""
    run = lane.run
    problems = [lane.problem] if lane.problem else after(lane.pins, run) if run else []
    problems += within(found) + list(more)
    trials = _trials(run) if run else []
    passes = sum(1 for t in trials if t["passed"])
    return {
        "name": lane.name, "rev": lane.rev, "commit": lane.pins.commit,
        "tree": lane.pins.tree, "target_env": lane.pins.target_env,
        "artifact": lane.artifact_path, "pins": _pins_json(lane.pins),
        "run_id": run["run_id"] if run else None,
        "interrupted": run["interrupted"] if run else not lane.ran,
        "pass_rate": pass_rate(passes, len(trials)).as_json(),
        "scenarios": [{"case": c["name"], "scenario": s["id"],
                       "verdict": s["verdict"]["verdict"], "passes": s["verdict"]["passes"],
                       "trials": s["verdict"]["trials"]} for c, s in scenarios(run)]
        if run else [],
        "metrics": {k: v.as_json() for k, v in lane_metrics(trials).items()},
        # None: the lane did not run, or its run recorded no calibration
        "judge_calibration": run.get("judge_calibration") if run else None,
        "realized": {"model": lane_value(found, "model"),
                     "driver": lane_value(found, "driver"), **realized_counts(found)},
        "controls": {"held": not problems, "problems": problems},
    }


def _comparisons(lanes: Sequence[LaneResult], test: str, alpha: float,
                 control: str = DEFAULT_CONTROL) -> list[Doc]:
    """Every lane pair, scenario by scenario, under one control across all of them:
    pairs that share a lane share data, so ``fdr`` is Benjamini-Yekutieli here."""
    from gitevals.stats.multiplicity import family

    out: list[Doc] = []
    raw: list[VerdictRow] = []
    for i, a in enumerate(lanes):
        for b in lanes[i + 1:]:
            for row in compare_verdicts(a.run, b.run, test=test, alpha=alpha):
                if row.a is not None and row.b is not None and row.a.trials and row.b.trials:
                    raw.append(row)
                out.append({
                    "a": a.name, "b": b.name, "case": row.case, "scenario": row.scenario,
                    "a_passes": row.a.passes if row.a else None,
                    "a_trials": row.a.trials if row.a else None,
                    "b_passes": row.b.passes if row.b else None,
                    "b_trials": row.b.trials if row.b else None,
                    "change": row.change, "p": row.p, "beyond_noise": row.beyond_noise})
    tested = [c for c in out if c["a_trials"] and c["b_trials"]]
    ps = [row.p if row.p is not None else 1.0 for row in raw]
    qs = family(ps, control, dependent=True)
    for c, q in zip(tested, qs, strict=True):
        c["q"] = q if c["p"] is not None else None
        c["beyond_noise"] = c["p"] is not None and q < alpha
    return out


def build(meta: Meta, lanes: Sequence[LaneResult], test: str = DEFAULT_TEST,
          alpha: float = DEFAULT_ALPHA, control: str = DEFAULT_CONTROL) -> Doc:
    """The report of an experiment: ``meta`` (id, root, cases, repeat, jobs, settings,
    times...) with every lane, the pairwise comparisons (``test`` at ``alpha`` under
    ``control`` across every pair and scenario) and the two decisions."""
    from gitevals.stats.multiplicity import describe

    found = [samples(lane.run) if lane.run else [] for lane in lanes]
    models = across([(lane.name, lane.pins.target_env, lane_value(f, "model"))
                     for lane, f in zip(lanes, found, strict=True)])
    docs = [_lane(lane, f, models.get(lane.name, ()))
            for lane, f in zip(lanes, found, strict=True)]
    held = all(d["controls"]["held"] for d in docs)
    ran = all(lane.run is not None and not lane.run["interrupted"] for lane in lanes)
    passed = ran and all(t["passed"] for lane in lanes if lane.run for t in _trials(lane.run))
    comparisons = _comparisons(lanes, test, alpha, control)
    tests = sum(1 for c in comparisons if c["a_trials"] and c["b_trials"])
    return {"format": FORMAT, **meta, "test": test, "alpha": alpha, "control": control,
            "control_text": describe(control, alpha, tests, dependent=True,
                                     what="lane-pair comparisons"),
            "lanes": docs, "comparisons": comparisons,
            "controls_held": held, "passed": passed}


def exit_code(doc: Doc) -> int:
    """0 only when every sample passed and the controls held."""
    return 0 if doc["passed"] and doc["controls_held"] else 1


def dumps(doc: Doc) -> str:
    """The canonical text of a report (sorted keys, trailing newline)."""
    return json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
