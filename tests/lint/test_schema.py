"""The case schema file and the validator built from it.

The compiled (fastjsonschema) validator must agree with jsonschema on every
document, valid documents must be checked without importing jsonschema, and the
generated code is cached so later processes only load it.
"""

from __future__ import annotations

import copy
import json
import os
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitevals import schema, validation
from gitevals.lint.cases import lint_case_bytes
from gitevals.model import ASSERTION_KINDS
from gitevals.settings import REFUSED_KEYS

CASE_SCHEMA = json.loads(schema.schema_path("case").read_text())
VALID = {
    "defaults": {"trials": 3, "timeout": "300s"},
    "scenarios": [{"id": "a", "user": ["hi", "again"], "expect": [
        {"tool_called": {"name": "shell", "args": {"cmd": "ls"}}},
        {"grader": {"name": "quality.answers", "pass_below": 0.7}},
        {"no_error": True},
    ]}],
}


def test_case_schema_is_a_valid_2020_12_schema() -> None:
    assert CASE_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(CASE_SCHEMA)


def test_schemas_dir_in_the_package_is_the_top_level_one() -> None:
    top = Path(__file__).resolve().parents[2] / "schemas" / "case.schema.json"
    assert schema.schema_path("case").read_bytes() == top.read_bytes()


def _properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            yield f"{where}.{name}", sub
        for k, v in node.items():
            yield from _properties(v, f"{where}/{k}")
    elif isinstance(node, list):
        for v in node:
            yield from _properties(v, where)


def test_every_property_has_a_description_for_editors() -> None:
    for where, sub in _properties(CASE_SCHEMA):
        target = sub
        if "$ref" in sub:
            target = validation._pointer(CASE_SCHEMA, sub["$ref"])
        assert target.get("description"), f"{where} has no description"


