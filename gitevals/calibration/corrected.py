"""Which pass rates of a run a calibrated judge decided, and those rates corrected for
the judge's errors (``gitevals.stats.judge_correction``). Pure: a run in, values out.

A rate is corrected only when every one of its trials was decided by **one** calibrated
judge grader, so that "passed" means exactly "the judge said PASS":

- a **scenario** qualifies when its ``expect`` names exactly one grader assertion whose
  grader the run recorded as calibrated, with counts (``judge_calibration``), without
  ``pass_below`` (calibration measured the grader's PASS/FAIL, not a score threshold),
  and on **every** trial: no infrastructure error, that grader answered (no grader
  error), and every other assertion passed or was advisory (an advisory judge's outcome
  never counts). A trial failed by anything else is a failure no judge decided: the
  correction would need that other instrument's error rates too, so nothing is shown;
- a **goldens slice** qualifies when it is graded by one grader the run recorded as
  calibrated and none of its items was lost to an error (the target's or the grader's).

Anything else -- an advisory or deterministic grader, two calibrated judges in one
scenario, a run recorded before the counts were kept -- gets no corrected rate at all:
nothing is shown rather than a number that would be wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitevals.stats.judge_correction import MAX_COUNT, Calibration, Corrected, corrected, usable

if TYPE_CHECKING:
    from gitevals.run.artifact import CaseRun, GraderCalibration, Run, ScenarioRun, Trial
    from gitevals.run.goldens import SliceRate


def calibrations(run: Run | None) -> dict[str, Calibration]:
    """Grader -> the counts of its calibration, for every grader ``run`` recorded as
    calibrated with usable counts (none for runs recorded before counts were kept)."""
    out = {}
    for name, entry in (run.get("judge_calibration", {}) if run is not None else {}).items():
        cal = _counts(entry)
        if cal is not None:
            out[name] = cal
    return out


def _counts(entry: GraderCalibration) -> Calibration | None:
    if not isinstance(entry, dict) or entry.get("status") != "calibrated":
        return None
    tpr, tnr = entry.get("tpr"), entry.get("tnr")
    if not isinstance(tpr, dict) or not isinstance(tnr, dict):
        return None
    values = [v for v in (tpr.get("hits"), tpr.get("of"), tnr.get("hits"), tnr.get("of"))
              if isinstance(v, int) and not isinstance(v, bool)]
    if len(values) != 4:
        return None
    cal = Calibration(*values)
    return cal if usable(cal) is None else None


def deciding_judge(scenario: ScenarioRun, judges: dict[str, Calibration]
                   ) -> tuple[int, str] | None:
    """(index, grader) of the one calibrated judge assertion of ``scenario``'s rules, or
    None when there is none, more than one, or it has a ``pass_below``."""
    found = []
    for index, item in enumerate(scenario["expect"]):
        arg = item.get("grader") if len(item) == 1 else None
        if isinstance(arg, dict) and arg.get("name") in judges:
            found.append((index, arg))
    if len(found) != 1 or "pass_below" in found[0][1]:
        return None
    index, arg = found[0]
    return index, str(arg["name"])


def _judge_decided(trial: Trial, index: int) -> bool:
    """The trial's pass was the judge's word: nothing else failed and the judge answered."""
    if trial["error"] is not None:
        return False
    judged = False
    for a in trial["assertions"]:
        if a["index"] == index:
            if a["error"] is not None:
                return False
            judged = True
        elif not (a["passed"] or a.get("advisory")):
            return False
    return judged


def scenario_correction(case: CaseRun, scenario: ScenarioRun,
                        judges: dict[str, Calibration]) -> Corrected | None:
    """The judge-corrected pass rate of one scenario (``judges``: ``calibrations(run)``),
    or None when it does not qualify (the module's docstring says when it does)."""
    if not judges or "task" in case or not scenario["results"]:
        return None
    found = deciding_judge(scenario, judges)
    if found is None:
        return None
    index, name = found
    results = scenario["results"]
    if not all(_judge_decided(t, index) for t in results):
        return None
    # counted from the trials, not read from the stored verdict (which may be forged)
    return _correct(sum(t["passed"] is True for t in results), len(results), judges[name])


def corrections(run: Run | None) -> dict[tuple[str, str], Corrected]:
    """(case, scenario) -> the corrected rate, for every scenario of ``run`` that qualifies."""
    judges = calibrations(run)
    if run is None or not judges:
        return {}
    out = {}
    for case in run["cases"]:
        for s in case["scenarios"]:
            got = scenario_correction(case, s, judges)
            if got is not None:
                out[(case["name"], s["id"])] = got
    return out


def slice_correction(s: SliceRate, judges: dict[str, Calibration]) -> Corrected | None:
    """The judge-corrected pass rate of a goldens slice, or None when it does not qualify."""
    grader = s["grader"]
    if grader is None or grader not in judges or s["errors"]:
        return None
    return _correct(s["passed"], s["total"], judges[grader])


def _correct(passes: int, trials: int, cal: Calibration) -> Corrected | None:
    """``corrected``, or None for counts a forged artifact made impossible (more passes
    than trials, none at all, beyond ``MAX_COUNT``): nothing shown, never a traceback."""
    if not 0 <= passes <= trials or not 0 < trials <= MAX_COUNT:
        return None
    return corrected(passes, trials, cal)


def slice_corrections(run: Run | None) -> dict[tuple[str, str], Corrected]:
    """(kind, name) -> the corrected rate, for every goldens slice of ``run`` that qualifies."""
    part = run.get("goldens") if run is not None else None
    judges = calibrations(run)
    if part is None or not judges:
        return {}
    out = {}
    for s in part["slices"]:
        got = slice_correction(s, judges)
        if got is not None:
            out[(s["kind"], s["name"])] = got
    return out


def cell(c: Corrected) -> str:
    """``0.62 [0.41, 0.80]`` (or ``undefined``): the text every table shows."""
    if c.rate is None or c.low is None or c.high is None:
        return "undefined (TPR + TNR <= 1)"
    return f"{c.rate:.2f} [{c.low:.2f}, {c.high:.2f}]"
