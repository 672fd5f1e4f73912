"""JUnit output as third-party tools read it: the Jenkins xunit plugin's schema
(``junit-10.xsd``, read in place from ``../shared/data/``) and junitparser."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Failure, JUnitXml

from gitevals.report.runs import Refused, junit, render, render_refused
from tests.conftest import Repo, run_cli
from tests.support import refdata
from tests.support.artifacts import PARIS, artifact, result, sample, scenario, transcript
from tests.support.paths import RUN_HARNESS

#: Published by the Jenkins xunit plugin; see ../shared/data/README.md (never copied here).
#: Every test here validates against it: without it (a plain clone) the module skips.
XSD = refdata.find("junit-10.xsd")
if XSD is None:
    pytest.skip(refdata.why_missing("junit-10.xsd"), allow_module_level=True)


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def check(schema: xmlschema.XMLSchema, xml: str, tmp_path: Path) -> JUnitXml:
    """``xml`` is valid against junit-10.xsd and loads in junitparser; the parsed file."""
    schema.validate(xml)
    path = tmp_path / "junit.xml"
    path.write_text(xml, encoding="utf-8")
    return JUnitXml.fromfile(str(path))


def cases_of(xml: JUnitXml) -> dict[tuple[str, str], Any]:
    return {(suite.name, case.name): case for suite in xml for case in suite}


def test_a_normal_run_is_valid(schema: xmlschema.XMLSchema, tmp_path: Path) -> None:
    art = sample()
    art["cases"][1]["scenarios"].append(scenario("later", PARIS, []))  # a <skipped>
    xml = check(schema, render(art, "junit"), tmp_path)
    assert sorted(cases_of(xml)) == [("tone", "capital"), ("tone", "flaky"), ("tone", "wrong"),
                                     ("tools", "crashes"), ("tools", "later")]


HOSTILE_NAME = "na\x01me\x1b[31m\x7f"
ODD = "a\ufffeb\uffffc \x00\x08\x0b\x0c\x1f \x85 end"


def hostile() -> dict[str, Any]:
    expect = [{"final_answer_contains": "Paris"}]
    crash = {"kind": "target_protocol", "message": ODD}
    odd = transcript(f"Lyon {ODD}")
    return artifact({HOSTILE_NAME: [
        scenario("s", expect, [result(0, expect, transcript(), error=crash)]),
        scenario("t", expect, [result(0, expect, odd)]),
    ]})


def test_hostile_names_and_values_stay_well_formed_and_valid(
        schema: xmlschema.XMLSchema, tmp_path: Path) -> None:
    out = render(hostile(), "junit")
    xml = check(schema, out, tmp_path)
    cases = cases_of(xml)
    name = "na\\x01me\\x1b[31m\\x7f"  # every forbidden character written as its escape
    assert sorted(cases) == [(name, "s"), (name, "t")]
    assert cases[(name, "s")].classname == name
    assert "a\\ufffeb\\uffffc" in cases[(name, "s")].result[0].message
    assert "\\ufffe" in cases[(name, "t")].result[0].text


@pytest.mark.parametrize("char", ["\ud800", "\udfff", "\ufffe", "\uffff", "\x00", "\x1b"],
                         ids=["high-surrogate", "low-surrogate", "fffe", "ffff", "nul", "esc"])
def test_any_forbidden_character_in_a_case_name_is_escaped(
        schema: xmlschema.XMLSchema, tmp_path: Path, char: str) -> None:
    # A case name comes from a file name: nothing stops it holding any of these.
    art = artifact({f"x{char}y": [scenario("s", PARIS, [result(0, PARIS, transcript())])]})
    out = render(art, "junit")
    out.encode("utf-8")  # a lone surrogate would not even encode
    (suite,) = check(schema, out, tmp_path)
    assert suite.name == f"x{char.encode('unicode_escape').decode()}y"


REFUSED = Refused("broken", ("evals/cases/broken.yaml:3:5: GE102 unknown key 'expekt'",
                             "evals/cases/broken.yaml:7:1: GE103 second problem"))


def test_refused_cases_are_failing_test_cases(schema: xmlschema.XMLSchema,
                                              tmp_path: Path) -> None:
    xml = check(schema, junit(sample(), [REFUSED]), tmp_path)
    lint = cases_of(xml)[("broken", "lint")]
    (failure,) = lint.result
    assert isinstance(failure, Failure)
    assert (failure.type, failure.message) == ("lint", REFUSED.findings[0])
    assert failure.text.splitlines()[1:] == list(REFUSED.findings)
    assert xml.tests == 5 and xml.failures == 3


def test_only_refused_cases(schema: xmlschema.XMLSchema, tmp_path: Path) -> None:
    xml = check(schema, render_refused([REFUSED], "junit"), tmp_path)
    assert list(cases_of(xml)) == [("broken", "lint")]
    assert render_refused([REFUSED], "text") == ""


# -- through the real CLI ----------------------------------------------------------------

HARNESS = RUN_HARNESS
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
GOOD = ("defaults: {trials: 1, timeout: 20s}\nscenarios:\n  - id: ok\n    user: What is the "
        "capital of France?\n    expect: [{final_answer_contains: Paris}]\n")
BAD = "scenarios:\n  - id: ok\n    user: hi\n    expekt: []\n"


def _setup(repo: Repo, cases: dict[str, str]) -> None:
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": SETTINGS}
    files.update({f"evals/cases/{n}.yaml": c for n, c in cases.items()})
    repo.commit(files)


def test_a_real_run_with_a_blocked_case(repo: Repo, schema: xmlschema.XMLSchema,
                                        tmp_path: Path) -> None:
    _setup(repo, {"good": GOOD, "bad": BAD})
    res = run_cli("run", "--format", "junit", cwd=repo.path)
    assert res.code == 1, res.err
    cases = cases_of(check(schema, res.out, tmp_path))
    assert cases[("good", "ok")].is_passed
    (failure,) = cases[("bad", "lint")].result
    assert failure.message.startswith("evals/cases/bad.yaml:") and "expekt" in failure.message


def test_a_run_where_every_case_fails_lint_still_reports_them(
        repo: Repo, schema: xmlschema.XMLSchema, tmp_path: Path) -> None:
    _setup(repo, {"bad": BAD, "worse": BAD.replace("expekt", "trials: x\n    expekt")})
    res = run_cli("run", "--format", "junit", cwd=repo.path)
    assert res.code == 1
    assert "nothing was run" in res.err
    cases = cases_of(check(schema, res.out, tmp_path))
    assert sorted(cases) == [("bad", "lint"), ("worse", "lint")]
    assert not (repo.path / "evals" / "results").exists()  # still no empty artifact
