"""Baseline and gate (pure): a run's goldens slices -> a baseline; a run against one.

The baseline (``<root>/baseline-<model>.json``, the gate token) records what a run of
the unmodified base model measured, per slice, and the blobs it measured with. The
gate compares a later run slice by slice: the delta in points with a 95 % interval
(Newcombe's hybrid score interval, which holds at 0 % and 100 %), ``unchanged``
within the noise tolerance, and a drop beyond the hard-fail threshold in any slice
fails the gate whatever else improved. A baseline measured with other goldens or
graders is a different measuring stick: refused, never compared.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from gitevals.errors import GitevalsError
from gitevals.goldens.drift import DEFAULT_BUDGET, Z95, Budget
from gitevals.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from gitevals.run.artifact import Run, TargetEnvValue
    from gitevals.run.goldens import Goldens
    from gitevals.stats.judge_correction import Corrected

FORMAT = "gitevals-baseline/1"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Refused(GitevalsError):
    """No comparison can be made (no baseline, another measuring stick): exit 2."""


class BaselineSlice(TypedDict):
    kind: str
    name: str
    grader: str | None
    passed: int
    total: int
    errors: int
    rate: float | None


class Baseline(TypedDict):
    """The gate token: what the base model scored, and with which blobs."""

    format: str
    model: str
    run_id: str
    rev: str
    commit: str
    tree: str
    target: JSON
    target_env: dict[str, TargetEnvValue] | None
    graders: dict[str, str]
    files: dict[str, str]
    budget: JSONObject | None
    slices: list[BaselineSlice]


def baseline_path(root: str, model: str) -> str:
    """``<root>/baseline-<model>.json`` (a usage error for a name that is not a file name)."""
    if not NAME.match(model):
        raise Refused(f"--model {model!r}: a model name is letters, digits, '.', '_' and '-' "
                      "(it names the file baseline-<model>.json)")
    return f"{root}/baseline-{model}.json" if root else f"baseline-{model}.json"


def baseline_of(run: Run, model: str) -> Baseline:
    """The baseline a complete goldens run measured (refused for a partial one)."""
    part = run.get("goldens")
    if part is None:
        raise Refused(f"run {run['run_id']} sent no goldens: a baseline is the goldens (and "
                      "drift suite) run against the base model; `gitevals run --goldens-only`")
    if run["interrupted"] or part["buckets"]:
        why = "was interrupted" if run["interrupted"] else f"sent only buckets {part['buckets']}"
        raise Refused(f"run {run['run_id']} {why}: a baseline needs every bucket and the drift "
                      "suite; run `gitevals run --goldens-only` in full")
    target = run["settings"].get("target")
    # The environment the target ran with, when a run records one (experiment lanes do).
    env = run.get("target_env")
    return {"format": FORMAT, "model": model, "run_id": run["run_id"], "rev": run["rev"],
            "commit": run["commit"], "tree": run["tree"], "target": target, "target_env": env,
            "graders": dict(part["graders"]), "files": dict(part["files"]),
            "budget": part["budget"],
            "slices": [{**s, "rate": s["passed"] / s["total"] if s["total"] else None}
                       for s in part["slices"]]}


def check_baseline(doc: JSON, label: str) -> Baseline:
    """``doc`` as a ``Baseline`` when it is one, else ``Refused`` naming ``label``."""
    from gitevals import validation

    if not _is_baseline(doc):
        v = validation.best_error("baseline", doc)
        where = validation.json_path(v.path) if v else "$"
        what = v.message if v else "it does not match"
        raise Refused(f"{label}: not a gitevals baseline: at {where}: {what}; write it with "
                      "`gitevals baseline ARTIFACT --model NAME`")
    baseline = doc
    why = _inconsistent(baseline["slices"])
    if why is not None:
        raise Refused(f"{label}: not a gitevals baseline: {why}; write it again with "
                      "`gitevals baseline ARTIFACT --model NAME --force`")
    return baseline


def _is_baseline(doc: JSON) -> TypeGuard[Baseline]:
    """Whether ``doc`` keeps ``schemas/baseline.schema.json`` (the whole schema)."""
    from gitevals import validation

    return validation.is_valid("baseline", doc)


def _inconsistent(slices: list[BaselineSlice]) -> str | None:
    """Why counts the schema allows cannot be a measurement, or None: no slice at all,
    a slice named twice, more passed (or errors) than items, a rate that is not
    passed/total. One line, never a math domain error later."""
    if not slices:
        return "it has no slice (a baseline measures every bucket and drift slice)"
    seen: set[tuple[str, str]] = set()
    for i, s in enumerate(slices):
        at = f"slice {i} ({s['kind']} {s['name']})"
        if (s["kind"], s["name"]) in seen:
            return f"{at} is listed twice"
        seen.add((s["kind"], s["name"]))
        if s["total"] < 1:
            return f"{at} has total {s['total']}: a slice measured no item"
        if s["passed"] > s["total"] or s["errors"] > s["total"]:
            return (f"{at} has passed {s['passed']} and errors {s['errors']} of total "
                    f"{s['total']}: neither can exceed the total")
        rate = s["rate"]
        if rate is None or not math.isclose(rate, s["passed"] / s["total"], abs_tol=1e-12):
            return f"{at} has rate {rate!r}, not passed/total"
    return None


def same_run(baseline: Baseline, run: Run) -> str | None:
    """Why ``baseline`` is not what ``run`` (the run it names, read from its commit's note
    or results/) measured, or None: a baseline is a copy of a run's slices and pins, so
    editing its numbers (every ``passed`` 0, a slice taken out) is caught here."""
    part = run.get("goldens")
    if part is None or run["run_id"] != baseline["run_id"]:
        return f"run {baseline['run_id']} sent no goldens"
    if run["commit"] != baseline["commit"] or run["tree"] != baseline["tree"]:
        return f"run {run['run_id']} is pinned to another commit"
    if dict(part["files"]) != baseline["files"] or dict(part["graders"]) != baseline["graders"]:
        return f"run {run['run_id']} measured with other pins"
    mine = sorted((s["kind"], s["name"], s["passed"], s["total"], s["errors"])
                  for s in part["slices"])
    theirs = sorted((s["kind"], s["name"], s["passed"], s["total"], s["errors"])
                    for s in baseline["slices"])
    if mine != theirs:
        return f"its slices are not the ones run {run['run_id']} measured"
    return None


# -- the gate ------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceGate:
    """One slice: baseline and run counts, the delta in points, its interval, status."""

    kind: str
    name: str
    base: tuple[int, int]
    now: tuple[int, int] | None
    delta: float | None
    low: float | None
    high: float | None
    status: str  # improved | unchanged | dropped | hard_fail | missing | uncovered
    #: Why the slice's grader is advisory (the run's ``judge_calibration``): shown, never
    #: counted in the gate's pass/fail; None when it counts.
    advisory: str | None = None
    #: the exact test's two-sided p, and the one-sided "dropped" p adjusted across the
    #: counted slices (``q``): a drop beyond the threshold fails only when q < alpha
    p: float | None = None
    q: float | None = None
    #: the run's rate corrected for the slice's calibrated judge grader, when it alone
    #: decided every item (``gitevals.calibration.corrected``); shown, never gated on
    corrected: Corrected | None = None


@dataclass(frozen=True)
class GateResult:
    model: str
    baseline_commit: str
    run_commit: str
    budget: Budget
    budget_source: str  # "run" | "default"
    slices: tuple[SliceGate, ...]
    control: str = "fdr"
    alpha: float = 0.05

    @property
    def failing(self) -> tuple[SliceGate, ...]:
        """The counted slices that fail the gate (an advisory slice never does)."""
        return tuple(s for s in self.slices
                     if s.status in ("hard_fail", "missing", "uncovered")
                     and s.advisory is None)

    @property
    def advisory(self) -> tuple[SliceGate, ...]:
        """The slices whose grader is advisory: reported, left out of pass/fail."""
        return tuple(s for s in self.slices if s.advisory is not None)

    @property
    def passed(self) -> bool:
        return not self.failing


def wilson(x: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``x/n``."""
    if n == 0:
        return 0.0, 1.0
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def difference(x0: int, n0: int, x1: int, n1: int) -> tuple[float, float, float]:
    """``p1 - p0`` with Newcombe's hybrid score 95 % interval (all as fractions)."""
    p0, p1 = x0 / n0, x1 / n1
    l0, u0 = wilson(x0, n0)
    l1, u1 = wilson(x1, n1)
    d = p1 - p0
    return d, d - math.hypot(p1 - l1, u0 - p0), d + math.hypot(u1 - p1, p0 - l0)


