"""JSON Schema validation of plain data, fast when valid, precise when not.

The schema files in ``schemas/`` are the one source of truth (editors use the
same files). A document is first checked by code that fastjsonschema generated
from the schema: that code is written once to the user's cache directory, keyed
by the schema's bytes and the fastjsonschema version, so later processes only
import it and never import fastjsonschema nor jsonschema. Only when it rejects a
document does ``jsonschema`` explain why, reporting *every* error, each as a
``SchemaError`` with the path to point at and a one-line message.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import marshal
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gitevals.files import cache_dir, write_atomic

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"

#: Keywords that only annotate: dropped from the copy fastjsonschema compiles.
_ANNOTATIONS = frozenset({"description", "title", "$comment", "examples", "default"})
#: Keywords whose value maps *names* to subschemas (names must survive the copy).
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions",
                    "dependentSchemas"})
# The generated module imports only these; a two-line stand-in avoids importing
# fastjsonschema (and its code generators) in every process that validates.
_EXC_IMPORT = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException"
_EXC_STANDIN = ("class JsonSchemaValueException(ValueError):\n"
                "    pass\n"
                "JsonSchemaValuesException = JsonSchemaValueException\n")

#: Bump when ``_compilable`` or ``_generate`` change: part of the cache key.
_GENERATOR = b"gitevals-schema-3"
_DOLLAR = re.compile(r"(?<!\\)\$")

Path_ = tuple[str | int, ...]


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


def schema_path(name: str) -> Path:
    """The file of schema ``name`` (``"case"`` -> ``schemas/case.schema.json``)."""
    return SCHEMA_DIR / f"{name}.schema.json"


def validate(schema_name: str, data: Any) -> list[SchemaError]:
    """Every way ``data`` violates schema ``schema_name``; ``[]`` when valid."""
    if is_valid(schema_name, data):
        return []
    return explain(schema_name, data)


def prepare(schema_name: str) -> None:
    """Build (or load) the compiled validator now: call it once in a parent process
    before starting workers, so a cold cache is filled once, not once per worker."""
    _compiled(schema_name)


def is_valid(schema_name: str, data: Any) -> bool:
    """Fast yes/no from the compiled validator (no jsonschema import)."""
    try:
        _compiled(schema_name)(data)
    except ValueError:
        return False
    except (TypeError, RecursionError):  # exotic data: let jsonschema decide
        return not explain(schema_name, data)
    return True


def explain(schema_name: str, data: Any) -> list[SchemaError]:
    """All errors of ``data`` according to jsonschema (slow path), sorted by path."""
    validator = _jsonschema_validator(schema_name)
    errors = list(validator.iter_errors(data))
    # A value of the wrong type also fails its const/enum/pattern: say it once.
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    out: list[SchemaError] = []
    for err in errors:
        if err.validator != "type" and tuple(err.absolute_path) in mistyped:
            continue
        out.extend(_convert(err))
    return sorted(out, key=lambda e: ([(isinstance(p, str), p) for p in e.path],
                                      e.keyword, e.message))


# -- the compiled validator ------------------------------------------------


@cache
def _schema_bytes(name: str) -> bytes:
    return schema_path(name).read_bytes()


@cache
def load(name: str) -> dict[str, Any]:
    """Schema ``name`` as data (parsed once per process; do not mutate)."""
    data: dict[str, Any] = json.loads(_schema_bytes(name))
    return data


def _fast_version() -> bytes:
    """The installed fastjsonschema's version file, read without importing it
    (``importlib.metadata`` alone costs ~20 ms of start-up)."""
    spec = importlib.util.find_spec("fastjsonschema")
    if spec is None or not spec.submodule_search_locations:
        return b"missing"
    version = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        return version.read_bytes()
    except OSError:
        return b"unknown"


@cache
def _compiled(name: str) -> Callable[[Any], Any]:
    """The validator for ``name``: imported from the cache, generated on a miss."""
    key = hashlib.sha256(b"\0".join([_GENERATOR, _schema_bytes(name), _fast_version()])
                         ).hexdigest()
    prefix = f"gitevals_schema_{re.sub(r'[^0-9A-Za-z_]', '_', name)}_"
    module = prefix + key[:24]
    source = cache_dir("schemas", f"{module}.py")
    # Bytecode is cached by hand: PYTHONDONTWRITEBYTECODE would make every
    # process recompile the ~30 KB module (4 ms against 1 ms to unmarshal).
    code_file = source.with_suffix(f".{sys.implementation.cache_tag}.bin")
    try:
        return _run(marshal.loads(code_file.read_bytes()))
    except Exception:  # not cached yet, or damaged: rebuild below, never fail lint
        pass
    text = _generate(name)
    code = compile(text, str(source), "exec")
    with contextlib.suppress(OSError):  # a read-only cache only costs speed
        write_atomic(source, text, fsync=False)  # a lost file is regenerated
        write_atomic(code_file, marshal.dumps(code), fsync=False)
        _prune(source.parent, prefix, module)
    return _run(code)


def _prune(folder: Path, prefix: str, keep: str) -> None:
    """Remove validators generated for older versions of the same schema."""
    stale = re.compile(re.escape(prefix) + r"[0-9a-f]{24}\.")
    for old in folder.iterdir():
        if stale.match(old.name) and not old.name.startswith(keep + "."):
            with contextlib.suppress(OSError):
                old.unlink()


def _generate(name: str) -> str:
    import fastjsonschema

    code: str = fastjsonschema.compile_to_code(
        _compilable(load(name)), use_default=False, detailed_exceptions=False)
    root = re.search(r"^def (\w+)\(", code, re.M)
    if root is None:  # pragma: no cover - fastjsonschema always defines one
        raise RuntimeError("fastjsonschema generated no function")
    return code.replace(_EXC_IMPORT, _EXC_STANDIN) + f"\nVALIDATE = {root.group(1)}\n"


def _compilable(schema: Any, root: Any = None, named: bool = False,
                stack: tuple[str, ...] = ()) -> Any:
    """A copy for fastjsonschema with the same meaning, shaped for speed.

    Annotations are dropped and local ``$ref``s inlined (a call per ``$ref``, and
    the error-path string it builds, cost more than the check itself);
    ``const: x`` is spelled ``enum: [x]`` (fastjsonschema's const generator fails
    without detailed exceptions).
    """
    root = schema if root is None else root
    if isinstance(schema, list):
        return [_compilable(v, root, False, stack) for v in schema]
    if not isinstance(schema, dict):
        return schema
    if named:
        return {k: _compilable(v, root, False, stack) for k, v in schema.items()}
    ref = schema.get("$ref")
    if isinstance(ref, str) and len(schema) == 1 and ref.startswith("#/") and ref not in stack:
        return _compilable(_pointer(root, ref), root, False, (*stack, ref))
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _ANNOTATIONS:
            continue
        out["enum" if k == "const" else k] = (
            [v] if k == "const" else _compilable(v, root, k in _NAMED, stack))
    if isinstance(schema.get("const"), bool | int | float):
        # Compiled `enum` tests with Python's `in`, where True == 1: pin the JSON type.
        const = schema["const"]
        kind = "boolean" if isinstance(const, bool) else "number"
        out["allOf"] = [*out.get("allOf", []), {"type": kind}]
    return out


def _pointer(root: Any, ref: str) -> Any:
    """Resolve a local JSON pointer such as ``#/$defs/name``."""
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _run(code: Any) -> Callable[[Any], Any]:
    namespace: dict[str, Any] = {"__name__": "gitevals_schema"}
    exec(code, namespace)  # our own generated code, from our own schema file
    fn: Callable[[Any], Any] = namespace["VALIDATE"]
    return fn


