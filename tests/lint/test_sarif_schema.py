"""Every SARIF log gitevals writes is valid against the SARIF 2.1.0 JSON Schema
(``../shared/data/sarif-schema-2.1.0.json``, read in place): a log that fails it is
refused by code-scanning upload. Without the file (a plain clone) this module skips."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gitevals.findings import Finding
from gitevals.report import sarif
from tests.conftest import Repo, run_cli
from tests.support import refdata
from tests.support.lint import GOOD, case

SCHEMA = refdata.find("sarif-schema-2.1.0.json")
if SCHEMA is None:
    pytest.skip(refdata.why_missing("sarif-schema-2.1.0.json"), allow_module_level=True)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def valid(validator: jsonschema.Draft7Validator, text: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads(text)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors[:5]]
    return doc


def test_the_schema_refuses_what_code_scanning_would(
        validator: jsonschema.Draft7Validator) -> None:
    """The check has teeth: a result with a column of 0 or without a message is invalid."""
    doc = json.loads(sarif.render([sarif.Located(Finding("a.yaml", 1, 1, "GE201", "m"))]).text)
    result = doc["runs"][0]["results"][0]
    result["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    assert not validator.is_valid(doc)
    result["locations"][0]["physicalLocation"]["region"]["startColumn"] = 1
    del result["message"]
    assert not validator.is_valid(doc)


def test_lint_and_publish_check_logs_are_valid(
        repo: Repo, validator: jsonschema.Draft7Validator) -> None:
    repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers"),
                 "evals/cases/b.yaml": case().replace("trials: 2", "trials: 1"),
                 "evals/cases/c.yaml": "scenarios: [\n"})
    repo.git("tag", "v1")
    lint = run_cli("lint", "--format", "sarif", cwd=repo.path)
    doc = valid(validator, lint.out)
    assert len(doc["runs"][0]["results"]) == 3
    published = run_cli("publish-check", "v1", "HEAD", "--format", "sarif", cwd=repo.path)
    assert published.code == 1
    assert len(valid(validator, published.out)["runs"][0]["results"]) == 3
    clean = Repo(repo.path)
    clean.commit({"evals/cases/a.yaml": case(), "evals/cases/b.yaml": case(),
                  "evals/cases/c.yaml": case()})
    assert valid(validator, run_cli("lint", "--format", "sarif", cwd=repo.path).out)[
        "runs"][0]["results"] == []


def some_results(text: str) -> str:
    """A cut log with its first 50 results: what cutting adds (the notification) is
    validated whole, the results alike to those kept (validating 25,000 takes minutes)."""
    doc = json.loads(text)
    doc["runs"][0]["results"] = doc["runs"][0]["results"][:50]
    return json.dumps(doc)


def test_cut_and_hostile_logs_are_valid(validator: jsonschema.Draft7Validator) -> None:
    many = [Finding("evals/goldens.jsonl", i, 1, "GE606", "duplicate id 1")
            for i in range(1, 25_101)]
    cut = sarif.render([sarif.Located(f) for f in many])
    assert cut.kept == 25_000
    assert "toolExecutionNotifications" in valid(validator, some_results(cut.text))["runs"][0][
        "invocations"][0]
    hostile = [Finding(p, 2, 3, "GE999", "x [a](1) \x1b]8;;http://e\x07 \ud800")
               for p in ("a b#c?.yaml", "x:y.yaml", "\udcff.yaml", "é.yaml")]
    valid(validator, sarif.render([sarif.Located(f) for f in hostile]).text)