def test_every_object_refuses_unknown_keys() -> None:
    def objects(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                yield node
            for v in node.values():
                yield from objects(v)
    found = list(objects(CASE_SCHEMA))
    assert len(found) > 10
    assert all(o.get("additionalProperties") is False for o in found)


def test_the_design_example_is_valid() -> None:
    assert schema.validate("case", VALID) == []


# -- positions and messages of errors ------------------------------------------------


@pytest.mark.parametrize(("doc", "path", "key", "keyword"), [
    ({"scenarios": [{"id": "a", "user": "x", "expcet": []}]},
     ("scenarios", 0, "expcet"), True, "additionalProperties"),
    ({"scenarios": [{"id": "a"}]}, ("scenarios", 0), False, "required"),
    ({"scenarios": [{"id": "a", "user": 3}]}, ("scenarios", 0, "user"), False, "type"),
    ({"scenarios": [{"id": "a b", "user": "x"}]}, ("scenarios", 0, "id"), False, "pattern"),
    ({"scenarios": [{"id": "a", "user": "x", "expect": [{"no_error": False}]}]},
     ("scenarios", 0, "expect", 0, "no_error"), False, "const"),
    ({"scenarios": []}, ("scenarios",), False, "minItems"),
], ids=["unknown-key", "required", "type", "pattern", "const", "min-items"])
def test_error_points_at_key_mapping_or_value(doc: dict[str, Any], path: tuple[Any, ...],
                                              key: bool, keyword: str) -> None:
    [err] = schema.validate("case", doc)
    assert (err.path, err.key, err.keyword) == (path, key, keyword)
    assert "\n" not in err.message


def test_unknown_key_suggests_the_closest_name() -> None:
    [err] = schema.validate("case", {"scenarios": [{"id": "a", "user": "x", "expcet": []}]})
    assert err.suggestion == "expect"
    assert "did you mean expect?" in err.message
    assert "timeout" in err.allowed


def test_a_wrong_type_is_not_also_a_wrong_value() -> None:
    doc = {"scenarios": [{"id": "a", "user": "x", "expect": [{"no_error": None}]}]}
    assert [e.keyword for e in schema.validate("case", doc)] == ["type"]


def test_long_values_are_clipped() -> None:
    [err] = schema.validate("case", {"scenarios": [{"id": "a", "user": "x", "trials": "9" * 300}]})
    assert len(err.message) < 160 and "…" in err.message


def test_trailing_newline_does_not_pass_a_pattern() -> None:
    # Python's `$` matches before a final newline; JSON Schema's (ECMA-262) does not.
    doc = {"scenarios": [{"id": "a\n", "user": "x"}]}
    assert not schema.is_valid("case", doc)
    assert [e.keyword for e in schema.validate("case", doc)] == ["pattern"]


# -- compiled validator vs jsonschema -------------------------------------------------

names = st.sampled_from(["shell__run", "web", "a"])
text1 = st.text(min_size=1, max_size=6)
ARGS: dict[str, st.SearchStrategy[Any]] = {
    "tool_called": st.fixed_dictionaries(
        {"name": names}, optional={"args": st.dictionaries(st.text(max_size=3), st.integers())}),
    "tool_not_called": st.fixed_dictionaries({"name": names}),
    "tool_order": st.fixed_dictionaries({"first": names, "then": names}),
    "min_tool_calls": st.fixed_dictionaries({"name": names, "count": st.integers(0, 4)}),
    "max_tool_calls": st.fixed_dictionaries({"name": names, "count": st.integers(0, 4)}),
    "result_contains": st.fixed_dictionaries({"name": names, "substring": text1}),
    "final_answer_contains": text1,
    "final_answer_not_contains": text1,
    "final_answer_max_chars": st.integers(0, 500),
    "hook_called": st.fixed_dictionaries({"name": names}, optional={"decision": text1}),
    "no_error": st.just(True),
    "grader": st.fixed_dictionaries(
        {"name": st.sampled_from(["q.f", "quality.answers", "_a.b2"])},
        optional={"pass_below": st.floats(0, 1)}),
}
#: One assertion of any kind: a kind, then its argument. One branch per kind, built once
#: (a ``flatmap`` built and checked a new strategy for every assertion drawn).
assertions = st.one_of(*(ARGS[k].map(lambda arg, k=k: {k: arg}) for k in ASSERTION_KINDS))
#: Scenario ids: ``[a-z0-9_][a-z0-9_.-]{0,8}``, drawn as text over those alphabets (the
#: same strings as ``from_regex``, at half its cost a draw).
ids = st.builds(str.__add__, st.sampled_from(string.ascii_lowercase + string.digits + "_"),
                st.text(string.ascii_lowercase + string.digits + "_.-", max_size=8))
durations = st.sampled_from(["300s", "5m", "1.5h", "250ms", "0s"])
scenarios = st.fixed_dictionaries(
    {"id": ids,
     "user": st.one_of(text1, st.lists(text1, min_size=1, max_size=3))},
    optional={"trials": st.integers(1, 5), "timeout": durations,
              "expect": st.lists(assertions, max_size=6)})
valid_docs = st.fixed_dictionaries(
    {"scenarios": st.lists(scenarios, min_size=1, max_size=3)},
    optional={"defaults": st.fixed_dictionaries(
        {}, optional={"trials": st.integers(1, 5), "timeout": durations})})
junk = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=False),
    st.sampled_from(["", "a.b.c", "x", "5 m", "a\n", "300s\n", "3", "q.f"]),
    st.just([]), st.just({}), st.just({"name": "a"}), st.just(["x"]),
    st.just({"zzz": 1}), st.just(3.0), st.just(True))


