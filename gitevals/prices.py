"""Prices per model (``[tool.gitevals.pricing]``): the table settings parse.

Core, beside ``settings``: the table of a commit's settings, or of an artifact that
recorded it. An artifact may be forged, so it is read defensively (finite numbers from
0 to ``MAX_PRICE``); a row that is not two usable numbers is left out. What a run spent
is ``run/pricing.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.jsontypes import JSON, JSONObject

#: The highest price a row may give, in USD per million tokens (the schema's bound).
MAX_PRICE = 1_000_000.0

@dataclass(frozen=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class Prices:
    """The pricing table: model -> ``Price``; ``target`` prices a reply that names no model;
    ``judge`` is the judge's pinned model (from ``[judge] model``)."""

    models: dict[str, Price] = field(default_factory=dict)
    target: str | None = None
    judge: str | None = None

    def of(self, model: str | None) -> Price | None:
        return self.models.get(model) if model is not None else None


def _price(value: JSON) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= MAX_PRICE else None


def prices_of(settings: JSONObject) -> Prices:
    """The prices of a settings table (as written, or as an artifact recorded it); a
    row that is not two usable numbers is left out, never guessed."""
    table = settings.get("pricing")
    judge = settings.get("judge")
    model = judge.get("model") if isinstance(judge, dict) else None
    if not isinstance(table, dict):
        return Prices(judge=model if isinstance(model, str) else None)
    rows = table.get("models")
    models: dict[str, Price] = {}
    for name, row in (rows.items() if isinstance(rows, dict) else ()):
        if isinstance(row, dict):
            pi, po = _price(row.get("input")), _price(row.get("output"))
            if pi is not None and po is not None:
                models[name] = Price(pi, po)
    target = table.get("target")
    return Prices(models, target if isinstance(target, str) else None,
                  model if isinstance(model, str) else None)
