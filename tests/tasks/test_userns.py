"""Why bwrap cannot make a sandbox, said precisely: the kernel setting that refuses user
namespaces (AppArmor's restriction on Ubuntu 24.04 runners first), and on a GitHub Actions
runner (``GITHUB_ACTIONS=true``) what to add to the workflow."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.tasks import userns
from tests.conftest import Repo, run_cli
from tests.support.tasks import commit_task

GITHUB = {"GITHUB_ACTIONS": "true"}
UID_MAP = "bwrap: setting up uid map: Permission denied"


def test_read_settings_reads_what_the_kernel_has(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("1\n")
    assert userns.read_settings(tmp_path) == {userns.APPARMOR: "1"}
    assert userns.MAX_USERNS in userns.read_settings()  # this machine's /proc/sys


@pytest.mark.parametrize(("settings", "env", "says"), [
    ({userns.APPARMOR: "1", userns.MAX_USERNS: "63000"}, GITHUB,
     "kernel.apparmor_restrict_unprivileged_userns is 1: AppArmor refuses unprivileged user "
     "namespaces to programs without a profile, bwrap among them (Ubuntu 23.10 and later, "
     "GitHub's ubuntu-24.04 runners); run `sudo sysctl -w "
     "kernel.apparmor_restrict_unprivileged_userns=0` first (the gitevals action, action.yml, "
     "does it for you)"),
    ({userns.APPARMOR: "1"}, {}, "run `sudo sysctl -w "
     "kernel.apparmor_restrict_unprivileged_userns=0` first"),
    ({userns.APPARMOR: "0", userns.DEBIAN_CLONE: "0"}, {},
     "kernel.unprivileged_userns_clone is 0"),
    ({userns.MAX_USERNS: "0"}, {}, "`sudo sysctl -w user.max_user_namespaces=10000`"),
    ({userns.MAX_USERNS: "63000"}, GITHUB,
     "on this GitHub Actions runner no kernel setting explains it"),
], ids=["apparmor-on-github", "apparmor", "debian", "max-zero", "github-unexplained"])
def test_the_cause_is_named(settings: dict[str, str], env: dict[str, str], says: str) -> None:
    said = userns.diagnose(settings, env)
    assert said is not None and says in said, said
    assert "\n" not in said


def test_nothing_to_say_off_github_without_a_cause() -> None:
    assert userns.diagnose({userns.MAX_USERNS: "63000"}, {"GITHUB_ACTIONS": "false"}) is None
    assert userns.missing_hint({}) is None
    assert "sudo apt-get install -y bubblewrap" in (userns.missing_hint(GITHUB) or "")


def test_on_a_github_runner_a_failing_bwrap_is_explained(repo: Repo, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{UID_MAP}' >&2\nexit 1\n")
    fake.chmod(0o755)
    commit_task(repo, "1.0\n")
    res = run_cli("run", cwd=repo.path, env={"GITEVALS_BWRAP": str(fake), **GITHUB})
    assert res.code == 2 and "Traceback" not in res.err
    (line,) = [x for x in res.err.splitlines() if "bwrap" in x]
    assert f"{fake} cannot make a sandbox here ({UID_MAP}): " in line
    cause = userns.diagnose(userns.read_settings(), GITHUB)  # this machine's own settings
    assert f": {cause}, or pass --no-sandbox" in line
    plain = run_cli("run", cwd=repo.path, env={"GITEVALS_BWRAP": str(fake)})
    (off,) = [x for x in plain.err.splitlines() if "bwrap" in x]
    assert "GitHub" not in off and off.endswith("or pass --no-sandbox")


def test_on_a_github_runner_a_missing_bwrap_says_what_to_add(repo: Repo) -> None:
    commit_task(repo, "1.0\n")
    res = run_cli("run", cwd=repo.path, env={"GITEVALS_BWRAP": "/nonexistent/bwrap", **GITHUB})
    assert res.code == 2
    (line,) = [x for x in res.err.splitlines() if "bwrap" in x]
    assert ("install it (Debian/Ubuntu: apt-get install bubblewrap; on a GitHub runner, add a "
            "step `sudo apt-get install -y bubblewrap` (the gitevals action, action.yml, "
            "installs it)), or pass --no-sandbox") in line