# -- explaining errors -------------------------------------------------------


@cache
def _jsonschema_validator(name: str) -> Any:
    import jsonschema

    # `pattern` as ECMA-262 reads it (and editors, and the compiled validator):
    # `$` ends the string. Python's re.search would also let "abc\n" match "^abc$".
    cls = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        {"pattern": _ecma_pattern})
    return cls(load(name))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    import jsonschema

    if not isinstance(instance, str):
        return
    if _ecma_regex(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _ecma_regex(pattern: str) -> re.Pattern[str]:
    # The same rewrite fastjsonschema makes: every unescaped `$` becomes `\Z`.
    return re.compile(_DOLLAR.sub(r"\\Z", pattern))


def _convert(err: Any) -> Iterator[SchemaError]:
    """One jsonschema error -> SchemaErrors with the best position and a one-line message."""
    path: Path_ = tuple(err.absolute_path)
    kw, schema, value = err.validator, err.schema, err.instance
    label = _label(path)
    if kw == "additionalProperties" and isinstance(value, dict):
        yield from _unknown_keys(path, value, schema)
    elif kw == "required" and isinstance(value, dict):
        missing = [k for k in err.validator_value if k not in value]
        for k in missing:
            yield SchemaError(path, f"{label or 'the file'} is missing required key {k!r}; "
                              f"add it ({_shape(schema)})", kw)
    elif kw == "type":
        yield SchemaError(path, _type_message(label, err.validator_value, value, schema), kw)
    elif kw in ("minProperties", "maxProperties") and isinstance(value, dict):
        yield SchemaError(path, _count_message(label, value, schema), kw)
    else:
        yield SchemaError(path, _value_message(label, kw, err, schema, value), kw)


def _unknown_keys(path: Path_, value: dict[str, Any], schema: dict[str, Any]
                  ) -> Iterator[SchemaError]:
    allowed = tuple(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
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


def _kind(value: Any) -> str:
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


def _type_message(label: str, expected: Any, value: Any, schema: dict[str, Any]) -> str:
    types = [expected] if isinstance(expected, str) else list(expected)
    want = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
    msg = f"{label or 'the file'} must be {want}, got {_kind(value)}"
    if "string" in types and isinstance(value, int | float) and not isinstance(value, bool):
        pattern = schema.get("pattern")
        if pattern and not _ecma_regex(pattern).search(str(value)):
            return msg + f"; {_how(schema)}"
        return msg + "; quote it"
    if "object" in types and "properties" in schema:
        return msg + f"; write {_shape(schema)}"
    if value is None:
        return msg + "; give it a value or remove the key"
    if "array" in types:
        return msg + "; write a list, one '- item' per line"
    return msg


def _how(schema: dict[str, Any]) -> str:
    """What a valid string looks like: the schema's examples, else its description."""
    examples = schema.get("examples")
    if examples:
        return "write it like " + " or ".join(map(str, examples))
    text = str(schema.get("description") or f"it must match {schema.get('pattern')}")
    return text[:1].lower() + text[1:].rstrip(".")


def _shape(schema: dict[str, Any]) -> str:
    """``{name, args?}``-style summary of an object schema's keys."""
    req = schema.get("required", [])
    keys = [k if k in req else f"{k}?" for k in schema.get("properties", {})]
    return "{" + ", ".join(keys) + "}"


def _count_message(label: str, value: dict[str, Any], schema: dict[str, Any]) -> str:
    lo, hi = schema.get("minProperties", 0), schema.get("maxProperties")
    keys = ", ".join(map(str, value)) or "none"
    if lo == hi == 1:
        return f"{label} holds {len(value)} keys ({keys}); each item has exactly one key"
    return f"{label} holds {len(value)} keys ({keys}); allowed {lo}..{hi}"


def _value_message(label: str, kw: str, err: Any, schema: dict[str, Any], value: Any) -> str:
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
    if kw == "enum":
        choices = ", ".join(json.dumps(v) for v in bound)
        return f"{where} must be one of {choices}, got {_kind(value)}"
    first = str(err.message).splitlines()[0] if err.message else kw
    return f"{where}: {_clip(first, 120)}"


def _short(value: Any, limit: int = 40) -> str:
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
