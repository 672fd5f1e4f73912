"""The case model: frozen values built from a case document that passed lint.

Raw dicts stop here. ``load_case`` assumes the document is schema-valid (lint
runs first); it is pure and positions stay in the ``Document``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gitevals.jsontypes import JSON, JSONObject
from gitevals.validation import load, subschema

DEFAULT_TRIALS = 1
DEFAULT_TIMEOUT = 300.0
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _assertion_kinds() -> tuple[str, ...]:
    # The case schema is the source of truth (editors read it too); reading it here
    # costs one small JSON parse, shared with lint through validation.load's cache.
    return tuple(subschema(load("case"), "$defs", "assertion", "properties"))


#: The assertion kinds, in the schema's order (the order the README lists them):
#: ``grader`` is judged by scoring, every other kind by ``run.assertions.CHECKS``.
ASSERTION_KINDS: tuple[str, ...] = _assertion_kinds()


def parse_duration(value: object) -> float:
    """``300s`` / ``5m`` / ``1.5h`` / ``250ms`` (or a bare number of seconds) -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.match(str(value).strip())
    if not m:
        raise ValueError(f"not a duration: {value!r} (write 300s, 5m or 1h)")
    return float(m.group(1)) * _UNIT[m.group(2)]


@dataclass(frozen=True)
class Assertion:
    """One expectation: ``kind`` (a key of the assertion registry) and its ``arg``."""

    kind: str
    arg: JSON

    def as_dict(self) -> JSONObject:
        return {self.kind: self.arg}

    def key(self) -> str:
        """A stable text form, for diffs and messages."""
        return json.dumps(self.as_dict(), sort_keys=True)


@dataclass(frozen=True)
class Scenario:
    id: str
    user: tuple[str, ...]
    expect: tuple[Assertion, ...]
    trials: int
    timeout: float

    def graders(self) -> tuple[str, ...]:
        # A grader's argument is an object with a string ``name`` (the schema's words).
        return tuple(str(a.arg["name"]) for a in self.expect
                     if a.kind == "grader" and isinstance(a.arg, dict))


@dataclass(frozen=True)
class Case:
    """One case file: ``name`` is its file name without directory or ``.yaml``."""

    name: str
    path: str
    scenarios: tuple[Scenario, ...]
    #: ``cluster:`` -- cases naming one cluster move together (diff's suite interval)
    cluster: str | None = None

    @property
    def trials(self) -> int:
        """Conversations a run makes: the most any scenario asks for."""
        return max((s.trials for s in self.scenarios), default=0)


def case_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    for ext in (".yaml", ".yml"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def _scenario(raw: JSONObject, trials: int, timeout: float) -> Scenario:
    user = raw["user"]
    turns = (user,) if isinstance(user, str) else tuple(_text(u) for u in _list(user, "user"))
    expect = tuple(
        Assertion(kind, arg)
        for item in _list(raw.get("expect", []), "expect")
        for kind, arg in _object(item, "an assertion").items()
    )
    return Scenario(
        id=str(raw["id"]),
        user=turns,
        expect=expect,
        trials=_int(raw.get("trials", trials)),
        timeout=parse_duration(raw["timeout"]) if "timeout" in raw else timeout,
    )


def load_case(path: str, data: JSONObject) -> Case:
    """A lint-clean case document -> ``Case``.

    A document lint refuses may raise ``KeyError``, ``TypeError`` or ``ValueError``
    (callers turn that into a finding).
    """
    defaults = _object(data.get("defaults") or {}, "defaults")
    trials = _int(defaults.get("trials", DEFAULT_TRIALS))
    timeout = parse_duration(defaults["timeout"]) if "timeout" in defaults else DEFAULT_TIMEOUT
    scenarios = tuple(_scenario(_object(s, "a scenario"), trials, timeout)
                      for s in _list(data["scenarios"], "scenarios"))
    cluster = data.get("cluster")
    return Case(case_name(path), path, scenarios,
                cluster if isinstance(cluster, str) else None)


# -- narrowing the document (a lint-clean one always has these shapes) ---------------


def _object(value: JSON, what: str) -> JSONObject:
    if isinstance(value, dict):
        return value
    raise TypeError(f"{what} must be a mapping, not {value!r}")


def _list(value: JSON, what: str) -> list[JSON]:
    if isinstance(value, list):
        return value
    raise TypeError(f"{what} must be a list, not {value!r}")


def _text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"a user turn must be text, not {value!r}")


def _int(value: JSON) -> int:
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"expected an integer, not {value!r}")
