"""Schema findings worded for the people who write case files.

Validation itself is :mod:`gitevals.validation` (compiled check, jsonschema to
explain); this module turns each jsonschema error of a rejected document into
``SchemaError``s with the path to point at and a one-line message that says what
to write instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals import validation
from gitevals.jsontypes import JSON

# `x as x` re-exports: lint/cases.py, lint/__init__.py and commands/init.py import
# these from here.
from gitevals.validation import SCHEMA_DIR as SCHEMA_DIR
from gitevals.validation import JsonPath as Path_
from gitevals.validation import ecma_regex
from gitevals.validation import is_valid as is_valid
from gitevals.validation import load as load
from gitevals.validation import prepare as prepare
from gitevals.validation import schema_path as schema_path

if TYPE_CHECKING:
    from jsonschema import ValidationError

#: The subschema an error was raised in (jsonschema's ``err.schema``).
_Schema = Mapping[str, JSON]


@dataclass(frozen=True)
class SchemaError:
    """One schema violation.

    ``path`` leads to the offending value; with ``key`` it leads to a mapping key
    (the last part) instead. ``keyword`` is the JSON Schema keyword that failed;
    for an unknown key, ``allowed`` holds the names the mapping accepts and
    ``suggestion`` the closest of them, if any.
    """

    path: Path_
    message: str
    keyword: str
    key: bool = False
    allowed: tuple[str, ...] = ()
    suggestion: str | None = None


def validate(schema_name: str, data: JSON) -> list[SchemaError]:
    """Every way ``data`` violates schema ``schema_name``; ``[]`` when valid."""
    if validation.is_valid(schema_name, data):
        return []
    return explain(schema_name, data)


def explain(schema_name: str, data: JSON) -> list[SchemaError]:
    """All errors of ``data`` according to jsonschema (slow path), sorted by path."""
    errors = validation.errors(schema_name, data)
    # A value of the wrong type also fails its const/enum/pattern: say it once.
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    out: list[SchemaError] = []
    for err in errors:
        if err.validator != "type" and tuple(err.absolute_path) in mistyped:
            continue
        out.extend(_convert(err))
    return sorted(out, key=lambda e: ([(isinstance(p, str), p) for p in e.path],
                                      e.keyword, e.message))


def _convert(err: ValidationError) -> Iterator[SchemaError]:
    """One jsonschema error -> SchemaErrors with the best position and a one-line message."""
    path: Path_ = tuple(err.absolute_path)
    kw, value = str(err.validator), err.instance
    # A boolean subschema (`false`) has no keywords to quote.
    schema: _Schema = err.schema if isinstance(err.schema, Mapping) else {}
    label = _label(path)
    if kw == "additionalProperties" and isinstance(value, dict):
        yield from _unknown_keys(path, value, schema)
    elif kw == "required" and isinstance(value, dict):
        missing = [k for k in _names(schema, "required") if k not in value]
        for k in missing:
            yield SchemaError(path, f"{label or 'the file'} is missing required key {k!r}; "
                              f"add it ({_shape(schema)})", kw)
    elif kw == "type":
        yield SchemaError(path, _type_message(label, err.validator_value, value, schema), kw)
    elif kw in ("minProperties", "maxProperties") and isinstance(value, dict):
        yield SchemaError(path, _count_message(label, value, schema), kw)
    else:
        yield SchemaError(path, _value_message(label, kw, err, schema, value), kw)


def _names(schema: _Schema, keyword: str) -> tuple[str, ...]:
    """The names a keyword lists (``required``) or maps (``properties``)."""
    value = schema.get(keyword)
    return tuple(str(k) for k in value) if isinstance(value, dict | list) else ()


def _unknown_keys(path: Path_, value: Mapping[str, object], schema: _Schema
                  ) -> Iterator[SchemaError]:
    allowed = _names(schema, "properties")
    patterns = [re.compile(p) for p in _names(schema, "patternProperties")]
    for k in value:
        if k in allowed or any(p.search(str(k)) for p in patterns):
            continue
        near = closest(str(k), allowed)
        hint = f"did you mean {near}?" if near else f"allowed: {', '.join(allowed)}"
        where = f" in {_label(path)}" if path else ""
        yield SchemaError((*path, k), f"unknown key {_short(k)}{where}; {hint}",
                          "additionalProperties", key=True, allowed=allowed, suggestion=near)


def _label(path: Path_) -> str:
    """``("scenarios", 0, "user", 1)`` -> ``scenarios[0].user[1]``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}


