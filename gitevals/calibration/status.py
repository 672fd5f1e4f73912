"""Is a judge grader calibrated, or advisory? One pure decision, used by lint and run.

A grader that asks the judge (``t.llm`` / ``t.judge``, read statically) gates only when
its committed calibration record is a final (sealed test) measurement of the same grader
blob with the same judge model, at or above ``min_tpr`` and ``min_tnr``, made at most
``MAX_AGE_DAYS`` before the run. Anything else makes it **advisory**: its failures are
shown, never counted. A grader that never asks the judge has nothing to calibrate (N/A).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gitevals.jsontypes import JSONObject
from gitevals.settings import Judge

#: Past this age a calibration is stale (the seed's "quarterly regardless").
MAX_AGE_DAYS = 90

State = Literal["n/a", "calibrated", "advisory"]


@dataclass(frozen=True)
class Status:
    """The decision for one grader: ``code`` is the lint code of an advisory reason."""

    state: State
    reason: str
    code: str | None = None
    #: (TPR hits, of, TNR hits, of) of a calibrated grader's record, when it has them:
    #: what a judge-corrected pass rate is computed from (``gitevals.calibration.corrected``)
    counts: tuple[int, int, int, int] | None = None

    @property
    def advisory(self) -> bool:
        return self.state == "advisory"

    def as_dict(self) -> JSONObject:
        return {"status": self.state, "reason": self.reason, "code": self.code}


def _advisory(code: str, reason: str) -> Status:
    return Status("advisory", reason, code)


def status(grader: str, asks_judge: bool, grader_blob: str | None, judge: Judge | None,
           record: JSONObject | None, problem: str | None, now: datetime) -> Status:
    """The calibration status of ``grader`` at ``now`` (timezone-aware, UTC).

    ``record``/``problem``: the parsed record, or None and why it could not be used
    (``problem`` None too: there is no record)."""
    if not asks_judge:
        return Status("n/a", "it does not call t.llm or t.judge: nothing to calibrate")
    fix = f"run `gitevals calibrate {grader} --labels FILE --final` and commit the record"
    if record is None:
        if problem is not None:
            return _advisory("GE511", f"its calibration record cannot be used ({problem}); "
                                      f"{fix}")
        return _advisory("GE510", f"it is not calibrated; {fix}")
    if record.get("final") is not True:
        return _advisory("GE512", "it was measured on the dev split only; when the prompt "
                                  f"is settled, {fix}")
    if grader_blob is None or record.get("grader_blob") != grader_blob:
        return _advisory("GE513", "it changed since it was calibrated (the record is for "
                                  f"blob {str(record.get('grader_blob'))[:12]}); {fix}")
    model = judge.model if judge is not None else None
    if model is None or record.get("judge_model") != model:
        return _advisory("GE514", f"it was calibrated with judge model "
                                  f"{record.get('judge_model')!r}, not {model!r}; {fix}")
    below = below_bar(record, judge)
    if below:
        return _advisory("GE515", f"it is below the bar: {below}; improve the grader "
                                  "(prompt, few-shot examples) and calibrate it again")
    age = _age(record, now)
    if age is None:
        return _advisory("GE511", f"its calibration record has no readable date; {fix}")
    if age > timedelta(days=MAX_AGE_DAYS):
        return _advisory("GE516", f"its calibration is {age.days} days old, over "
                                  f"{MAX_AGE_DAYS}; {fix}")
    return Status("calibrated", f"measured {str(record['date'])[:10]}: "
                                f"{_rates(record)}", None, counts_of(record))


def counts_of(record: JSONObject) -> tuple[int, int, int, int] | None:
    """(TPR hits, of, TNR hits, of) of a record, or None when either rate lacks whole,
    consistent counts (a record is read from a tree: it may be forged or hand-written)."""
    out: list[int] = []
    for key in ("tpr", "tnr"):
        rate = record.get(key)
        hits = rate.get("hits") if isinstance(rate, dict) else None
        of = rate.get("of") if isinstance(rate, dict) else None
        if type(hits) is not int or type(of) is not int or not 0 <= hits <= of or of == 0:
            return None
        out += [hits, of]
    return out[0], out[1], out[2], out[3]


def _value(record: JSONObject, key: str) -> float | None:
    rate = record.get(key)
    value = rate.get("value") if isinstance(rate, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def below_bar(record: JSONObject, judge: Judge | None) -> str:
    """What falls short of the bar ("" when nothing does); no measurement is short."""
    bars = (("TPR", "tpr", judge.min_tpr if judge else 0.9),
            ("TNR", "tnr", judge.min_tnr if judge else 0.9))
    short = []
    for label, key, bar in bars:
        value = _value(record, key)
        if value is None:
            short.append(f"{label} not measured (no item of that label was judged)")
        elif value < bar:
            short.append(f"{label} {value:.2f} < {bar:g}")
    return ", ".join(short)


def _rates(record: JSONObject) -> str:
    return ", ".join(f"{label} {_value(record, key):.2f}" for label, key in
                     (("TPR", "tpr"), ("TNR", "tnr")) if _value(record, key) is not None)


def _age(record: JSONObject, now: datetime) -> timedelta | None:
    try:
        when = datetime.fromisoformat(str(record.get("date")).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return now - when