def _status(delta: float, budget: Budget) -> str:
    """A drop no larger than the re-run variation (``rerun_seed_variation_pts``: how far
    the same model moved between seeds) is noise, ``rerun_noise`` -- up to the hard-fail
    threshold, which binds regardless (the seed: "a hard fail regardless"): a variation
    wider than the threshold says the suite is too small to gate on, not that a larger
    drop is fine."""
    if abs(delta) <= budget.noise:
        return "unchanged"
    if delta < -budget.hard_fail:
        return "hard_fail"
    if delta < 0 and -delta <= budget.rerun_max:
        return "rerun_noise"
    return "improved" if delta > 0 else "dropped"


def _budget(part: Goldens) -> tuple[Budget, str]:
    raw = part["budget"]
    if raw is None:
        return DEFAULT_BUDGET, "default"
    rerun = raw.get("rerun_seed_variation_pts")
    budget = Budget(_num(raw.get("noise_tolerance_pts")),
                    _num(raw.get("hard_fail_threshold_pts")),
                    tuple(_num(x) for x in rerun) if isinstance(rerun, list) else
                    (_num(rerun),) if rerun is not None else ())
    # An infinite or NaN threshold (or one past 100 points) would fail nothing.
    if not all(math.isfinite(x) and 0 <= x <= 100
               for x in (budget.noise, budget.hard_fail, *budget.rerun)) \
            or budget.hard_fail <= budget.noise:
        raise Refused(f"the run's drift budget (noise {budget.noise}, hard fail "
                      f"{budget.hard_fail}) is not a finite budget with 0 <= noise < hard "
                      "fail <= 100 points: fix drift_budget in drift-suite.yaml and run again")
    return budget, "run"


