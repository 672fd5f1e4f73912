"""Control equivalence: only the harness may differ between lanes (pure).

``before`` compares what each lane would evaluate, read from its commit before any
target starts: every file under the eval root (cases, graders, goldens, tasks...),
the settings other than the target, each scenario's trials and timeout, and the
gitevals version. ``after`` re-reads each lane's run artifact and checks it was pinned
to that lane's commit, files and env, with a clean tree: the preflight snapshot is not
trusted once work has begun.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, TypeVar

from gitevals.experiment.lanes import Lane
from gitevals.jsontypes import JSON
from gitevals.run.artifact import Run, TargetEnvValue, scenarios
from gitevals.run.targetenv import record

V = TypeVar("V")


@dataclass(frozen=True)
class Snapshot:
    """What one lane evaluates, apart from its harness."""

    root: str
    files: dict[str, str]                       # eval-root path -> blob sha (results/ left out)
    settings: dict[str, JSON]                   # settings table without the target
    timing: dict[str, tuple[int, float]]        # "case/scenario" -> (trials, timeout s)
    tool_version: str


def without_target(settings: Mapping[str, JSON]) -> dict[str, JSON]:
    """The settings table with the target (which a lane may change) left out."""
    return {k: v for k, v in sorted(settings.items()) if k != "target"}


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "absent"


def _differences(ref: Mapping[str, V], other: Mapping[str, V],
                 line: Callable[[str, V | None, V | None], str]) -> list[str]:
    """``line(key, reference's value, other's value)`` for every key whose values differ."""
    keys = sorted(set(ref) | set(other))
    return [line(k, ref.get(k), other.get(k)) for k in keys if ref.get(k) != other.get(k)]


def _timing(t: tuple[int, float] | None) -> str:
    return "not selected" if t is None else f"{t[0]} trials, timeout {t[1]:g}s"


def _json(value: JSON | None) -> str:
    import json

    return "absent" if value is None else json.dumps(value, sort_keys=True)


def before(lanes: Sequence[Lane], snaps: Sequence[Snapshot]) -> list[str]:
    """Every difference of each lane from the first, one line each (empty: controls hold)."""
    ref_lane, ref = lanes[0], snaps[0]
    out = []
    for lane, snap in zip(lanes[1:], snaps[1:], strict=True):
        diffs = []
        if snap.root != ref.root:
            diffs.append(f"eval root {snap.root!r}, not {ref.root!r}")
        if snap.root == ref.root:
            diffs += _differences(ref.files, snap.files,
                                  lambda p, a, b: f"{p}: blob {_short(b)}, not {_short(a)}")
        diffs += _differences(ref.settings, snap.settings,
                              lambda k, a, b: f"setting {k!r} is {_json(b)}, not {_json(a)}")
        diffs += _differences(ref.timing, snap.timing,
                              lambda k, a, b: f"{k}: {_timing(b)} here, "
                                              f"{_timing(a)} in lane {ref_lane.name}")
        if snap.tool_version != ref.tool_version:
            diffs.append(f"gitevals {snap.tool_version}, not {ref.tool_version}")
        out += [f"lane {lane.name} ({lane.commit[:12]}) differs from lane {ref_lane.name} "
                f"({ref_lane.commit[:12]}): {d}" for d in diffs]
    return out


@dataclass(frozen=True)
class Pins:
    """What a lane's run must show it used: the lane's commit and tree, the env given to
    its target (as recorded), the blobs of the files the plan read (cases, graders,
    settings), the settings other than the target, each scenario's trials (with the
    repeats) and timeout, and the gitevals version."""

    commit: str
    tree: str
    target_env: dict[str, TargetEnvValue]
    files: dict[str, str]
    settings: dict[str, JSON]
    timing: dict[str, tuple[int, float]]
    tool_version: str
    root: str


def pins_of(lane: Lane, files: Mapping[str, str], snap: Snapshot, repeats: int,
            public: frozenset[str] = frozenset()) -> Pins:
    """The pins of ``lane`` from its plan's ``files`` and its before-snapshot (its env as
    the run records it: hashed but for the ``public`` names)."""
    return Pins(lane.commit, lane.tree, record(lane.env, public), dict(sorted(files.items())),
                snap.settings, {k: (t * repeats, s) for k, (t, s) in snap.timing.items()},
                snap.tool_version, snap.root)


def after(pins: Pins, run: Run) -> list[str]:
    """Why ``run`` (a lane's artifact) is not pinned to what the lane was to evaluate
    (``pins``), one phrase each; empty when it is. A dirty tree is a failure too."""
    problems = []
    if run["commit"] != pins.commit:
        problems.append(f"ran commit {_short(run['commit'])}, not the lane's {pins.commit[:12]}")
    if run["tree"] != pins.tree:
        problems.append(f"ran tree {_short(run['tree'])}, not the lane's {pins.tree[:12]}")
    if run["dirty"]:
        problems.append("ran with uncommitted changes (dirty)")
    if run["root"] != pins.root:
        problems.append(f"ran the eval root {run['root']!r}, not {pins.root!r}")
    for path in sorted(set(pins.files) | set(run["files"])):
        if pins.files.get(path) != run["files"].get(path):
            problems.append(f"used {path} blob {_short(run['files'].get(path))}, not "
                            f"{_short(pins.files.get(path))}")
    ran = without_target(run["settings"])
    problems += [f"setting {k!r} is {_json(ran.get(k))}, not {_json(pins.settings.get(k))}"
                 for k in sorted(set(pins.settings) | set(ran))
                 if pins.settings.get(k) != ran.get(k)]
    if run["tool_version"] != pins.tool_version:
        problems.append(f"ran gitevals {run['tool_version']}, not {pins.tool_version}")
    if run.get("target_env", {}) != pins.target_env:
        problems.append("the env given to the target is not the lane's")
    got = run_timing(run)
    problems += [_timing_problem(key, got.get(key), pins.timing.get(key))
                 for key in sorted(set(got) | set(pins.timing))
                 if got.get(key) != pins.timing.get(key)]
    return problems


def _timing_problem(key: str, ran: tuple[int, float] | None,
                    planned: tuple[int, float] | None) -> str:
    """One phrase for a scenario or task whose trials or timeout are not the lane's."""
    if planned is None:
        return f"{key}: ran {_timing(ran)}, though the lane did not select it"
    if ran is None:
        return f"{key}: not run, though the lane selected it ({_timing(planned)})"
    return f"{key}: {_timing(ran)}, not {_timing(planned)}"


def timing(run_scenarios: Mapping[str, tuple[int, float]]) -> dict[str, tuple[int, float]]:
    """``case/scenario -> (trials, timeout)`` sorted (a ``Snapshot.timing``)."""
    return dict(sorted(run_scenarios.items()))


def run_timing(run: Run) -> dict[str, tuple[int, float]]:
    """``case/scenario -> (trials, timeout)`` as ``run`` recorded them."""
    return timing({f"{c['name']}/{s['id']}": (s["trials"], float(s["timeout"]))
                   for c, s in scenarios(run)})


# -- the realized model and driver of each sample (the target's replies say them) --------

#: The reply fields an experiment re-checks per sample (schemas/target-reply.schema.json).
REALIZED = ("model", "driver")


@dataclass(frozen=True)
class Sample:
    """One trial of a lane as its replies reported it: ``case/scenario#trial``, and per
    field of ``REALIZED`` the values its replies named (empty: none reported it)."""

    key: str
    realized: dict[str, tuple[str, ...]]


def samples(run: Run) -> list[Sample]:
    """Every trial of ``run`` with the models and drivers its replies reported."""
    out = []
    for case, s in scenarios(run):
        for t in s["results"]:
            turns = t["transcript"]["turns"]
            seen = {f: tuple(sorted({str(r[f]) for r in turns if isinstance(r, dict)
                                     and isinstance(r.get(f), str) and r.get(f)}))
                    for f in REALIZED}
            out.append(Sample(f"{case['name']}/{s['id']}#{t['trial']}", seen))
    return out


def lane_value(found: Sequence[Sample], field: str) -> str | None:
    """The lane's ``field`` (model or driver): what most of its samples reported (ties:
    the first by name); None when none reported one."""
    from collections import Counter

    counts = Counter(v for s in found for v in s.realized[field])
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


class RealizedCounts(TypedDict):
    """Per field of ``REALIZED``, how many samples reported each value, and how many
    reported none."""

    models: dict[str, int]
    model_unreported: int
    drivers: dict[str, int]
    driver_unreported: int


def realized_counts(found: Sequence[Sample]) -> RealizedCounts:
    """Per field, how many samples reported each value, and how many reported none
    (a value not reported is unknown, never taken to be the lane's)."""
    from collections import Counter

    def counts(f: str) -> dict[str, int]:
        return dict(sorted(Counter(v for s in found for v in s.realized[f]).items()))

    def unreported(f: str) -> int:
        return sum(1 for s in found if not s.realized[f])

    return {"models": counts("model"), "model_unreported": unreported("model"),
            "drivers": counts("driver"), "driver_unreported": unreported("driver")}


def within(found: Sequence[Sample]) -> list[str]:
    """A phrase for every sample whose replies named another model (or driver) than its
    lane's, or more than one: the model and the driver are controls of the lane."""
    problems = []
    for f in REALIZED:
        lane = lane_value(found, f)
        for s in found:
            other = [v for v in s.realized[f] if v != lane]
            if other:
                problems.append(f"sample {s.key} used {f} {', '.join(map(repr, other))}, "
                                f"not the lane's {lane!r}")
    return problems


def across(lanes: Sequence[tuple[str, Mapping[str, TargetEnvValue], str | None]]
           ) -> dict[str, list[str]]:
    """Lane name -> why its model breaks the controls: ``(name, recorded env, model)`` per
    lane; two lanes whose env declares no difference must have used the same model (the
    model is a control unless ``--lane ...,env:`` declares it the harness difference)."""
    out: dict[str, list[str]] = {}
    for i, (name, env, model) in enumerate(lanes):
        for ref, ref_env, ref_model in lanes[:i]:
            if env == ref_env and None not in (model, ref_model) and model != ref_model:
                out.setdefault(name, []).append(
                    f"used model {model!r} where lane {ref} used {ref_model!r}, though their "
                    "env: declares no difference (the model is a control: declare it with "
                    "--lane NAME=REV,env:KEY=VALUE)")
                break
    return out
