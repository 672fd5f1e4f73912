"""``[tool.gitevals.judge]`` as a value: the judge's settings and their defaults, once.

``gitevals.settings`` reads the table into a ``Judge`` (and exports it as
``settings.Judge``); ``gitevals.run.judge`` asks the judge as it says, in the grader
worker too, which receives it as ``as_config`` and reads it back with ``from_table``.
A module of its own, importing nothing but ``typing``, so that the worker does not
import the settings reader (its dataclasses, TOML and regular expressions) at every start:
a grader's limit counts from its worker's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypeGuard

if TYPE_CHECKING:
    from gitevals.jsontypes import JSON, JSONObject

#: Seconds one attempt may wait for the judge's answer.
TIMEOUT = 60.0
#: Attempts after the first, on HTTP 429, 5xx and timeouts (``gitevals.run.judge``).
RETRIES = 3
#: The calibration bar, TPR and TNR (``gitevals.calibration.status``).
MIN_RATE = 0.9


class Judge(NamedTuple):
    """An OpenAI-compatible endpoint for ``t.llm`` with a pinned model; ``family`` is the
    judge's model family (it must differ from the target's)."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = TIMEOUT
    retries: int = RETRIES
    min_tpr: float = MIN_RATE
    min_tnr: float = MIN_RATE
    family: str | None = None

    @classmethod
    def from_table(cls, table: JSONObject) -> Judge | None:
        """The judge a ``[judge]`` table (or its ``as_config`` form) describes; None
        without ``base_url`` and ``model``. A value of the wrong type, a timeout that is
        not above 0, or negative retries, takes the default."""
        if "base_url" not in table or "model" not in table:
            return None
        timeout, retries = table.get("timeout"), table.get("retries")
        return cls(str(table["base_url"]), str(table["model"]), _text(table.get("api_key_env")),
                   float(timeout) if _number(timeout) and timeout > 0 else TIMEOUT,
                   retries if _count(retries) else RETRIES,
                   _rate(table.get("min_tpr")), _rate(table.get("min_tnr")),
                   _text(table.get("family")))

    def as_config(self) -> JSONObject:
        """What the grader worker receives (as JSON): how to ask the judge."""
        return {"base_url": self.base_url, "model": self.model,
                "api_key_env": self.api_key_env, "timeout": self.timeout,
                "retries": self.retries}


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: JSON) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: JSON) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rate(value: JSON) -> float:
    """A calibration bar (``min_tpr``/``min_tnr``): the schema keeps it in 0..1."""
    return float(value) if _number(value) else MIN_RATE
