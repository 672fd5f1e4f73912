"""The GitHub action, the example workflow and the GitLab template are valid for their
platforms (check-jsonschema's built-in schemas, which ship inside the package: checked
with no network), their shell parses, and every ``gitevals.ci`` step they call exists."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from gitevals.ci.__main__ import parser
from tests.conftest import built_once
from tests.support.jsonschema_check import check_many

ROOT = Path(__file__).resolve().parents[2]
FILES = {"vendor.github-actions": ROOT / "action.yml",
         "vendor.github-workflows": ROOT / "docs" / "examples" / "gitevals.yml",
         "vendor.gitlab-ci": ROOT / "ci" / "gitlab" / "gitevals.gitlab-ci.yml"}


#: Each platform file broken in one way its schema refuses: (schema, how).
BROKEN: dict[str, tuple[str, Callable[[Any], object]]] = {
    "action-step-without-shell": ("vendor.github-actions",
                                  lambda d: d["runs"]["steps"][2].pop("shell")),
    "job-without-runs-on": ("vendor.github-workflows",
                            lambda d: d["jobs"]["evals"].pop("runs-on")),
    "gitlab-bad-when": ("vendor.gitlab-ci", lambda d: d["gitevals"].update(when="sometimes")),
}


def _load(path: Path) -> Any:
    """The file as data to break and dump again. PyYAML reads a workflow's ``on:`` key as
    the boolean True (YAML 1.1); it is put back as ``"on"``, else every dumped copy of the
    workflow is refused for that alone and the break under test is never what is checked."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


@pytest.fixture(scope="session")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checked]:
    """Every check the tests below read, made once for the run: check-jsonschema on each
    platform file (``valid:<schema>``), on each broken copy (``broken:<id>``) and on the
    same copy dumped unbroken (``control:<id>``: it must pass, so the break is what the
    check refuses), each a separate run of its command with its own exit code and
    output, in one offline process (its imports are most of a check's cost)."""
    def build(into: Path) -> None:
        checks = {f"valid:{schema}": (schema, path) for schema, path in FILES.items()}
        for name, (schema, break_it) in BROKEN.items():
            for kind in ("control", "broken"):
                doc = _load(FILES[schema])
                if kind == "broken":
                    break_it(doc)
                copy = into / name / kind / FILES[schema].name
                copy.parent.mkdir(parents=True)
                copy.write_text(yaml.safe_dump(doc))
                checks[f"{kind}:{name}"] = (schema, copy)
        done = check_many(list(checks.values()))
        (into / "checked.json").write_text(json.dumps(
            {key: [r.returncode, r.stdout, r.stderr] for key, r in zip(checks, done, strict=True)}))

    root = built_once(tmp_path_factory, "ci-templates-checked", build)
    return {key: Checked(*value)
            for key, value in json.loads((root / "checked.json").read_text()).items()}


class Checked(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


@pytest.mark.parametrize("schema", list(FILES))
def test_valid_for_its_platform_offline(schema: str, checked: dict[str, Checked]) -> None:
    r = checked[f"valid:{schema}"]
    assert (r.returncode, r.stdout.strip()) == (0, "ok -- validation done"), r.stdout + r.stderr


@pytest.mark.parametrize("name", list(BROKEN))
def test_the_check_refuses_a_broken_copy(name: str, checked: dict[str, Checked]) -> None:
    control = checked[f"control:{name}"]
    assert (control.returncode, control.stdout.strip()) == (0, "ok -- validation done"), (
        control.stdout + control.stderr)
    r = checked[f"broken:{name}"]
    assert r.returncode == 1 and "Schema validation errors" in r.stdout, r.stdout + r.stderr


def scripts() -> list[tuple[str, str]]:
    action = yaml.safe_load(FILES["vendor.github-actions"].read_text(encoding="utf-8"))
    out = [(f"action: {s.get('name')}", s["run"]) for s in action["runs"]["steps"] if "run" in s]
    gitlab = yaml.safe_load(FILES["vendor.gitlab-ci"].read_text(encoding="utf-8"))
    job = gitlab[".gitevals"]
    out.append(("gitlab", "\n".join([*job["before_script"], *job["script"]])))
    return out


def test_every_script_parses_and_calls_steps_that_exist() -> None:
    known = set()
    for name in ("setup-sandbox", "base-run", "summary", "comment", "check-run", "nope"):
        argv = [name, "REV"] if name == "base-run" else [name]
        argv += ["F", "--exit-code", "0"] if name in ("summary", "comment", "check-run") else []
        argv += ["--markdown", "M"] if name == "check-run" else []
        try:
            parser().parse_args(argv)
            known.add(name)
        except SystemExit:
            pass
    called = set()
    for name, script in scripts():
        r = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr)
        called |= set(re.findall(r"python -m gitevals\.ci ([\w-]+)", script))
    assert called == known == {"setup-sandbox", "base-run", "summary", "comment", "check-run"}


def test_the_docs_give_the_example_workflow_as_it_is() -> None:
    """The GitHub page's copy-paste workflow is the validated file, byte for byte."""
    doc = (ROOT / "docs" / "integrations" / "github-actions.md").read_text(encoding="utf-8")
    example = FILES["vendor.github-workflows"].read_text(encoding="utf-8")
    assert f"```yaml\n{example}```" in doc