def _num(value: JSON) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def same_stick(baseline: Baseline, part: Goldens) -> str | None:
    """Why ``part`` was measured with another stick than ``baseline``, or None."""
    files, mine = baseline["files"], part["files"]
    for path in sorted(set(files) | set(mine)):
        if files.get(path) != mine.get(path):
            had = (files.get(path) or "absent")[:12]
            has = (mine.get(path) or "absent")[:12]
            return f"{path} was {had} for the baseline and is {has} for this run"
    if baseline["graders"] != part["graders"]:
        return (f"buckets were graded by {baseline['graders']} for the baseline and by "
                f"{part['graders']} for this run")
    return None


def advisory_reasons(run: Run) -> dict[str, str]:
    """Grader -> why it is advisory, as the run recorded its judge graders' calibration
    (``gitevals.calibration.runs.attach``; nothing for runs recorded before it)."""
    return {name: c["reason"] for name, c in run.get("judge_calibration", {}).items()
            if c.get("status") == "advisory"}


def gate(baseline: Baseline, run: Run, label: str, control: str = "fdr",
         alpha: float = 0.05) -> GateResult:
    """Compare ``run`` with ``baseline`` slice by slice (``Refused`` when they cannot be).

    A slice graded by a grader the run recorded as advisory (a judge grader that is not
    calibrated) is compared and shown, marked with the reason, and never fails the gate.
    A drop beyond the hard-fail threshold fails only when it is also beyond noise: the
    one-sided exact test of "the run passes less often", adjusted under ``control``
    across the counted slices, below ``alpha`` -- so an unchanged model fails the gate
    in at most alpha of runs however many buckets there are."""
    part = run.get("goldens")
    if part is None:
        raise Refused(f"run {run['run_id']} sent no goldens, so there is nothing to gate; run "
                      "`gitevals run --goldens-only`")
    why = same_stick(baseline, part)
    if why is not None:
        raise Refused(f"{label} was measured with a different measuring stick: {why}; gate a "
                      "run of the same goldens and graders, or write a new baseline")
    budget, source = _budget(part)
    bad = next((s for s in part["slices"] if not 0 <= s["passed"] <= s["total"]), None)
    if bad is not None:
        raise Refused(f"run {run['run_id']}: slice {bad['kind']} {bad['name']} has passed "
                      f"{bad['passed']} of total {bad['total']}: not a measurement")
    now = {(s["kind"], s["name"]): (s["passed"], s["total"]) for s in part["slices"]}
    graders = {(s["kind"], s["name"]): s["grader"] for s in part["slices"]}
    reasons = advisory_reasons(run)
    rows = []
    for s in baseline["slices"]:
        base = (s["passed"], s["total"])
        got = now.get((s["kind"], s["name"]))
        grader = graders.get((s["kind"], s["name"]), s["grader"])
        advisory = (f"grader {grader} is advisory: {reasons[grader]}"
                    if grader is not None and grader in reasons else None)
        if got is None or not got[1] or not base[1]:
            rows.append(SliceGate(s["kind"], s["name"], base, got, None, None, None, "missing",
                                  advisory))
            continue
        d, lo, hi = difference(base[0], base[1], got[0], got[1])
        rows.append(SliceGate(s["kind"], s["name"], base, got, 100 * d, 100 * lo, 100 * hi,
                              _status(100 * d, budget), advisory))
    # A slice the run measured that the baseline lacks is a bucket the gate cannot
    # compare: it fails, so a baseline that leaves out the regressed slice gates nothing.
    covered = {(s["kind"], s["name"]) for s in baseline["slices"]}
    for r in part["slices"]:
        if (r["kind"], r["name"]) not in covered:
            rows.append(SliceGate(r["kind"], r["name"], (0, 0), (r["passed"], r["total"]),
                                  None, None, None, "uncovered"))
    return GateResult(baseline["model"], baseline["commit"], run["commit"], budget, source,
                      _beyond_noise(with_corrected(rows, run), control, alpha), control, alpha)


