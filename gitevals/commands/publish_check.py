"""``gitevals publish-check``: refuse to publish a revision whose eval tree would not lint.

Each revision is read from git objects alone (``RevisionTree``): what is published
is the commit, so a working tree fixed after the fact cannot rescue it. Nothing
from the checked tree is imported or executed (lint is static).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitevals.findings import Finding
    from gitevals.git.pushes import Plan, Target
    from gitevals.git.tree import Repo
    from gitevals.lint import LintResult

NAME = "publish-check"
HELP = "refuse a push or release whose revisions' eval trees do not lint (reads git objects only)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "revs", nargs="*", metavar="REV",
        help="revisions to check (default HEAD); with --pre-push, the remote name and URL "
        "git passes to the hook",
    )
    parser.add_argument(
        "--pre-push", action="store_true",
        help="read git's pre-push stdin and check every pushed ref (tags peeled; deletions "
        "pass); under the pre-commit framework, PRE_COMMIT_TO_REF when stdin is empty",
    )
    parser.add_argument("--remote", metavar="NAME", help="the remote being pushed to")
    parser.add_argument(
        "--each-commit", action="store_true",
        help="also check every commit a push adds (not only each pushed tip)",
    )
    parser.add_argument("--format", choices=("text", "json", "github"), default="text")


@dataclass(frozen=True)
class Checked:
    """One checked commit: the refs it publishes and its lint result."""

    target: Target
    result: LintResult

    @property
    def ok(self) -> bool:
        return self.result.ok


def run(args: argparse.Namespace) -> int:
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.lint import lint_tree

    if args.each_commit and not args.pre_push:
        from gitevals.errors import UsageError

        raise UsageError("--each-commit checks the commits a push adds: use it with --pre-push")
    repo = require_repo()
    plan = _push_plan(args, repo) if args.pre_push else _rev_plan(args.revs or ["HEAD"], repo)
    checked = [Checked(t, lint_tree(RevisionTree(repo, t.commit))) for t in plan.targets]
    render = {"text": render_text, "json": render_json, "github": render_github}[args.format]
    sys.stdout.write(render(checked, plan.passed))
    return 0 if all(c.ok for c in checked) else 1


def _rev_plan(revs: Sequence[str], repo: Repo) -> Plan:
    from gitevals.git.pushes import Plan, group

    # Resolve every revision first: an unknown one is a usage error before any work.
    pairs = [(repo.resolve(rev), rev) for rev in revs]
    return Plan(group(pairs), ())


def _read_stdin() -> str:
    """git's pre-push lines; nothing when stdin is a terminal (run by hand)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    return stream.buffer.read().decode("utf-8", "surrogateescape")


def _push_plan(args: argparse.Namespace, repo: Repo) -> Plan:
    from gitevals.errors import UsageError
    from gitevals.git import pushes

    if len(args.revs) > 2:
        raise UsageError("with --pre-push, the arguments are git's <remote name> <url>; "
                         "name revisions to check without --pre-push")
    remote = (args.remote or (args.revs[0] if args.revs else None)
              or os.environ.get("PRE_COMMIT_REMOTE_NAME"))
    pushed = pushes.parse_pre_push(_read_stdin()) or pushes.from_pre_commit_env(os.environ)
    plan = pushes.plan_push(pushed, repo.peel_to_commit)
    if not args.each_commit:
        return plan
    known = [r.remote_sha for r in pushed if r.remote_sha and not pushes.is_zero(r.remote_sha)]
    return pushes.expand(plan, lambda t: _history(repo, t.commit, known, remote))


def _history(repo: Repo, tip: str, known: list[str], remote: str | None) -> list[str]:
    """The commits a push adds under ``tip``; the tip itself always (a tag on old work)."""
    commits = repo.new_commits(tip, known + (repo.remote_refs(remote) if remote else []))
    return commits if tip in commits else [*commits, tip]


# Reporters: finished results in, text out.

def _finding_line(f: Finding) -> str:
    """As ``gitevals lint`` prints it: ``path:line:col: CODE message``, warnings tagged."""
    tag = " (warning)" if f.severity == "warning" else ""
    return f"{f.path}:{f.line}:{f.col}: {f.code}{tag} {f.message}"


def render_text(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """``refused``/``ok`` per commit with its refs, each finding as ``path:line:col: CODE msg``."""
    lines = []
    for c in checked:
        refs = ", ".join(c.target.refs)
        if c.ok:
            lines.append(f"ok: {refs} at {c.target.commit} ({c.result.files} eval files)")
        else:
            n = c.result.errors
            lines.append(f"refused: {refs} at {c.target.commit}: "
                         f"{n} error{'s' if n != 1 else ''}")
        lines.extend(f"  {_finding_line(f)}" for f in sorted(c.result.findings))
    lines.extend(f"ok: {p}" for p in passed)
    lines.append(_summary(checked))
    return "\n".join(lines) + "\n"


def _summary(checked: Sequence[Checked]) -> str:
    refused = sum(1 for c in checked if not c.ok)
    if not checked:
        return "publish check: nothing to check"
    if not refused:
        return f"publish check: {len(checked)} revision(s) ok"
    return (f"publish check: {refused} of {len(checked)} revision(s) refused; fix the "
            "findings and commit: the commit is what is published, not the working tree")


def render_json(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """A stable document: revisions in check order, findings sorted, keys sorted."""
    doc: dict[str, Any] = {
        "ok": all(c.ok for c in checked),
        "revisions": [
            {"commit": c.target.commit, "refs": list(c.target.refs), "ok": c.ok,
             "files": c.result.files,
             "findings": [f.as_dict() for f in sorted(c.result.findings)]}
            for c in checked
        ],
        "passed": list(passed),
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def render_github(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """GitHub workflow annotations, one per finding, naming the commit and its refs."""
    lines = []
    for c in checked:
        where = f"{', '.join(c.target.refs)} at {c.target.commit[:12]}"
        for f in sorted(c.result.findings):
            lines.append(
                f"::{f.severity} file={_escape(f.path, True)},line={f.line},col={f.col},"
                f"title={_escape(f.code, True)}::{_escape(f'{f.message} ({where})')}"
            )
    lines.append(_summary(checked))
    return "\n".join(lines) + "\n"
