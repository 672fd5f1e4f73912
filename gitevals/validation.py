"""The one way gitevals validates data against its JSON Schemas: compile once, explain on failure.

The files in ``schemas/`` are the one source of truth (editors use the same files).
:func:`validator` answers yes/no with code fastjsonschema generated from a schema;
that code is written once to the user's cache directory, keyed by the schema's bytes
and the fastjsonschema version, so later processes only load it and import neither
fastjsonschema nor jsonschema. Only a rejected document asks ``jsonschema`` why
(:func:`errors`, :func:`best_error`), with ``pattern`` read as editors read it.

A schema can be narrowed for speed: ``definition="result"`` validates against
``$defs/result`` alone, and ``defs={"result": {"type": "object"}}`` replaces
``$defs`` entries (e.g. to leave records opaque that a faster check covers).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import marshal
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING

from gitevals.files import cache_dir, write_atomic
from gitevals.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

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
# Its number checks also accept ``decimal.Decimal``, which no value checked here can be
# (JSON, YAML and TOML are parsed into int and float): a class of its own stands in, so
# a check does not import ``decimal`` (a start of every run and lint, #27).
_DECIMAL_IMPORT = "from decimal import Decimal\n"
_DECIMAL_STANDIN = "class Decimal:  # never instantiated: see gitevals.validation\n    pass\n"

#: Bump when ``_compilable`` or ``_generate`` change: part of the cache key.
_GENERATOR = b"gitevals-schema-4"
_DOLLAR = re.compile(r"(?<!\\)\$")

JsonPath = tuple[str | int, ...]
#: A yes/no check of a JSON value.
Check = Callable[[JSON], bool]
#: The function fastjsonschema generates: raises ``ValueError`` on invalid data.
_Compiled = Callable[[object], object]


@dataclass(frozen=True)
class Violation:
    """jsonschema's best explanation of a rejection: where, which keyword, its words."""

    path: JsonPath
    keyword: str
    message: str


def schema_path(name: str) -> Path:
    """The file of schema ``name`` (``"case"`` -> ``schemas/case.schema.json``)."""
    return SCHEMA_DIR / f"{name}.schema.json"


@cache
def _schema_bytes(name: str) -> bytes:
    return schema_path(name).read_bytes()


@cache
def load(name: str) -> JSONObject:
    """Schema ``name`` as data (parsed once per process; do not mutate)."""
    data: JSONObject = json.loads(_schema_bytes(name))  # our own file: an object
    return data


def subschema(schema: JSON, *keys: str) -> JSONObject:
    """``schema[k1][k2]...`` when each step is an object, else ``{}`` (schemas as data)."""
    for k in keys:
        schema = schema.get(k) if isinstance(schema, dict) else None
    return schema if isinstance(schema, dict) else {}


def document(name: str, *, definition: str | None = None,
             defs: Mapping[str, JSON] | None = None) -> JSONObject:
    """The schema validated: ``name`` with ``defs`` replacing its ``$defs`` entries,
    narrowed to ``$defs/<definition>`` when one is named."""
    schema = load(name)
    if defs:
        schema = {**schema, "$defs": {**subschema(schema, "$defs"), **defs}}
    if definition is not None:
        schema = {"$defs": subschema(schema, "$defs"), "$ref": f"#/$defs/{definition}"}
    return schema


def validator(name: str, *, definition: str | None = None,
              defs: Mapping[str, JSON] | None = None) -> Check:
    """The compiled yes/no check of ``document(name, ...)`` (built once per process)."""
    return _validator(name, definition, _canonical(defs))


def prepare(name: str, *, definition: str | None = None,
            defs: Mapping[str, JSON] | None = None) -> None:
    """Build (or load) a validator now: call it in a parent process before starting
    workers, so a cold cache is filled once, not once per worker."""
    validator(name, definition=definition, defs=defs)


def is_valid(name: str, data: JSON, *, definition: str | None = None,
             defs: Mapping[str, JSON] | None = None) -> bool:
    """True when ``data`` is valid against ``document(name, ...)``."""
    return _validator(name, definition, _canonical(defs))(data)


def errors(name: str, data: JSON, *, definition: str | None = None,
           defs: Mapping[str, JSON] | None = None) -> list[ValidationError]:
    """Every jsonschema error of ``data`` (the slow path: call it for rejected data)."""
    v = _jsonschema_validator(name, definition, _canonical(defs))
    return list(v.iter_errors(data))


def best_error(name: str, data: JSON, *, definition: str | None = None,
               defs: Mapping[str, JSON] | None = None) -> Violation | None:
    """The one error jsonschema ranks most relevant (``best_match``), or None if valid."""
    import jsonschema

    v = _jsonschema_validator(name, definition, _canonical(defs))
    err = jsonschema.exceptions.best_match(v.iter_errors(data))
    if err is None:
        return None
    return Violation(tuple(err.absolute_path), str(err.validator), err.message)