def _kind(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    name = {int: "an integer", float: "a number", str: "a string"}.get(type(value), "a value")
    return f"{_short(value)} ({name})"


def _type_message(label: str, expected: object, value: object, schema: _Schema) -> str:
    types = [expected] if isinstance(expected, str) else \
        [str(t) for t in expected] if isinstance(expected, list) else []
    want = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
    msg = f"{label or 'the file'} must be {want}, got {_kind(value)}"
    if "string" in types and isinstance(value, int | float) and not isinstance(value, bool):
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern and not ecma_regex(pattern).search(str(value)):
            return msg + f"; {_how(schema)}"
        return msg + "; quote it"
    if "object" in types and "properties" in schema:
        return msg + f"; write {_shape(schema)}"
    if value is None:
        return msg + "; give it a value or remove the key"
    if "array" in types:
        return msg + "; write a list, one '- item' per line"
    return msg


def _how(schema: _Schema) -> str:
    """What a valid string looks like: the schema's examples, else its description."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return "write it like " + " or ".join(map(str, examples))
    text = str(schema.get("description") or f"it must match {schema.get('pattern')}")
    return text[:1].lower() + text[1:].rstrip(".")


def _shape(schema: _Schema) -> str:
    """``{name, args?}``-style summary of an object schema's keys."""
    req = _names(schema, "required")
    keys = [k if k in req else f"{k}?" for k in _names(schema, "properties")]
    return "{" + ", ".join(keys) + "}"


def _count_message(label: str, value: Mapping[str, object], schema: _Schema) -> str:
    lo, hi = schema.get("minProperties", 0), schema.get("maxProperties")
    keys = ", ".join(map(str, value)) or "none"
    if lo == hi == 1:
        return f"{label} holds {len(value)} keys ({keys}); each item has exactly one key"
    return f"{label} holds {len(value)} keys ({keys}); allowed {lo}..{hi}"


def _value_message(label: str, kw: str, err: ValidationError, schema: _Schema,
                   value: object) -> str:
    where = label or "the file"
    bound = err.validator_value
    if kw == "pattern":
        return f"{where} {_short(value)} is not valid; {_how(schema)}"
    if kw in ("minLength", "minItems") and bound == 1:
        return f"{where} is empty; write at least one {'item' if kw == 'minItems' else 'character'}"
    if kw in ("minimum", "exclusiveMinimum"):
        rel = "at least" if kw == "minimum" else "above"
        return f"{where} is {_short(value)}, must be {rel} {bound}"
    if kw in ("maximum", "exclusiveMaximum"):
        rel = "at most" if kw == "maximum" else "below"
        return f"{where} is {_short(value)}, must be {rel} {bound}"
    if kw == "const":
        return f"{where} must be {json.dumps(bound)}, got {_kind(value)}"
    if kw == "enum" and isinstance(bound, list):
        choices = ", ".join(json.dumps(v) for v in bound)
        return f"{where} must be one of {choices}, got {_kind(value)}"
    first = str(err.message).splitlines()[0] if err.message else kw
    return f"{where}: {_clip(first, 120)}"


def _short(value: object, limit: int = 40) -> str:
    """A value as it would be written, cut to ``limit`` characters."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return _clip(text, limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def closest(word: str, names: Iterable[str]) -> str | None:
    """The name ``word`` was probably meant to be, or None."""
    import difflib

    near = difflib.get_close_matches(word, list(names), n=1, cutoff=0.6)
    return near[0] if near else None
