"""The other CI steps, through ``python -m gitevals.ci``: the step summary, the base-run
decision, and the sandbox set-up against fake ``apt-get``/``sysctl``/``bwrap`` programs
(the real ones would change this machine)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitevals.ci import steps
from gitevals.ci.__main__ import main as ci_main
from tests.conftest import run_main


def ci(*args: str, env: dict[str, str], cwd: Path | None = None
       ) -> subprocess.CompletedProcess[str]:
    """``python -m gitevals.ci ARGS`` with PATH, HOME and ``env`` alone as its environment,
    run in this process (``run_main``; test_action_local runs the steps as processes)."""
    r = run_main(ci_main, list(args), {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"],
                                       **env}, cwd)
    return subprocess.CompletedProcess(["gitevals.ci", *args], r.code, r.out, r.err)


def test_the_summary_is_appended_to_the_step_summary(tmp_path: Path) -> None:
    (tmp_path / "diff.md").write_text("| capital | 10/10 | 1/10 ▼ |\n")
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(target), "GITEVALS_DIFF_WHERE": "in the artifact"}
    r = ci("summary", str(tmp_path / "diff.md"), "--exit-code", "1", env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert target.read_text() == ("earlier step\n**gitevals diff: failed.** A scenario or "
                                  "goldens bucket regressed beyond noise (exit 1).\n\n"
                                  "| capital | 10/10 | 1/10 ▼ |\n")
    changed = ci("summary", str(tmp_path / "diff.md"), "--exit-code", "1",
                 env={**env, "GITEVALS_FAIL_ON": "any-change"})
    assert target.read_text().endswith("**gitevals diff: failed.** Something changed "
                                       "(`--fail-on any-change`, exit 1).\n\n"
                                       "| capital | 10/10 | 1/10 ▼ |\n") and changed.returncode == 0
    bad = ci("summary", str(tmp_path / "diff.md"), "--exit-code", "1",
             env={**env, "GITEVALS_FAIL_ON": "sometimes"})
    assert (bad.returncode, bad.stderr) == (2, "gitevals: error: GITEVALS_FAIL_ON='sometimes': "
                                               "give regressed, any-change or never\n")
    elsewhere = ci("summary", str(tmp_path / "diff.md"), "--exit-code", "0", env={})
    assert (elsewhere.returncode, elsewhere.stderr) == (
        0, "gitevals: $GITHUB_STEP_SUMMARY is not set (not a GitHub Actions step): no summary "
        "written\n")


def test_the_base_decision() -> None:
    assert steps.decide("0" * 40, False) == "none"  # a new branch's first push
    assert steps.decide("", False) == "none"
    assert steps.decide("a" * 40, True) == "reuse"
    assert steps.decide("a" * 40, False) == "run"


def test_base_run_writes_its_output(tmp_path: Path) -> None:
    out = tmp_path / "output"
    r = ci("base-run", "0" * 40, env={"GITHUB_OUTPUT": str(out)})
    assert (r.returncode, r.stdout) == (0, "none\n")
    assert r.stderr == "gitevals: no base revision (a new branch): nothing to compare with\n"
    assert out.read_text() == "base=none\n"


# -- setup-sandbox against fake programs ------------------------------------------------

def program(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


@pytest.fixture
def runner(tmp_path: Path) -> Path:
    """A PATH of fakes: ``apt-get install`` makes a ``bwrap`` that works; ``sysctl``
    reports and sets the AppArmor restriction from a state file (1 at first); ``sudo``
    runs its command. Every call is logged."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cat", "chmod"):  # all the fakes need: no real bwrap, apt-get or sysctl
        (bin_dir / tool).symlink_to(subprocess.check_output(
            ["sh", "-c", f"command -v {tool}"], text=True).strip())
    (tmp_path / "restrict").write_text("1\n")
    log = tmp_path / "log"
    program(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}\n'
            f'[ "$1" = install ] && printf "#!/bin/sh\\nexit 0\\n" > {bin_dir}/bwrap '
            f'&& chmod 755 {bin_dir}/bwrap\nexit 0\n')
    program(bin_dir, "sysctl", f'echo "sysctl $*" >> {log}\n'
            f'if [ "$1" = -n ]; then cat {tmp_path}/restrict; exit 0; fi\n'
            f'[ -e {tmp_path}/refuse ] && exit 1\n'
            f'echo "${{2#*=}}" > {tmp_path}/restrict\n')
    program(bin_dir, "sudo", f'echo "sudo $*" >> {log}\nshift\nexec "$@"\n')
    return tmp_path


def setup(runner: Path) -> subprocess.CompletedProcess[str]:
    return ci("setup-sandbox", env={"PATH": str(runner / "bin")})


def test_bwrap_is_installed_and_the_apparmor_restriction_lifted(runner: Path) -> None:
    r = setup(runner)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines == [
        "gitevals: kernel.apparmor_restrict_unprivileged_userns was 1 (AppArmor refused bwrap "
        "user namespaces): set to 0",
        f"gitevals: bubblewrap ready: {runner / 'bin' / 'bwrap'}"]
    log = (runner / "log").read_text()  # as root nothing goes through sudo
    assert [line for line in log.splitlines() if not line.startswith("sudo")] == [
        "apt-get install -y -qq bubblewrap",
        "sysctl -n kernel.apparmor_restrict_unprivileged_userns",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"]
    assert (runner / "restrict").read_text() == "0\n"
    again = setup(runner)  # nothing left to do: no install, no sysctl -w
    assert again.returncode == 0 and "set to 0" not in again.stderr
    assert (runner / "log").read_text().count("apt-get") == 1


def test_without_root_the_restriction_is_one_line_saying_what_to_do(runner: Path) -> None:
    (runner / "refuse").write_text("")  # sysctl -w is refused
    r = setup(runner)
    assert r.returncode == 1
    how = ("`sysctl -w` was refused" if os.geteuid() == 0
           else "this is not root and `sudo -n` failed")
    assert r.stderr == ("gitevals: kernel.apparmor_restrict_unprivileged_userns is 1 and "
                        f"could not be set to 0 ({how}): run "
                        "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` in an "
                        "earlier step, or run with --no-sandbox\n")


def test_a_bwrap_that_cannot_make_a_sandbox_is_explained(runner: Path) -> None:
    program(runner / "bin", "bwrap", "echo 'bwrap: setting up uid map: Permission denied' >&2"
            "\nexit 1\n")
    (runner / "restrict").write_text("0\n")
    r = ci("setup-sandbox", env={"PATH": str(runner / "bin"),
                                 "GITHUB_ACTIONS": "true"})
    assert r.returncode == 1
    [line] = r.stderr.splitlines()
    assert line.startswith("gitevals: bubblewrap cannot make a sandbox here (bwrap: setting "
                           "up uid map: Permission denied): ")
    assert line.endswith(", or run with --no-sandbox")


def test_as_root_nothing_goes_through_sudo() -> None:
    assert steps.as_root(["sysctl", "-w", "x=0"], euid=0) == ["sysctl", "-w", "x=0"]
    assert steps.as_root(["sysctl", "-w", "x=0"], euid=1000) == ["sudo", "-n", "sysctl", "-w",
                                                                 "x=0"]
