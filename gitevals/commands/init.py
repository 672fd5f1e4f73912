"""``gitevals init``: scaffold an eval tree that lints clean, never overwriting a file."""

from __future__ import annotations

import argparse
import os
import posixpath
import sys
from pathlib import Path

NAME = "init"
HELP = "scaffold an eval tree (example case and grader, settings, pre-commit config)"

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="DIR",
                        help="the eval root, relative to the top of the repository "
                        "(default: the configured root, else evals)")
    parser.add_argument("--graders", action="store_true",
                        help="write the grader starter kit into <root>/graders/ instead: "
                             "schema compliance, exact match, execution (sandboxed), LLM judge")


def _top() -> Path:
    """Where settings live: the top of the work tree, else the current directory."""
    from gitevals.git.repo import open_repo

    repo = open_repo()
    return repo.work_root if repo is not None else Path.cwd().resolve()


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _outside(top: Path, rel: str) -> str | None:
    """Why writing ``rel`` would land outside the repository: it, or a directory above
    it, is a symlink that resolves out of ``top``. Checked before anything is read or
    written, so init never writes (nor appends) through such a link."""
    real_top = os.path.realpath(top)
    path = top / rel
    for p in (path, *path.parents):
        if p == top:
            return None
        if p.is_symlink() and os.path.commonpath(
                [real_top, os.path.realpath(p)]) != real_top:
            where = p.relative_to(top).as_posix()
            return (f"{where}: a symlink to {os.readlink(p)}, outside the repository; "
                    "gitevals init does not write through it: replace it with a "
                    "directory or file of the repository")
    return None


def _root(top: Path, asked: str | None) -> str:
    """The eval root: ``--root``, or the one settings already name, or ``evals``."""
    from gitevals.errors import UsageError
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    settings, _ = load_settings(WorkingTree(top))
    configured = settings.root if settings.source else None
    if asked is None:
        return configured or "evals"
    root = posixpath.normpath(Path(asked).as_posix())
    if root in (".", "..") or root.startswith(("../", "/")):
        raise UsageError(f"--root {asked}: name a directory inside the repository, like evals")
    if configured and configured != root:
        raise UsageError(f"{settings.source}: settings say root = {configured!r}, not {root!r}; "
                         "change the setting or drop --root")
    return root


def _blocked(top: Path, rel: str) -> str | None:
    """Why ``rel`` cannot be created: it exists, or a parent is not a directory."""
    path = top / rel
    if path.exists() or path.is_symlink():
        return f"{rel}: already exists; gitevals init never overwrites a file: move it away " \
               "or scaffold elsewhere with --root"
    for parent in path.parents:
        if parent == top:
            break
        if parent.exists() and not parent.is_dir():
            return f"{parent.relative_to(top).as_posix()}: not a directory; move it away"
    return None


def run(args: argparse.Namespace) -> int:
    from gitevals import scaffold
    from gitevals.errors import UsageError
    from gitevals.schema import SCHEMA_DIR

    top = _top()
    root = _root(top, args.root)
    for rel in (root, "pyproject.toml", "gitevals.toml", PRE_COMMIT_CONFIG):
        if (why := _outside(top, rel)) is not None:
            raise UsageError(why)
    if args.graders:
        return _grader_kit(top, root)
    pyproject = _read(top / "pyproject.toml")
    settings_exist = (top / "gitevals.toml").exists() or scaffold.has_settings(pyproject)
    schema = (SCHEMA_DIR / "case.schema.json").read_text(encoding="utf-8")
    files = scaffold.plan(root, schema, pyproject, settings_exist)
    write_config = not (top / PRE_COMMIT_CONFIG).exists()
    if write_config:
        files.append(scaffold.File(PRE_COMMIT_CONFIG, scaffold.pre_commit_config(root)))
    for f in files:  # a link below the root (evals/cases -> /elsewhere) as well
        if (why := _outside(top, f.path)) is not None:
            raise UsageError(why)
    # Check every file before writing any: a refusal leaves the tree untouched.
    blocked = [b for f in files if not f.append and (b := _blocked(top, f.path))]
    for line in blocked:
        print(f"gitevals: {line}", file=sys.stderr)
    if blocked:
        return 1
    for f in files:
        _write(top / f.path, f.text, f.append)
        print(f"{'appended [tool.gitevals] to' if f.append else 'created'} {f.path}")
    _next_steps(root, write_config, scaffold.pre_commit_config(root))
    return 0


def _grader_kit(top: Path, root: str) -> int:
    """``--graders``: the four templates, each checked before any is written."""
    from gitevals.errors import UsageError
    from gitevals.grader_templates import TEMPLATES

    paths = [f"{root}/graders/{name}" for name in TEMPLATES]
    for rel in paths:
        if (why := _outside(top, rel)) is not None:
            raise UsageError(why)
    blocked = [b for rel in paths if (b := _blocked(top, rel))]
    for line in blocked:
        print(f"gitevals: {line}", file=sys.stderr)
    if blocked:
        return 1
    for rel, text in zip(paths, TEMPLATES.values(), strict=True):
        _write(top / rel, text, False)
        print(f"created {rel}")
    print("next: edit them, name one in a case (grader: {name: exact_match.matches}), "
          "then run `gitevals lint`; see docs/graders.md")
    return 0


def _write(path: Path, text: str, append: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "x", encoding="utf-8") as f:
        f.write(text)


def _next_steps(root: str, wrote_config: bool, config: str) -> None:
    from gitevals.scaffold import INSTALL_COMMANDS

    if not wrote_config:
        print(f"{PRE_COMMIT_CONFIG} exists and was left alone; to run gitevals from it, "
              "add these hooks:\n")
        print(config)
    print(f"next: edit {root}/cases/example.yaml, then run `gitevals lint`")
    print("install the hooks (either order; each keeps the other's hook):")
    for command in INSTALL_COMMANDS:
        print(f"  $ {command}")
    print("gitevals' pre-push hook refuses a release tag on a commit the remote already has,\n"
          "which pre-commit's pre-push stage lets through. "
          "Without pre-commit: `gitevals hooks install`.")
