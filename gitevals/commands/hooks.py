"""``gitevals hooks install``: the plain git hooks, for repos without the pre-commit framework.

The scripts are ``hooks/pre-commit`` and ``hooks/pre-push`` of this project, shipped
inside the package as ``gitevals/hooks_data`` (a symlink in the source tree), so an
installed gitevals installs exactly the files the repository holds.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

NAME = "hooks"
HELP = "install gitevals' plain git hooks (pre-commit: lint staged; pre-push: publish-check)"

HOOK_NAMES = ("pre-commit", "pre-push")
MARKER = "# gitevals-hook:"
BACKUP_SUFFIX = ".gitevals-backup"
DATA_DIR = Path(__file__).resolve().parent.parent / "hooks_data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    inst = sub.add_parser(
        "install", help="put the hooks in the repository's hooks directory (honours "
        "core.hooksPath); refuses to replace a hook gitevals did not write",
        description="Install gitevals' git hooks (default: pre-commit and pre-push).",
    )
    inst.add_argument("names", nargs="*", metavar="HOOK",
                      help="which hooks (pre-commit, pre-push; default both)")
    inst.add_argument("--force", action="store_true",
                      help=f"replace a foreign hook, keeping it as <hook>{BACKUP_SUFFIX}")
    uninst = sub.add_parser(
        "uninstall", help="remove gitevals' hooks, restoring a hook --force set aside",
        description="Remove gitevals' git hooks; a hook gitevals did not write stays.",
    )
    uninst.add_argument("names", nargs="*", metavar="HOOK",
                        help="which hooks (pre-commit, pre-push; default both)")


def hook_script(name: str) -> str:
    """The text of hook ``name`` as shipped with this gitevals."""
    from gitevals.errors import UsageError

    try:
        return (DATA_DIR / name).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{DATA_DIR / name}: this gitevals install lacks its hook scripts; "
                         "reinstall it (pip install --force-reinstall gitevals)") from exc


def is_ours(text: str) -> bool:
    """A hook gitevals wrote (any version): its marker is on the second line."""
    return MARKER in "\n".join(text.splitlines()[:3])


@dataclass(frozen=True)
class Step:
    """What installing one hook does: write ``path``, after moving a foreign one to ``backup``."""

    name: str
    path: Path
    backup: Path | None
    refusal: str | None


def plan_install(hooks_dir: Path, names: tuple[str, ...], force: bool) -> list[Step]:
    """Decide every hook before touching any: a refusal leaves all hooks as they were."""
    steps = []
    for name in names:
        path = hooks_dir / name
        current = _read(path)
        if current is None or is_ours(current):
            steps.append(Step(name, path, None, None))
            continue
        backup = path.with_name(name + BACKUP_SUFFIX)
        refusal = None
        if not force:
            refusal = (f"{path}: a {name} hook gitevals did not write is installed; pass --force "
                       f"to replace it (kept as {backup.name}), or chain it: call "
                       f"{_chain_line(name)} from it")
        elif backup.exists() or backup.is_symlink():
            refusal = (f"{backup}: a backup from an earlier --force is in the way; "
                       "move it away and install again")
        steps.append(Step(name, path, backup, refusal))
    return steps


def _chain_line(name: str) -> str:
    if name == "pre-push":
        return '`gitevals publish-check --pre-push "$@"` (with the same stdin)'
    return "`gitevals lint --staged`"


def _read(path: Path) -> str | None:
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # a dangling symlink, a directory: foreign either way
        return ""


def _write(step: Step, script: str) -> None:
    step.path.parent.mkdir(parents=True, exist_ok=True)
    if step.backup is not None:
        os.replace(step.path, step.backup)
    tmp = step.path.with_name(f".{step.name}.gitevals-tmp")
    tmp.write_text(script, encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, step.path)


def run(args: argparse.Namespace) -> int:
    from gitevals.errors import UsageError
    from gitevals.git.tree import require_repo

    unknown = [n for n in args.names if n not in HOOK_NAMES]
    if unknown:
        raise UsageError(f"no gitevals hook named {unknown[0]!r}: choose from "
                         f"{', '.join(HOOK_NAMES)}")
    target = require_repo().hooks_dir()
    names = tuple(dict.fromkeys(args.names)) or HOOK_NAMES
    if args.action == "uninstall":
        return _uninstall(target, names)
    return _install(target, names, args.force)


def _install(target: Path, names: tuple[str, ...], force: bool) -> int:
    steps = plan_install(target, names, force)
    refusals = [s.refusal for s in steps if s.refusal]
    for line in refusals:
        print(f"gitevals: {line}", file=sys.stderr)
    if refusals:
        return 1
    scripts = {s.name: hook_script(s.name) for s in steps}  # all read before any write
    for step in steps:
        _write(step, scripts[step.name])
        kept = f" (previous hook kept as {step.backup.name})" if step.backup else ""
        print(f"installed {step.name} hook: {_shown(step.path)}{kept}")
    return 0


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _uninstall(target: Path, names: tuple[str, ...]) -> int:
    """Remove each gitevals hook; put back the hook ``install --force`` set aside."""
    for name in names:
        path, backup = target / name, target / (name + BACKUP_SUFFIX)
        current = _read(path)
        if current is not None and not is_ours(current):
            print(f"left {name} hook: {_shown(path)} was not written by gitevals")
            continue
        if current is not None:
            path.unlink()
        if backup.exists() or backup.is_symlink():
            os.replace(backup, path)
            print(f"restored {name} hook: {_shown(path)} (from {backup.name})")
        elif current is not None:
            print(f"removed {name} hook: {_shown(path)}")
    return 0
