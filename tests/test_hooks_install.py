"""``gitevals hooks install``: the plain git hooks, put where git looks for them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Repo, run_cli

PROJECT = Path(__file__).resolve().parent.parent
HOOKS = ("pre-commit", "pre-push")


def shipped(name: str) -> str:
    return (PROJECT / "hooks" / name).read_text()


def assert_installed(hooks_dir: Path) -> None:
    for name in HOOKS:
        path = hooks_dir / name
        assert path.read_text() == shipped(name)
        assert path.stat().st_mode & stat.S_IXUSR


def test_package_ships_the_hooks_directory_files() -> None:
    from gitevals.commands.hooks import hook_script

    for name in HOOKS:
        assert hook_script(name) == shipped(name)


def test_fresh_install(repo: Repo) -> None:
    r = run_cli("hooks", "install", cwd=repo.path)
    assert r.code == 0, r.err
    assert_installed(repo.path / ".git" / "hooks")
    assert "installed pre-commit hook: .git/hooks/pre-commit" in r.out
    assert "installed pre-push hook: .git/hooks/pre-push" in r.out


def test_install_from_a_subdirectory(repo: Repo) -> None:
    (repo.path / "sub").mkdir()
    assert run_cli("hooks", "install", "pre-push", cwd=repo.path / "sub").code == 0
    assert (repo.path / ".git/hooks/pre-push").read_text() == shipped("pre-push")
    assert not (repo.path / ".git/hooks/pre-commit").exists()


def test_relative_core_hooks_path_is_relative_to_the_work_tree(repo: Repo) -> None:
    repo.git("config", "core.hooksPath", ".githooks")
    (repo.path / "sub").mkdir()
    r = run_cli("hooks", "install", cwd=repo.path / "sub")
    assert r.code == 0, r.err
    assert_installed(repo.path / ".githooks")
    assert not (repo.path / "sub" / ".githooks").exists()
    assert not (repo.path / ".git" / "hooks" / "pre-push").exists()


def test_absolute_core_hooks_path(repo: Repo, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    repo.git("config", "core.hooksPath", str(shared))
    assert run_cli("hooks", "install", cwd=repo.path).code == 0
    assert_installed(shared)


def test_linked_worktree_installs_into_the_common_hooks(repo: Repo, tmp_path: Path) -> None:
    repo.commit(msg="first")
    repo.git("worktree", "add", "-q", str(tmp_path / "wt"))
    assert run_cli("hooks", "install", cwd=tmp_path / "wt").code == 0
    assert_installed(repo.path / ".git" / "hooks")


def test_foreign_hook_refused_and_nothing_written(repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    foreign = "#!/bin/sh\necho mine\n"
    (hooks / "pre-push").write_text(foreign)
    r = run_cli("hooks", "install", cwd=repo.path)
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1
    assert str(hooks / "pre-push") in lines[0]
    assert "--force" in lines[0] and "chain" in lines[0]
    assert (hooks / "pre-push").read_text() == foreign
    assert not (hooks / "pre-commit").exists()  # checked all before writing any


def test_force_keeps_a_backup(repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    foreign = "#!/bin/sh\necho mine\n"
    (hooks / "pre-commit").write_text(foreign)
    r = run_cli("hooks", "install", "--force", cwd=repo.path)
    assert r.code == 0, r.err
    assert_installed(hooks)
    assert (hooks / "pre-commit.gitevals-backup").read_text() == foreign
    assert "previous hook kept as pre-commit.gitevals-backup" in r.out


def test_force_never_overwrites_an_earlier_backup(repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\necho new\n")
    (hooks / "pre-commit.gitevals-backup").write_text("#!/bin/sh\necho old\n")
    r = run_cli("hooks", "install", "--force", cwd=repo.path)
    assert r.code == 1
    assert "pre-commit.gitevals-backup: a backup from an earlier --force" in r.err
    assert (hooks / "pre-commit.gitevals-backup").read_text() == "#!/bin/sh\necho old\n"
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho new\n"


def test_reinstall_is_idempotent_and_replaces_an_older_gitevals_hook(repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    assert run_cli("hooks", "install", cwd=repo.path).code == 0
    (hooks / "pre-push").write_text("#!/bin/sh\n# gitevals-hook: pre-push (old version)\n")
    r = run_cli("hooks", "install", cwd=repo.path)
    assert r.code == 0, r.err
    assert_installed(hooks)
    assert sorted(p.name for p in hooks.iterdir() if "gitevals" in p.name) == []


def test_unknown_hook_name_is_a_usage_error(repo: Repo) -> None:
    r = run_cli("hooks", "install", "post-merge", cwd=repo.path)
    assert r.code == 2
    assert r.err.strip() == ("gitevals: error: no gitevals hook named 'post-merge': "
                             "choose from pre-commit, pre-push")


def test_outside_a_repository(tmp_path: Path) -> None:
    r = run_cli("hooks", "install", cwd=tmp_path)
    assert r.code == 2
    assert "not inside a git work tree" in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", HOOKS)
def test_hook_without_gitevals_says_how_to_install(name: str, tmp_path: Path) -> None:
    # Neither a gitevals on PATH nor a python3 that can import it.
    bare_path = "/usr/bin:/bin"
    probe = subprocess.run(["sh", "-c", "command -v gitevals || python3 -c 'import gitevals'"],
                           env={"PATH": bare_path}, capture_output=True, cwd=tmp_path)
    if probe.returncode == 0:
        pytest.skip("a system-wide gitevals is installed")
    proc = subprocess.run(["sh", str(PROJECT / "hooks" / name), "origin", "url"], input="",
                          env={"PATH": bare_path, "HOME": str(tmp_path)},
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1
    assert "gitevals is not installed" in proc.stderr
    assert "pip install <path to a gitevals clone>" in proc.stderr


def test_hook_uses_the_gitevals_variable(tmp_path: Path) -> None:
    fake = tmp_path / "fake-gitevals"
    fake.write_text('#!/bin/sh\necho "called with: $*"; cat\n')
    fake.chmod(0o755)
    proc = subprocess.run(["sh", str(PROJECT / "hooks" / "pre-push"), "origin", "/x/y.git"],
                          input="refs/heads/main a refs/heads/main b\n",
                          env={**os.environ, "GITEVALS": str(fake)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("called with: publish-check --pre-push origin /x/y.git\n"
                           "refs/heads/main a refs/heads/main b\n")


# --- the installed pre-commit hook, driven by real `git commit` ---

GOOD_CASE = "scenarios:\n  - id: greets\n    user: Hello\n    expect:\n      - no_error: true\n"
BAD_CASE = "scenarios:\n  - suite: nightly\n    id: greets\n    user: Hello\n"


def commit(repo: Repo, *args: str) -> tuple[int, str]:
    """A real ``git commit`` with this venv's gitevals on PATH, as an activated venv has it."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["git", "commit", "-q", *args], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_pre_commit_hook_lints_what_is_staged(repo: Repo) -> None:
    assert run_cli("hooks", "install", "pre-commit", cwd=repo.path).code == 0
    repo.write({"evals/cases/c.yaml": BAD_CASE})
    repo.git("add", "-A")
    repo.write({"evals/cases/c.yaml": GOOD_CASE})  # fixed on disk, not staged
    code, out = commit(repo, "-m", "bad")
    assert code == 1
    assert "evals/cases/c.yaml:2:5: GE" in out
    repo.git("add", "-A")
    code, out = commit(repo, "-m", "good")
    assert code == 0, out
    assert repo.git("log", "--format=%s") == "good"


