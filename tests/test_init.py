"""``gitevals init``: a scaffold that lints clean, and never a file overwritten."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gitevals.scaffold import pre_commit_config
from tests.conftest import Repo, run_cli

SCAFFOLD = ("evals/case.schema.json", "evals/cases/example.yaml", "evals/graders/example.py",
            "evals/results/.gitignore")
PROJECT = Path(__file__).resolve().parent.parent


def listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and ".git" not in p.parts)


def assert_lints_clean(repo: Repo, *extra: str) -> None:
    r = run_cli("lint", *extra, cwd=repo.path)
    assert r.code == 0, r.out + r.err
    assert "GE" not in r.out  # not even a warning


def test_fresh_repo(repo: Repo) -> None:
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    assert listing(repo.path) == sorted([*SCAFFOLD, ".pre-commit-config.yaml", "gitevals.toml"])
    assert "created evals/cases/example.yaml" in r.out
    assert tomllib.loads((repo.path / "gitevals.toml").read_text())["root"] == "evals"
    assert_lints_clean(repo)
    repo.commit(msg="scaffold")
    assert_lints_clean(repo, "--rev", "HEAD")
    assert run_cli("publish-check", cwd=repo.path).code == 0


def test_case_header_points_at_the_schema_copy(repo: Repo) -> None:
    assert run_cli("init", cwd=repo.path).code == 0
    first = (repo.path / "evals/cases/example.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../case.schema.json"
    copy = (repo.path / "evals/case.schema.json").read_text()
    assert copy == (PROJECT / "schemas/case.schema.json").read_text()


def test_settings_appended_to_pyproject_without_the_table(repo: Repo) -> None:
    original = '[project]\nname = "agent"\nversion = "1.0"\n'
    repo.write({"pyproject.toml": original})
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    assert "appended [tool.gitevals] to pyproject.toml" in r.out
    text = (repo.path / "pyproject.toml").read_text()
    assert text.startswith(original)
    doc = tomllib.loads(text)
    assert doc["project"]["name"] == "agent" and doc["tool"]["gitevals"] == {"root": "evals"}
    assert not (repo.path / "gitevals.toml").exists()
    assert_lints_clean(repo)


def test_configured_root_is_used_and_settings_left_alone(repo: Repo) -> None:
    pyproject = '[project]\nname = "agent"\n\n[tool.gitevals]\nroot = "qa"\n'
    repo.write({"pyproject.toml": pyproject})
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    assert (repo.path / "pyproject.toml").read_text() == pyproject
    assert (repo.path / "qa/cases/example.yaml").is_file()
    assert not (repo.path / "evals").exists() and not (repo.path / "gitevals.toml").exists()
    assert "'^(qa/(cases/" in (repo.path / ".pre-commit-config.yaml").read_text()
    assert_lints_clean(repo)


def test_root_option(repo: Repo) -> None:
    assert run_cli("init", "--root", "checks/evals", cwd=repo.path).code == 0
    assert tomllib.loads((repo.path / "gitevals.toml").read_text())["root"] == "checks/evals"
    assert (repo.path / "checks/evals/graders/example.py").is_file()
    assert_lints_clean(repo)


def test_root_option_against_configured_root(repo: Repo) -> None:
    repo.write({"gitevals.toml": 'root = "qa"\n'})
    r = run_cli("init", "--root", "evals", cwd=repo.path)
    assert r.code == 2
    assert r.err.strip() == ("gitevals: error: gitevals.toml: settings say root = 'qa', "
                             "not 'evals'; change the setting or drop --root")


@pytest.mark.parametrize("root", ["../outside", "/abs", "."])
def test_root_must_be_inside_the_repository(repo: Repo, root: str) -> None:
    r = run_cli("init", "--root", root, cwd=repo.path)
    assert r.code == 2
    assert "name a directory inside the repository" in r.err
    assert listing(repo.path) == []


def test_refuses_existing_files_and_writes_nothing(repo: Repo) -> None:
    repo.write({"evals/cases/example.yaml": "mine\n", "gitevals.toml": 'root = "evals"\n',
                "evals/graders/example.py": "# mine\n"})
    before = {p: (repo.path / p).read_text() for p in listing(repo.path)}
    r = run_cli("init", cwd=repo.path)
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert lines == [
        "gitevals: evals/cases/example.yaml: already exists; gitevals init never overwrites "
        "a file: move it away or scaffold elsewhere with --root",
        "gitevals: evals/graders/example.py: already exists; gitevals init never overwrites "
        "a file: move it away or scaffold elsewhere with --root",
    ]
    assert {p: (repo.path / p).read_text() for p in listing(repo.path)} == before


def test_existing_pre_commit_config_is_left_alone_and_snippet_printed(repo: Repo) -> None:
    mine = "repos: []\n"
    repo.write({".pre-commit-config.yaml": mine})
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    assert (repo.path / ".pre-commit-config.yaml").read_text() == mine
    assert ".pre-commit-config.yaml exists and was left alone" in r.out
    assert pre_commit_config("evals") in r.out


def test_pre_commit_config_is_valid_for_the_framework(tmp_path: Path) -> None:
    from pre_commit.clientlib import load_config

    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(pre_commit_config("evals"))
    config = load_config(str(path))
    hooks = {h["id"]: h for h in config["repos"][0]["hooks"]}
    assert hooks["gitevals-lint"]["stages"] == ["pre-commit"]
    assert hooks["gitevals-publish-check"]["stages"] == ["pre-push"]
    assert hooks["gitevals-publish-check"]["pass_filenames"] is False
    # A commit that only deletes a grader module names no file: the hook runs anyway.
    assert hooks["gitevals-lint"]["always_run"] is True


@pytest.mark.parametrize("root", ["evals", "checks/q.a"])
def test_lint_hook_files_select_eval_files_and_settings(root: str) -> None:
    import re

    from gitevals.scaffold import files_pattern

    selected = re.compile(files_pattern(root))
    for path in (f"{root}/cases/a.yaml", f"{root}/cases/sub/b.yml", f"{root}/graders/q.py",
                 f"{root}/goldens.jsonl", "pyproject.toml", "gitevals.toml"):
        assert selected.search(path), path
    for path in (f"{root}/results/r.json", "src/cases/a.yaml", f"{root}/case.schema.json",
                 "sub/pyproject.toml", "pyproject.toml.bak", "README.md"):
        assert not selected.search(path), path


def test_init_prints_the_install_commands(repo: Repo) -> None:
    r = run_cli("init", cwd=repo.path)
    assert r.out.endswith(
        "next: edit evals/cases/example.yaml, then run `gitevals lint`\n"
        "install the hooks (either order; each keeps the other's hook):\n"
        "  $ pre-commit install --hook-type pre-commit --hook-type pre-push\n"
        "  $ gitevals hooks install pre-push\n"
        "gitevals' pre-push hook refuses a release tag on a commit the remote already has,\n"
        "which pre-commit's pre-push stage lets through. "
        "Without pre-commit: `gitevals hooks install`.\n")


def test_outside_a_repository_scaffolds_the_current_directory(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).code == 0
    assert (tmp_path / "evals/cases/example.yaml").is_file()


@pytest.mark.parametrize("pyproject", [
    'tool = {black = {line-length = 100}}\n',  # a [tool.gitevals] table would not parse
    '[project\nname = "broken"\n',              # not TOML at all: left alone
], ids=["inline-tool-table", "invalid-toml"])
def test_settings_go_to_gitevals_toml_when_pyproject_cannot_take_them(
        repo: Repo, pyproject: str) -> None:
    repo.write({"pyproject.toml": pyproject})
    r = run_cli("init", cwd=repo.path)
    assert r.code == 0, r.err
    assert (repo.path / "pyproject.toml").read_text() == pyproject
    assert tomllib.loads((repo.path / "gitevals.toml").read_text())["root"] == "evals"
    assert_lints_clean(repo)


def test_results_are_ignored_and_the_written_config_runs_under_pre_commit(repo: Repo) -> None:
    import os
    import subprocess
    import sys

    assert run_cli("init", cwd=repo.path).code == 0
    repo.write({"evals/results/run.json": "{}"})
    status = repo.git("status", "--porcelain", "--untracked-files=all")
    assert "evals/results/.gitignore" in status and "run.json" not in status
    # The config init writes uses the gitevals of the committing environment
    # (language: system): the real framework refuses a bad staged case.
    repo.write({"evals/cases/bad.yaml": "suite: x\nscenarios: []\n"})
    repo.git("add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo.path.parent / "pc-home")}
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--hook-stage",
                           "pre-commit"], cwd=repo.path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "evals/cases/bad.yaml:1:1: GE301 'suite' is refused" in proc.stdout
    repo.remove("evals/cases/bad.yaml")
    repo.git("add", "-A")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--hook-stage",
                           "pre-commit"], cwd=repo.path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
