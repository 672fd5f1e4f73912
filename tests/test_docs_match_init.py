"""What the docs show is what ``gitevals init`` writes: the ``$schema`` header and the
pre-commit config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gitevals.scaffold import pre_commit_config
from tests.conftest import Repo, run_cli

PROJECT = Path(__file__).resolve().parent.parent
HEADER = re.compile(r"^# yaml-language-server: \$schema=.*$", re.MULTILINE)
DOCUMENTED = ["README.md", "docs/lint-codes.md", "docs/hooks.md",
              "examples/demo/v1/evals/cases/basics.yaml",
              "examples/demo/v1/evals/cases/tools.yaml"]


def init_header(repo: Repo) -> str:
    assert run_cli("init", cwd=repo.path).code == 0
    return (repo.path / "evals/cases/example.yaml").read_text().splitlines()[0]


@pytest.mark.parametrize("doc", DOCUMENTED)
def test_documented_header_is_the_one_init_writes(repo: Repo, doc: str) -> None:
    written = init_header(repo)
    found = HEADER.findall((PROJECT / doc).read_text())
    assert found and set(found) == {written}


def test_the_header_resolves_from_a_case_of_an_inited_repo(repo: Repo) -> None:
    # yaml-language-server resolves a relative $schema against the YAML file's directory.
    target = init_header(repo).split("$schema=", 1)[1]
    case_dir = repo.path / "evals/cases"
    schema = (case_dir / target).resolve()
    assert schema == (repo.path / "evals/case.schema.json").resolve()
    assert schema.read_text() == (PROJECT / "schemas/case.schema.json").read_text()
    assert not target.startswith(("http:", "https:", "/"))  # offline, in every clone


@pytest.mark.parametrize("doc", ["README.md", "docs/hooks.md"])
def test_documented_pre_commit_config_is_the_one_init_writes(doc: str) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", (PROJECT / doc).read_text(), re.DOTALL)
    configs = [yaml.safe_load(b) for b in blocks if "repo: local" in b]
    assert configs, f"{doc} shows no repo: local config"
    assert all(c == yaml.safe_load(pre_commit_config("evals")) for c in configs)
