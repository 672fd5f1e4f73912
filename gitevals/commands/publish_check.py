"""``gitevals publish-check``: refuse to publish a revision whose eval tree would not lint.

Each revision is read from git objects alone (``RevisionTree``): what is published
is the commit, so a working tree fixed after the fact cannot rescue it. Nothing
from the checked tree is imported or executed (lint is static).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format

if TYPE_CHECKING:
    from gitevals.git.pushes import PushCheck
    from gitevals.git.repo import Repo
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
    add_format(parser, ("text", "json", "github", "sarif"),
               "text (default), json, github workflow annotations, or sarif "
               "(SARIF 2.1.0 for code scanning: one result per finding, naming "
               "its commit and refs)")
    parser.add_argument(
        "--require-gate", metavar="NAME",
        help="also refuse a revision whose pinned run does not pass `gitevals gate` against "
        "its <root>/baseline-<NAME>.json",
    )


def run(args: argparse.Namespace) -> int:
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.lint import lint_tree
    from gitevals.lint.publish import Checked
    from gitevals.report.publish import REPORTERS

    if args.each_commit and not args.pre_push:
        from gitevals.errors import UsageError

        raise UsageError("--each-commit checks the commits a push adds: use it with --pre-push")
    repo = require_repo()
    plan = _push_plan(args, repo) if args.pre_push else _rev_plan(args.revs or ["HEAD"], repo)
    published = _published(repo)
    checked = [Checked(t, _gated(_since(repo, lint_tree(RevisionTree(repo, t.commit)),
                                        t.commit, published), t.commit, args.require_gate))
               for t in plan.publications]
    if args.format == "sarif":
        from gitevals.report.publish import sarif_log

        log = sarif_log(checked)
        sys.stdout.write(log.text)
        if log.note:
            sys.stderr.write(f"gitevals: {log.note}\n")
    else:
        sys.stdout.write(REPORTERS[args.format](checked, plan.passed))
    return 0 if all(c.ok for c in checked) else 1


#: How far back (first parents) the last published state is looked for.
MAX_WALK = 100_000


def _published(repo: Repo) -> set[str]:
    """The commits already published: tagged, or the tip of a remote-tracking ref."""
    published = set(repo.tags_by_commit())
    for remote in repo.remotes():
        published.update(filter(None, map(repo.peel_to_commit, repo.remote_refs(remote))))
    return published


def published_before(repo: Repo, commit: str, published: set[str]) -> str | None:
    """The last published state ``commit`` builds on: its nearest first-parent ancestor
    (itself excluded) that a tag or a remote ref points to; None when there is none."""
    walk = repo.first_parents(commit)
    next(walk, None)
    for n, (sha, _) in enumerate(walk):
        if sha in published:
            return sha
        if n >= MAX_WALK:
            break
    return None


def _since(repo: Repo, result: LintResult, commit: str, published: set[str]) -> LintResult:
    """``result`` with the goldens-id findings (GE620-GE623) of ``commit`` against the
    last published state, not only its parent: a removal or a reuse stays refused when
    an unrelated commit sits on top of it."""
    from gitevals.git.trees import RevisionTree
    from gitevals.lint import LintResult
    from gitevals.lint.retired import lint_retired
    from gitevals.settings import load_settings

    base = published_before(repo, commit, published)
    if base is None:
        return result
    tree = RevisionTree(repo, commit)
    settings, bad = load_settings(tree)
    if bad:
        return result  # the settings' own findings say why
    more = [f for f in lint_retired(tree, settings.root, RevisionTree(repo, base))
            if f not in result.findings]
    return LintResult(tuple(sorted([*result.findings, *more])), result.files) if more else result


def _gated(result: LintResult, commit: str, model: str | None) -> LintResult:
    """``result`` with the gate's refusal (GE639) when ``--require-gate`` asks for one."""
    if model is None:
        return result
    from gitevals import api
    from gitevals.lint import LintResult

    more = api.gate_findings(commit, model)
    return LintResult(tuple(sorted([*result.findings, *more])), result.files) if more else result


def _rev_plan(revs: Sequence[str], repo: Repo) -> PushCheck:
    from gitevals.git.pushes import PushCheck, group

    # Resolve every revision first: an unknown one is a usage error before any work.
    pairs = [(repo.resolve(rev), rev) for rev in revs]
    return PushCheck(group(pairs), ())


def _read_stdin() -> str:
    """git's pre-push lines; nothing when stdin is a terminal (run by hand)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    return stream.buffer.read().decode("utf-8", "surrogateescape")


def _push_plan(args: argparse.Namespace, repo: Repo) -> PushCheck:
    from gitevals.errors import UsageError
    from gitevals.git import pushes

    if len(args.revs) > 2:
        raise UsageError("with --pre-push, the arguments are git's <remote name> <url>; "
                         "name revisions to check without --pre-push")
    remote = (args.remote or (args.revs[0] if args.revs else None)
              or os.environ.get("PRE_COMMIT_REMOTE_NAME"))
    pushed = pushes.parse_pre_push(_read_stdin()) or pushes.from_pre_commit_env(os.environ)
    plan = pushes.plan_push(pushed, repo.peel_to_commit, repo.is_notes_commit)
    if not args.each_commit:
        return plan
    known = [r.remote_sha for r in pushed if r.remote_sha and not pushes.is_zero(r.remote_sha)]
    return pushes.expand(plan, lambda t: _history(repo, t.commit, known, remote))


def _history(repo: Repo, tip: str, known: list[str], remote: str | None) -> list[str]:
    """The commits a push adds under ``tip``; the tip itself always (a tag on old work)."""
    commits = repo.new_commits(tip, known + (repo.remote_refs(remote) if remote else []))
    return commits if tip in commits else [*commits, tip]
