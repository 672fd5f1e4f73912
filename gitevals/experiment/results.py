"""The experiment's results document: built from the lanes' run artifacts (pure).

``build`` makes the JSON document ``gitevals experiment`` writes to
``<root>/results/experiments/<id>.json``: per lane the pass rate with its 95 % interval,
the scenario verdicts, every measure's observed n, missing n, mean and population
variance, its judge graders' calibration (as its run recorded it: an advisory grader's
failures were not counted), and whether its controls held; per pair of lanes and
scenario, the exact test ``gitevals diff`` uses. ``report/experiment.py`` renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict, TypeGuard

from gitevals import jsontext
from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST
from gitevals.diff.verdicts import VerdictRow, compare_verdicts
from gitevals.experiment.controls import (
    Pins,
    RealizedCounts,
    Sample,
    across,
    after,
    lane_value,
    realized_counts,
    samples,
    within,
)
from gitevals.experiment.metrics import MetricDoc, RateDoc, lane_metrics, pass_rate
from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import GraderCalibration, Run, TargetEnvValue, Trial, scenarios
from gitevals.stats.multiplicity import DEFAULT_CONTROL

FORMAT = "gitevals-experiment/1"

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


class PinsDoc(TypedDict):
    """A lane's pins as its report keeps them (the rest are the lane's and the report's
    own fields): the files' blobs, and each scenario's ``[trials, timeout]``."""

    files: dict[str, str]
    timing: dict[str, list[float]]


class ScenarioDoc(TypedDict):
    """One scenario's verdict in one lane."""

    case: str
    scenario: str
    verdict: str
    passes: int
    trials: int


class RealizedDoc(RealizedCounts):
    """What a lane's replies said they used: the model and driver most samples named."""

    model: str | None
    driver: str | None


class ControlsDoc(TypedDict):
    """Whether a lane's controls held, and every phrase saying why not."""

    held: bool
    problems: list[str]


class LaneDoc(TypedDict):
    """One lane of the report: what it was to run, what ran, and how it did."""

    name: str
    rev: str
    commit: str
    tree: str
    target_env: dict[str, TargetEnvValue]
    artifact: str
    pins: PinsDoc
    run_id: str | None
    interrupted: bool
    pass_rate: RateDoc
    scenarios: list[ScenarioDoc]
    metrics: dict[str, MetricDoc]
    judge_calibration: dict[str, GraderCalibration] | None
    realized: RealizedDoc
    controls: ControlsDoc


class ComparisonDoc(TypedDict):
    """Two lanes' tallies of one scenario and the exact test between them; ``q`` (the
    p-value adjusted across every comparison) only where both lanes ran trials."""

    a: str
    b: str
    case: str
    scenario: str
    a_passes: int | None
    a_trials: int | None
    b_passes: int | None
    b_trials: int | None
    change: str
    p: float | None
    beyond_noise: bool
    q: NotRequired[float | None]


class Report(Meta):
    """The experiment report ``build`` makes: the experiment (``Meta``), the test and
    its control, every lane, every comparison, and the two decisions."""

    format: str
    test: str
    alpha: float
    control: str
    control_text: str
    lanes: list[LaneDoc]
    comparisons: list[ComparisonDoc]
    controls_held: bool
    passed: bool


#: The report, as the renderers (``report/experiment.py``) and the API name it.
Doc = Report


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


def _pins_json(p: Pins) -> PinsDoc:
    return {"files": p.files, "timing": {k: list(v) for k, v in p.timing.items()}}


def _lane(lane: LaneResult, found: Sequence[Sample], more: Sequence[str] = ()) -> LaneDoc:
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
                 control: str = DEFAULT_CONTROL) -> list[ComparisonDoc]:
    """Every lane pair, scenario by scenario, under one control across all of them:
    pairs that share a lane share data, so ``fdr`` is Benjamini-Yekutieli here."""
    from gitevals.stats.multiplicity import family

    out: list[ComparisonDoc] = []
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
          alpha: float = DEFAULT_ALPHA, control: str = DEFAULT_CONTROL) -> Report:
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
    return jsontext.dumps(doc) + "\n"