def test_pre_commit_hook_sees_the_index_of_commit_all(repo: Repo) -> None:
    repo.commit({"evals/cases/c.yaml": GOOD_CASE}, msg="good")
    assert run_cli("hooks", "install", "pre-commit", cwd=repo.path).code == 0
    repo.write({"evals/cases/c.yaml": BAD_CASE})
    code, out = commit(repo, "-a", "-m", "bad via -a")
    assert code == 1, out


def test_pyproject_ships_the_hook_scripts() -> None:
    import tomllib

    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert "hooks_data/*" in pyproject["tool"]["setuptools"]["package-data"]["gitevals"]
    assert (PROJECT / "gitevals" / "hooks_data").resolve() == (PROJECT / "hooks").resolve()


def test_uninstall_removes_ours_restores_the_backup_and_leaves_foreign_hooks(repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    foreign = "#!/bin/sh\necho mine\n"
    (hooks / "pre-commit").write_text(foreign)
    assert run_cli("hooks", "install", "--force", cwd=repo.path).code == 0
    r = run_cli("hooks", "uninstall", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "restored pre-commit hook: .git/hooks/pre-commit (from pre-commit.gitevals-backup)",
        "removed pre-push hook: .git/hooks/pre-push",
    ]
    assert (hooks / "pre-commit").read_text() == foreign
    assert not (hooks / "pre-push").exists()
    assert not (hooks / "pre-commit.gitevals-backup").exists()
    r = run_cli("hooks", "uninstall", "pre-commit", cwd=repo.path)
    assert r.out == "left pre-commit hook: .git/hooks/pre-commit was not written by gitevals\n"
    assert (hooks / "pre-commit").read_text() == foreign