def _slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key-or-index) in ``node``, depth first."""
    out: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((node, k))
            out.extend(_slots(v))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((node, i))
            out.extend(_slots(v))
    return out


@st.composite
def case_docs(draw: st.DrawFn) -> Any:
    """Valid case documents, and the same with a few slots broken (type, value, key)."""
    doc = copy.deepcopy(draw(valid_docs))
    for _ in range(draw(st.integers(0, 3))):
        slots = _slots(doc)
        if not slots:
            break
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        action = draw(st.sampled_from(["replace", "delete", "add-key"]))
        if action == "replace":
            container[key] = copy.deepcopy(draw(junk))  # junk values are shared
        elif action == "delete" and isinstance(container, dict):
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.sampled_from(["zzz", "suite", "expcet", "name", "count"]))] = 1
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case_docs())
def test_compiled_validator_agrees_with_jsonschema(doc: Any) -> None:
    explained = schema.validate("case", doc)
    fast = schema.is_valid("case", doc)
    assert fast == (validation.errors("case", doc) == [])
    assert fast == (explained == [])
    if not any(isinstance(v, str) and "\n" in v for v in _strings(doc)):
        # Plain jsonschema too, where Python's `$` subtlety cannot apply.
        assert fast == JSONSCHEMA.is_valid(doc)


#: The reference validator, built once: it keeps no state between documents.
JSONSCHEMA = jsonschema.Draft202012Validator(CASE_SCHEMA)


def _strings(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    else:
        yield node


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case_docs())
def test_case_shaped_yaml_lints_without_raising(doc: Any) -> None:
    data = yaml.safe_dump(doc, sort_keys=False).encode()
    findings, refs = lint_case_bytes(data, "c.yaml", REFUSED_KEYS)
    assert all(f.line >= 1 and f.col >= 1 for f in findings)
    assert all(r.line >= 1 and r.col >= 1 for r in refs)


@given(valid_docs)
@settings(max_examples=100, deadline=None)
def test_valid_documents_lint_clean_apart_from_semantics(doc: Any) -> None:
    data = yaml.safe_dump(doc, sort_keys=False).encode()
    findings, _ = lint_case_bytes(data, "c.yaml", REFUSED_KEYS)
    assert {f.code for f in findings} <= {"GE401", "GE402", "GE403", "GE405"}


# -- import budget and the cache -------------------------------------------------------

PROBE = """
import sys
from gitevals.lint.cases import lint_case_bytes
from gitevals.settings import REFUSED_KEYS
findings, _ = lint_case_bytes(sys.stdin.buffer.read(), "c.yaml", REFUSED_KEYS)
print(len(findings), "jsonschema" in sys.modules, "fastjsonschema" in sys.modules)
"""


def _probe(data: bytes, cache: Path) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.run([sys.executable, "-c", PROBE], input=data, capture_output=True,
                          env=env, check=True)
    return proc.stdout.decode().strip()


def test_valid_case_is_checked_without_importing_jsonschema(tmp_path: Path) -> None:
    data = yaml.safe_dump(VALID).encode()
    # First process: generates the validator (fastjsonschema), never jsonschema.
    assert _probe(data, tmp_path) == "0 False True"
    # Later processes only load the cached code: neither library is imported.
    assert _probe(data, tmp_path) == "0 False False"
    cached = sorted(p.name for p in (tmp_path / "gitevals" / "schemas").iterdir())
    assert len(cached) == 2 and cached[0].endswith(".bin") and cached[1].endswith(".py")


def test_invalid_case_is_explained_by_jsonschema(tmp_path: Path) -> None:
    assert _probe(b"scenarios: []\n", tmp_path).endswith("True True")


def test_corrupt_cache_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_dump(VALID).encode()
    _probe(data, tmp_path)
    for p in (tmp_path / "gitevals" / "schemas").glob("*.bin"):
        p.write_bytes(b"garbage")
    assert _probe(data, tmp_path) == "0 False True"
    assert _probe(b"scenarios: []\n", tmp_path).startswith("1 ")


def test_unwritable_cache_still_validates(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert _probe(yaml.safe_dump(VALID).encode(), blocker) == "0 False True"
    assert _probe(b"scenarios: []\n", blocker).startswith("1 ")


@pytest.mark.parametrize(("doc", "ok"), [(1, True), (1.0, True), (True, False), ("1", False)],
                         ids=["one", "one-float", "true", "string"])
def test_const_one_is_not_true_in_the_compiled_copy(doc: Any, ok: bool) -> None:
    src = {"const": 1}
    import fastjsonschema

    compiled = fastjsonschema.compile(validation._compilable(src))
    try:
        compiled(doc)
        fast = True
    except fastjsonschema.JsonSchemaValueException:
        fast = False
    assert fast == ok == jsonschema.Draft202012Validator(src).is_valid(doc)


def test_compiled_copy_keeps_property_names_that_look_like_keywords() -> None:
    src = {"type": "object", "additionalProperties": False,
           "properties": {"description": {"type": "string"}, "const": {"const": 1},
                          "title": {"$ref": "#/$defs/t"}},
           "$defs": {"t": {"description": "a title", "type": "string"}}}
    out = validation._compilable(src)
    assert set(out["properties"]) == {"description", "const", "title"}
    assert out["properties"]["const"] == {"enum": [1], "allOf": [{"type": "number"}]}
    assert out["properties"]["title"] == {"type": "string"}


def test_validators_of_older_schema_versions_are_pruned(tmp_path: Path) -> None:
    folder = tmp_path / "gitevals" / "schemas"
    folder.mkdir(parents=True)
    stale = [folder / f"gitevals_schema_case_{'0' * 24}.py",
             folder / f"gitevals_schema_case_{'0' * 24}.cpython-311.bin"]
    other = folder / f"gitevals_schema_golden_{'0' * 24}.py"
    for p in [*stale, other]:
        p.write_text("x")
    _probe(yaml.safe_dump(VALID).encode(), tmp_path)
    assert not any(p.exists() for p in stale)
    assert other.exists()
    assert len(list(folder.glob("gitevals_schema_case_*"))) == 2
