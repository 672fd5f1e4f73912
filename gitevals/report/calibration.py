"""What ``gitevals calibrate`` prints, and the calibration line of a run's report.

TPR and TNR are always two numbers, each with its interval and counts: a blended
accuracy is never computed, so it cannot be printed. Item ids and messages come from
the user's files and judge: escaped for terminals (``text.visible``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gitevals.calibration.status import Status
from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import GraderCalibration, ScenarioRun
from gitevals.text import visible

_NAMES = (("TPR", "tpr", "pass", "PASS"), ("TNR", "tnr", "fail", "FAIL"))


def render(record: JSONObject, verdict: Status, fmt: str, *, unlabelled: int, kept: str | None,
           items: int, below: str, where: str) -> str:
    """The calibration report, as text or JSON; ``below`` says what misses the bar."""
    if fmt == "json":
        doc: JSONObject = {"record": record, "status": verdict.as_dict(), "items": items,
                           "unlabelled_rows": unlabelled, "recorded": kept is None,
                           "meets_bar": not below, "below_bar": below or None,
                           "path": where}
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    lines = _text(record, verdict, unlabelled, kept, items, where)
    lines.insert(-2, f"bar: {'not met: ' + below if below else 'met'}")
    return "\n".join(lines) + "\n"


def _number(value: JSON) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "n/a"


def rate_line(label: str, rate: JSON, said: str, word: str) -> str:
    """``TPR 1.00 [0.93, 1.00]  52 of 52 labelled pass judged PASS``."""
    r = rate if isinstance(rate, dict) else {}
    interval = (f"[{_number(r.get('low'))}, {_number(r.get('high'))}]"
                if r.get("low") is not None else "[no items]")
    return (f"{label} {_number(r.get('value'))} {interval}  {r.get('hits', 0)} of "
            f"{r.get('of', 0)} labelled {said} judged {word}")


def _text(record: JSONObject, verdict: Status, unlabelled: int, kept: str | None,
          items: int, where: str) -> list[str]:
    splits = record.get("splits")
    sizes = splits if isinstance(splits, dict) else {}
    split = str(record.get("split"))
    lines = [visible(f"calibrate {record.get('grader')} on the {split} split"
                     f"{' (sealed test, measured once)' if record.get('final') else ''}: "
                     f"{sizes.get(split, 0)} of {items} labelled items (train "
                     f"{sizes.get('train', 0)}, dev {sizes.get('dev', 0)}, test "
                     f"{sizes.get('test', 0)})"),
             visible(f"judge {record.get('judge_model')} at {record.get('base_url')}; grader "
                     f"blob {str(record.get('grader_blob'))[:12]}")]
    lines += [rate_line(label, record.get(key), said, word) for label, key, said, word in _NAMES]
    errors = record.get("errors")
    listed = errors.get("items") if isinstance(errors, dict) else None
    listed = listed if isinstance(listed, list) else []
    lines.append(f"errors {len(listed)} (not counted in TPR or TNR: an error is never a FAIL)")
    for e in listed:
        if isinstance(e, dict):
            lines.append(visible(f"  {e.get('id')}: {e.get('message')}"))
    if unlabelled:
        lines.append(f"{unlabelled} row{'s' * (unlabelled != 1)} without a label skipped")
    lines.append(visible(f"status: {verdict.state}: {verdict.reason}"))
    lines.append(visible(kept) if kept else
                 f"recorded in {visible(where)}; commit it so lint and runs read it")
    return lines


def run_line(calibration: Mapping[str, GraderCalibration] | None) -> str | None:
    """The line a run's report ends with: N/A, or each judge grader's status; None for
    runs recorded before calibration existed (nothing is known)."""
    if calibration is None:
        return None
    if not calibration:
        return "calibration: N/A (no grader calls t.llm or t.judge)"
    parts = [f"{name} {c['status']}" + (f" ({c['reason']})" if c["status"] == "advisory"
                                         else "")
             for name, c in sorted(calibration.items())]
    return visible("calibration: " + "; ".join(parts))


def advisory_failure(scenario: ScenarioRun) -> str | None:
    """The first failure of an advisory grader in a scenario that did not fail for any
    other reason, marked so: ``advisory, not counted: grader q.tone: judged fail``."""
    for trial in scenario["results"]:
        for a in trial["assertions"]:
            if a.get("advisory") and not a["passed"]:
                return f"advisory, not counted: {a['message']}"
    return None