def _beyond_noise(rows: tuple[SliceGate, ...], control: str, alpha: float
                  ) -> tuple[SliceGate, ...]:
    """Each measured slice's p and q; a hard fail within noise is only "dropped"."""
    from dataclasses import replace

    from gitevals.diff.stats import one_sided_less, two_sided
    from gitevals.stats.multiplicity import family

    measured = [i for i, r in enumerate(rows) if r.now is not None and r.delta is not None]
    counted = [i for i in measured if rows[i].advisory is None]
    down = {}
    for i in measured:
        r = rows[i]
        assert r.now is not None
        down[i] = (one_sided_less("boschloo", r.now[0], r.now[1], r.base[0], r.base[1])
                   if r.now[0] * r.base[1] < r.base[0] * r.now[1] else 1.0)
    qs = dict(zip(counted, family([down[i] for i in counted], control), strict=True))
    out = list(rows)
    for i in measured:
        r = rows[i]
        assert r.now is not None
        p = two_sided("boschloo", r.base[0], r.base[1], r.now[0], r.now[1])
        # an advisory slice is outside the family (it never fails the gate): its status
        # is read at its own one-sided p, as it would be were it counted alone
        alone = control == "none" or r.advisory is not None
        q = qs.get(i, min(1.0, down[i]) if alone else None)
        status = r.status
        if status == "hard_fail" and not (q is not None and q < alpha):
            status = "dropped"  # beyond the threshold, but not beyond noise
        out[i] = replace(r, p=p, q=q, status=status)
    return tuple(out)


def with_corrected(rows: list[SliceGate], run: Run) -> tuple[SliceGate, ...]:
    """``rows`` with the run's judge-corrected rate of each slice that qualifies."""
    from dataclasses import replace

    from gitevals.calibration.corrected import slice_corrections

    fixed = slice_corrections(run)
    return tuple(replace(r, corrected=fixed.get((r.kind, r.name))) for r in rows)
