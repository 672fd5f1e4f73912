"""Multiple-choice drift slices (``choices: [A, B, C, D]``), scored by gitevals itself.

Pure: a reply and the allowed labels in, the label chosen and how out. Two ways, the
goldens document's order of preference:

- **log-probability**: the target reports ``choice_logprobs`` (label -> log-probability,
  ``schemas/target-reply.schema.json``); the choice is the argmax over the allowed
  labels, so a model that preambles still scores on its answer distribution;
- **generate and extract**: otherwise the label is read from ``final_answer`` (the whole
  answer is a label, ``(B)``, ``B.``, ``B) Paris``; or the last ``answer is B`` /
  ``Answer: (B)`` in it). An answer that holds none is *unparsed*: the executor sends the
  row once more with the larger token budget before scoring it wrong.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from gitevals.jsontypes import JSONObject

#: The reserved grader name of a multiple-choice item (no ``.``: never a tree grader).
GRADER = "choice"
#: The token budgets of the first attempt and of the one retry, unless the slice says.
DEFAULT_BUDGET = (64, 1024)
LOGPROB, EXTRACT, UNPARSED, TIE = "logprob", "extract", "unparsed", "tie"


@dataclass(frozen=True)
class Spec:
    """A slice's multiple-choice settings: its labels and the two token budgets."""

    labels: tuple[str, ...]
    budget: tuple[int, int] = DEFAULT_BUDGET


@dataclass(frozen=True)
class Scored:
    """What one reply chose: ``label`` (None when unparsed or a tie), by which ``method``,
    and a phrase saying why."""

    label: str | None
    method: str
    why: str


def expected(row: JSONObject, labels: tuple[str, ...]) -> str | None:
    """The row's correct label (its ``expected``), None when it is not one of ``labels``."""
    value = row.get("expected")
    return value if isinstance(value, str) and value in labels else None


def score(reply: JSONObject, labels: tuple[str, ...]) -> Scored:
    """The label ``reply`` chose: by log-probability when it reports any for an allowed
    label, else extracted from its ``final_answer``."""
    logprobs = reply.get("choice_logprobs")
    if isinstance(logprobs, dict):
        known = {k: float(v) for k, v in logprobs.items() if k in labels
                 and isinstance(v, (int, float)) and not isinstance(v, bool)
                 and math.isfinite(v)}
        if known:
            return _argmax(known, labels)
    text = reply.get("final_answer")
    label = extract(text, labels) if isinstance(text, str) else None
    if label is None:
        return Scored(None, UNPARSED, "no choice of " + "/".join(labels) + " in the answer")
    return Scored(label, EXTRACT, f"extracted {label} from the answer")


def _argmax(known: dict[str, float], labels: tuple[str, ...]) -> Scored:
    best = max(known.values())
    top = [k for k in labels if known.get(k) == best]
    if len(top) > 1:
        return Scored(None, TIE, f"{' and '.join(top)} share the highest log-probability "
                                 f"({best:.3g}): no single choice")
    rest = [k for k in labels if k in known and k != top[0]]
    nxt = max(rest, key=lambda k: known[k]) if rest else None  # the first of a tie
    after = f"; next {nxt} {known[nxt]:.3g}" if nxt is not None else ""
    return Scored(top[0], LOGPROB, f"chose {top[0]} by log-probability ({best:.3g}{after})")


def extract(text: str, labels: tuple[str, ...]) -> str | None:
    """The label a generated answer gives, or None: the whole answer (``B``, ``(B)``,
    ``B.``, ``B) Paris``), else the last ``answer is B`` / ``answer: (B)`` in it. A label
    inside a word or a sentence (``A cat``) is not an answer."""
    whole, stated = _patterns(labels)
    head = whole.match(text)
    if head is not None:
        return head.group(1)
    found = stated.findall(text)
    return str(found[-1]) if found else None


@lru_cache(maxsize=64)
def _patterns(labels: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    alts = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    whole = re.compile(rf"\s*[(\[]?\*{{0,2}}({alts})"
                       r"(?:\*{0,2}[)\]]|\*{0,2}\s*$|[.:]|\s+[-:]\s)")
    stated = re.compile(rf"(?i:\banswer\b)\s*(?:(?i:is)\b)?\s*[:=]?\s*[(\[*]*\s*({alts})\b")
    return whole, stated


def verdict(label: str | None, want: str, scored: Scored, retried: int | None) -> JSONObject:
    """The grader-shaped answer (``{"pass", "why"}``) of a multiple-choice item; ``retried``
    is the larger budget when the first answer did not parse."""
    after = (f" (retried at max_tokens {retried}: the first answer did not parse)"
             if retried is not None else "")
    if label is None:
        return {"pass": False, "why": f"{scored.why}{after}: scored wrong (expected {want})"}
    if label == want:
        return {"pass": True, "why": f"{scored.why}{after}"}
    return {"pass": False, "why": f"{scored.why}{after}, expected {want}"}
