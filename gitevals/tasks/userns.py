"""Why bubblewrap cannot make a sandbox on this machine, in words a user can act on.

bwrap's own error ("setting up uid map: Permission denied") names the symptom; the cause
is usually a kernel setting that refuses unprivileged user namespaces, and on a GitHub
Actions runner (Ubuntu 24.04) it is AppArmor's restriction. :func:`diagnose` is pure (it
takes the settings and the environment); :func:`read_settings` is the IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

#: The kernel settings that refuse unprivileged user namespaces, as ``sysctl`` names them.
APPARMOR = "kernel.apparmor_restrict_unprivileged_userns"
DEBIAN_CLONE = "kernel.unprivileged_userns_clone"
MAX_USERNS = "user.max_user_namespaces"


def read_settings(root: Path = Path("/proc/sys")) -> dict[str, str]:
    """The settings above that this kernel has (a missing one is left out)."""
    found = {}
    for name in (APPARMOR, DEBIAN_CLONE, MAX_USERNS):
        try:
            found[name] = (root / name.replace(".", "/")).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
    return found


def on_github(env: Mapping[str, str]) -> bool:
    """A GitHub Actions runner sets ``GITHUB_ACTIONS=true`` in every step."""
    return env.get("GITHUB_ACTIONS") == "true"


def diagnose(settings: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """The cause and its fix when bwrap failed, or None when no setting explains it (and
    this is no GitHub runner)."""
    if settings.get(APPARMOR) == "1":
        cause = (f"{APPARMOR} is 1: AppArmor refuses unprivileged user namespaces to "
                 "programs without a profile, bwrap among them (Ubuntu 23.10 and later, "
                 f"GitHub's ubuntu-24.04 runners); run `sudo sysctl -w {APPARMOR}=0` first")
    elif settings.get(DEBIAN_CLONE) == "0":
        cause = (f"{DEBIAN_CLONE} is 0: this kernel refuses unprivileged user namespaces; "
                 f"run `sudo sysctl -w {DEBIAN_CLONE}=1` first")
    elif settings.get(MAX_USERNS) == "0":
        cause = (f"{MAX_USERNS} is 0: user namespaces are off; run "
                 f"`sudo sysctl -w {MAX_USERNS}=10000` first")
    elif on_github(env):
        return ("on this GitHub Actions runner no kernel setting explains it (is the job in "
                "a container? bwrap needs user namespaces there too)")
    else:
        return None
    if on_github(env):
        cause += " (the gitevals action, action.yml, does it for you)"
    return cause


def missing_hint(env: Mapping[str, str]) -> str | None:
    """What to add to a GitHub workflow when bwrap is not installed; None elsewhere."""
    if not on_github(env):
        return None
    return ("on a GitHub runner, add a step `sudo apt-get install -y bubblewrap` (the "
            "gitevals action, action.yml, installs it)")