def json_path(path: Sequence[str | int], root: str = "$") -> str:
    """``("cases", 0, "id")`` -> ``$.cases[0].id`` (below ``root``)."""
    return root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _canonical(defs: Mapping[str, JSON] | None) -> str:
    # A hashable spelling of the overrides: the key of every per-process cache.
    return json.dumps(defs, sort_keys=True) if defs else ""


def _parts(definition: str | None, defs: str) -> tuple[JSONObject | None, bytes]:
    """The overrides back as data, and the bytes that tell this variant apart."""
    variant = json.dumps([definition, defs]).encode() if definition or defs else b""
    overrides: JSONObject | None = json.loads(defs) if defs else None  # _canonical's dump
    return overrides, variant


# -- the compiled validator ------------------------------------------------


@cache
def _validator(name: str, definition: str | None, defs: str) -> Check:
    raw = _compiled(name, definition, defs)

    def check(data: JSON) -> bool:
        try:
            raw(data)
        except ValueError:
            return False
        except (TypeError, RecursionError):  # exotic data: let jsonschema decide
            return not _jsonschema_validator(name, definition, defs).is_valid(data)
        return True

    return check


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


def _compiled(name: str, definition: str | None, defs: str) -> _Compiled:
    """The generated function (raises ``ValueError`` on invalid data): imported from
    the cache, generated on a miss."""
    overrides, variant = _parts(definition, defs)
    parts = [_GENERATOR, _schema_bytes(name), _fast_version(), *([variant] if variant else [])]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    prefix = f"gitevals_schema_{re.sub(r'[^0-9A-Za-z_]', '_', name)}_"
    if variant:  # each variant keeps its own file: pruning must not evict the others
        prefix += f"v{hashlib.sha256(variant).hexdigest()[:8]}_"
    module = prefix + key[:24]
    source = cache_dir("schemas", f"{module}.py")
    # Bytecode is cached by hand: PYTHONDONTWRITEBYTECODE would make every
    # process recompile the ~30 KB module (4 ms against 1 ms to unmarshal).
    code_file = source.with_suffix(f".{sys.implementation.cache_tag}.bin")
    try:
        return _run(marshal.loads(code_file.read_bytes()))
    except Exception:  # not cached yet, or damaged: rebuild below, never fail
        pass
    text = _generate(name, definition, overrides)
    code = compile(text, str(source), "exec")
    with contextlib.suppress(OSError):  # a read-only cache only costs speed
        write_atomic(source, text, fsync=False, private=True)  # lost: regenerated
        write_atomic(code_file, marshal.dumps(code), fsync=False, private=True)
        _prune(source.parent, prefix, module)
    return _run(code)


def _prune(folder: Path, prefix: str, keep: str) -> None:
    """Remove validators generated for older versions of the same schema."""
    stale = re.compile(re.escape(prefix) + r"[0-9a-f]{24}\.")
    for old in folder.iterdir():
        if stale.match(old.name) and not old.name.startswith(keep + "."):
            with contextlib.suppress(OSError):
                old.unlink()


def _generate(name: str, definition: str | None, defs: Mapping[str, JSON] | None) -> str:
    import fastjsonschema

    root = document(name, defs=defs)
    node: JSONObject = root if definition is None else {"$ref": f"#/$defs/{definition}"}
    schema = _compilable(node, root)
    if not isinstance(schema, dict):  # pragma: no cover - an object in, an object out
        raise RuntimeError(f"schema {name} did not compile to an object")
    if definition is not None and "$ref" in json.dumps(schema):  # a recursive $ref is kept
        schema["$defs"] = _compilable(subschema(root, "$defs"), root, named=True)
    code: str = fastjsonschema.compile_to_code(
        schema, use_default=False, detailed_exceptions=False)
    fn = re.search(r"^def (\w+)\(", code, re.M)
    if fn is None:  # pragma: no cover - fastjsonschema always defines one
        raise RuntimeError("fastjsonschema generated no function")
    code = code.replace(_EXC_IMPORT, _EXC_STANDIN).replace(_DECIMAL_IMPORT, _DECIMAL_STANDIN)
    return code + f"\nVALIDATE = {fn.group(1)}\n"


def _compilable(schema: JSON, root: JSON = None, named: bool = False,
                stack: tuple[str, ...] = ()) -> JSON:
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
    out: JSONObject = {}
    for k, v in schema.items():
        if k in _ANNOTATIONS:
            continue
        out["enum" if k == "const" else k] = (
            [v] if k == "const" else _compilable(v, root, k in _NAMED, stack))
    if isinstance(schema.get("const"), bool | int | float):
        # Compiled `enum` tests with Python's `in`, where True == 1: pin the JSON type.
        kind = "boolean" if isinstance(schema["const"], bool) else "number"
        all_of = out.get("allOf")
        out["allOf"] = [*(all_of if isinstance(all_of, list) else ()), {"type": kind}]
    return out


def _pointer(root: JSON, ref: str) -> JSON:
    """Resolve a local JSON pointer such as ``#/$defs/name``."""
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(f"{ref}: {part!r} is below a {type(node).__name__}")
    return node


