from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.git.trees import WorkingTree
from gitevals.settings import REFUSED_KEYS, load_settings
from tests.conftest import Repo, run_cli


def _load(tmp_path: Path, files: dict[str, str]):  # type: ignore[no-untyped-def]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return load_settings(WorkingTree(tmp_path))


def test_defaults_without_any_file(tmp_path: Path) -> None:
    s, findings = _load(tmp_path, {})
    assert findings == []
    assert s.root == "evals" and s.target is None and s.judge is None
    assert s.refused_keys == REFUSED_KEYS


def test_pyproject_table_and_extra_refused_keys(tmp_path: Path) -> None:
    s, findings = _load(tmp_path, {"pyproject.toml": """
[project]
name = "x"

[tool.gitevals]
root = "qa/evals"
refused_keys = {owner = "cases are owned by the tree"}

[tool.gitevals.target]
command = ["python3", "harness.py"]

[tool.gitevals.judge]
base_url = "http://127.0.0.1:9/v1"
model = "judge-2026-01-15"
api_key_env = "JUDGE_KEY"
"""})
    assert findings == []
    assert s.root == "qa/evals" and s.source == "pyproject.toml"
    assert s.target is not None and s.target.command == ("python3", "harness.py")
    assert s.judge is not None and s.judge.model == "judge-2026-01-15"
    assert s.refused_keys["owner"] == "cases are owned by the tree"
    assert "suite" in s.refused_keys


def test_gitevals_toml_wins_over_pyproject(tmp_path: Path) -> None:
    s, _ = _load(tmp_path, {"gitevals.toml": 'root = "a"\n',
                            "pyproject.toml": '[tool.gitevals]\nroot = "b"\n'})
    assert s.root == "a" and s.source == "gitevals.toml"


def test_pyproject_without_table_gives_defaults(tmp_path: Path) -> None:
    s, findings = _load(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    assert findings == [] and s.root == "evals"


@pytest.mark.parametrize(
    ("text", "line", "col", "code", "fragment"),
    [
        ('root = "evals"\nroot = "x"\n', 2, 11, "GE700", "cannot read settings"),
        ('root = 3\n', 1, 1, "GE701", "bad setting root"),
        ('rooot = "x"\n', 1, 1, "GE701", "rooot"),
        ('[judge]\nbase_url = "http://x/v1"\nmodel = "latest"\n', 3, 1, "GE701", "judge.model"),
        ('[target]\ncommand = []\n', 2, 1, "GE701", "target.command"),
    ],
    ids=["toml-syntax", "wrong-type", "unknown-key", "latest-model", "empty-command"],
)
def test_bad_settings_are_findings(tmp_path: Path, text: str, line: int, col: int,
                                   code: str, fragment: str) -> None:
    _, findings = _load(tmp_path, {"gitevals.toml": text})
    assert len(findings) == 1
    f = findings[0]
    assert (f.path, f.line, f.col, f.code) == ("gitevals.toml", line, col, code)
    assert fragment in f.message


@pytest.mark.parametrize(
    ("name", "text", "where", "fragment"),
    [
        ("gitevals.toml", 'root = "evals"\n[targt]\ncommand = ["x"]\n', "2:1",
         "bad setting targt: unknown key 'targt'; did you mean target?"),
        ("pyproject.toml", '[project]\nname = "x"\n\n[tool.gitevals.targt]\ncommand = ["x"]\n',
         "4:1", "bad setting targt: unknown key 'targt'"),
        ("pyproject.toml", '[tool.gitevals]\nroot = "evals"\n  rooot = "x"\n', "3:3",
         "bad setting rooot: unknown key 'rooot'"),
        ("gitevals.toml", '[target]\ncommand = ["x"]\n[judge.extra]\nx = 1\n', "3:1",
         "bad setting judge.extra: unknown key 'extra' in judge"),
    ],
    ids=["toml-table", "pyproject-table", "pyproject-key", "subtable"],
)
def test_a_settings_finding_points_at_the_key(repo: Repo, name: str, text: str, where: str,
                                              fragment: str) -> None:
    repo.commit({name: text, "evals/cases/a.yaml": "scenarios:\n  - id: s\n    user: hi\n"})
    r = run_cli("lint", cwd=repo.path)
    assert r.code == 1
    assert f"{name}:{where}: GE701 {fragment}" in r.out, r.out