# -- a kept report read back (``experiment --recheck``): its JSON is not trusted ------------


def kept_meta(doc: JSONObject) -> Meta:
    """What a kept report says of its experiment, to report it again. ``KeyError`` for
    a missing field, ``TypeError`` (``'<field>' as <shape>``) for one of the wrong shape."""
    return {"id": _text(doc, "id"), "tool_version": _text(doc, "tool_version"),
            "root": _text(doc, "root"), "cases": _texts(doc, "cases"),
            "repeat": _whole(doc, "repeat"), "jobs": _whole(doc, "jobs"),
            "conversations": _whole(doc, "conversations"),
            "max_samples": None if doc["max_samples"] is None else _whole(doc, "max_samples"),
            "settings": _object(doc, "settings"), "started_at": _text(doc, "started_at"),
            "finished_at": _text(doc, "finished_at")}


def kept_lane(doc: JSONObject, lane: JSON) -> tuple[str, str, Pins]:
    """A kept lane's name, revision and the pins it recorded before it ran (with the
    report's settings, gitevals version and root). ``KeyError``, ``TypeError`` or
    ``ValueError`` (a name no lane may have) for a damaged one."""
    from gitevals.experiment.lanes import valid_name

    if not isinstance(lane, dict):
        raise TypeError("a lane as an object")
    name = _text(lane, "name")
    if not valid_name(name):
        raise ValueError(f"lane name {name!r}")
    pins = _object(lane, "pins")
    timing = {k: _timing(k, v) for k, v in _object(pins, "timing").items()}
    env = _object(lane, "target_env")
    if not all(_is_env_value(v) for v in env.values()):
        raise TypeError("'target_env' as names and their recorded values")
    recorded: dict[str, TargetEnvValue] = {k: v for k, v in env.items() if _is_env_value(v)}
    rev = lane.get("rev", "")
    return name, rev if isinstance(rev, str) else "", Pins(
        _text(lane, "commit"), _text(lane, "tree"), recorded, _strings(pins, "files"),
        _object(doc, "settings"), timing, _text(doc, "tool_version"), _text(doc, "root"))


def _is_env_value(value: JSON) -> TypeGuard[TargetEnvValue]:
    """A recorded target env value: ``{"value": ...}`` or ``{"sha256": ...}``, text."""
    return (isinstance(value, dict) and set(value) <= {"value", "sha256"}
            and all(isinstance(v, str) for v in value.values()))


def _timing(key: str, value: JSON) -> tuple[int, float]:
    """A scenario's ``[trials, timeout]``."""
    if isinstance(value, list) and len(value) == 2:
        trials, timeout = value
        if _number(trials) and _number(timeout):
            return int(trials), float(timeout)
    raise TypeError(f"timing {key!r} as [trials, timeout]")


def _number(value: JSON) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _object(doc: JSONObject, key: str) -> JSONObject:
    value = doc[key]
    if not isinstance(value, dict):
        raise TypeError(f"{key!r} as an object")
    return value


def _text(doc: JSONObject, key: str) -> str:
    value = doc[key]
    if not isinstance(value, str):
        raise TypeError(f"{key!r} as text")
    return value


def _whole(doc: JSONObject, key: str) -> int:
    value = doc[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key!r} as a whole number")
    return value


def _texts(doc: JSONObject, key: str) -> list[str]:
    value = doc[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{key!r} as a list of text")
    return [v for v in value if isinstance(v, str)]


def _strings(doc: JSONObject, key: str) -> dict[str, str]:
    value = _object(doc, key)
    if not all(isinstance(v, str) for v in value.values()):
        raise TypeError(f"{key!r} as names and text")
    return {k: v for k, v in value.items() if isinstance(v, str)}