def _run(code: CodeType) -> _Compiled:
    namespace: dict[str, object] = {"__name__": "gitevals_schema"}
    exec(code, namespace)  # our own generated code, from our own schema file
    fn = namespace["VALIDATE"]
    if not callable(fn):  # pragma: no cover - _generate always defines it
        raise RuntimeError("the generated validator defines no VALIDATE function")
    return fn


# -- explaining errors -------------------------------------------------------


@cache
def _jsonschema_validator(name: str, definition: str | None, defs: str) -> Validator:
    import jsonschema

    # `pattern` as ECMA-262 reads it (and editors, and the compiled validator):
    # `$` ends the string. Python's re.search would also let "abc\n" match "^abc$".
    cls = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        {"pattern": _ecma_pattern})
    v: Validator = cls(document(name, definition=definition, defs=_parts(definition, defs)[0]))
    return v


def _ecma_pattern(validator: Validator, pattern: str, instance: object, schema: JSON
                  ) -> Iterator[ValidationError]:
    import jsonschema

    if not isinstance(instance, str):
        return
    if ecma_regex(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def ecma_regex(pattern: str) -> re.Pattern[str]:
    """A schema ``pattern`` compiled as ECMA-262 reads it (``$`` only at the very end)."""
    # The same rewrite fastjsonschema makes: every unescaped `$` becomes `\Z`.
    return re.compile(_DOLLAR.sub(r"\\Z", pattern))


# -- a faster check for flat schemas ---------------------------------------------

_SIMPLE_ANNOTATIONS = _ANNOTATIONS | {"$schema", "$id"}
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "null": (type(None),), "object": (dict,), "array": (list,),
}


@cache
def quick_check(name: str) -> Callable[[JSONObject], bool]:
    """A check of mappings that accepts one only if schema ``name`` does.

    For a flat object schema (:func:`compile_simple`) it is about twice as fast as the
    compiled validator (bench_lint's 200,000 goldens rows: 0.11 s against 0.23 s), but
    it may refuse a valid mapping (``1.0`` as an integer): ask :func:`is_valid` then.
    Other schemas get the compiled validator.
    """
    return compile_simple(load(name)) or validator(name)


def compile_simple(schema: Mapping[str, JSON]) -> Callable[[JSONObject], bool] | None:
    """The sound fast check for ``schema``, or None when its shape is not understood: an
    object with ``required`` and ``properties`` typed by ``type``/``minLength`` or a
    string ``enum``, extra keys allowed."""
    top = set(schema) - _SIMPLE_ANNOTATIONS
    if (schema.get("type") != "object" or top - {"type", "required", "properties",
                                                 "additionalProperties"}
            or schema.get("additionalProperties", True) is not True):
        return None
    required, properties = schema.get("required", []), schema.get("properties", {})
    if not isinstance(required, list) or not isinstance(properties, dict):
        return None
    names = tuple(r for r in required if isinstance(r, str))
    if len(names) != len(required):
        return None
    props: list[tuple[str, tuple[type, ...] | None, int, frozenset[str] | None]] = []
    for name, sub in properties.items():
        rule = _simple_property(sub)
        if rule is None:
            return None
        props.append((name, *rule))
    return _make_check(names, props)


def _simple_property(sub: JSON
                     ) -> tuple[tuple[type, ...] | None, int, frozenset[str] | None] | None:
    if not isinstance(sub, dict) or set(sub) - _SIMPLE_ANNOTATIONS - {"type", "minLength",
                                                                       "enum"}:
        return None
    allowed = sub.get("enum")
    if allowed is not None:  # strings only: JSON equality is then Python's
        if not isinstance(allowed, list) or not all(type(v) is str for v in allowed):
            return None
        rule = _simple_property({k: v for k, v in sub.items() if k != "enum"})
        return None if rule is None else (rule[0], rule[1], frozenset(map(str, allowed)))
    min_len, names = sub.get("minLength", 0), sub.get("type")
    if not isinstance(min_len, int):
        return None
    if names is None:
        return None, min_len, None
    names = [names] if isinstance(names, str) else names
    known = [t for t in names if isinstance(t, str) and t in _TYPES] \
        if isinstance(names, list) else []
    if not isinstance(names, list) or len(known) != len(names):
        return None
    return tuple(c for t in known for c in _TYPES[t]), min_len, None


def _make_check(required: tuple[str, ...],
                props: list[tuple[str, tuple[type, ...] | None, int, frozenset[str] | None]]
                ) -> Callable[[JSONObject], bool]:
    def check(row: JSONObject) -> bool:
        for name in required:
            if name not in row:
                return False
        for name, types, min_len, allowed in props:
            if name not in row:
                continue
            value = row[name]
            cls = type(value)
            # bool is an int subclass: only an exact type match counts.
            if types is not None and cls not in types:
                return False
            if min_len and type(value) is str and len(value) < min_len:
                return False
            if allowed is not None and (cls is not str or value not in allowed):
                return False
        return True

    return check
