"""``gitevals gate ARTIFACT --baseline NAME``: a run against the baseline of the base model.

Per bucket and drift slice, the delta in points with its interval; exit 1 when a drop
beyond the drift budget's hard-fail threshold happened in any slice, 2 when there is
no baseline or it was measured with other goldens or graders.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.findings import Finding
    from gitevals.run.artifact import Run
    from gitevals.suite.gate import Baseline

NAME = "gate"
HELP = ("compare a run with <root>/baseline-<NAME>.json per bucket and drift slice; exit 1 "
        "on a drop beyond the hard-fail threshold")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT|REV",
                        help="the run artifact (.json), or a revision whose run to gate")
    parser.add_argument("--baseline", required=True, metavar="NAME",
                        help="the baseline's model name (<root>/baseline-<NAME>.json of the "
                             "working tree)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")


def read_baseline(data: bytes | None, rel: str) -> Baseline:
    """The baseline in ``data`` (the bytes of ``rel``); refused when absent or not one."""
    from gitevals.suite.gate import Refused, check_baseline

    if data is None:
        raise Refused(f"no baseline, no comparison: {rel} does not exist; write it from a run "
                      "of the unmodified base model with `gitevals baseline ARTIFACT --model "
                      "NAME` and commit it")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Refused(f"{rel}: not JSON ({exc}); write it again with `gitevals baseline`") from None
    return check_baseline(doc, rel)


def _load(what: str) -> Run:
    from gitevals.commands.show import _is_path, run_for_rev
    from gitevals.run.artifact import load

    return load(what) if _is_path(what) else run_for_rev(what)


def run(args: argparse.Namespace) -> int:
    from gitevals.git.tree import require_repo
    from gitevals.report.gate import REPORTERS
    from gitevals.suite.gate import baseline_path, gate

    artifact = _load(args.artifact)
    rel = baseline_path(artifact["root"], args.baseline)
    path = require_repo().work_root / rel
    data = path.read_bytes() if path.is_file() else None
    result = gate(read_baseline(data, rel), artifact, rel)
    sys.stdout.write(REPORTERS[args.format](result))
    sys.stdout.flush()
    return 0 if result.passed else 1


def publish_findings(commit: str, model: str) -> list[Finding]:
    """GE639 when the run pinned to ``commit`` does not pass the gate against the
    baseline ``model`` of that commit (read from git objects: the published tree)."""
    from gitevals.findings import Finding
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.report.gate import headline
    from gitevals.run.store import run_of_commit
    from gitevals.settings import load_settings
    from gitevals.suite.gate import Refused, baseline_path, gate

    repo = require_repo()
    tree = RevisionTree(repo, commit)
    root = load_settings(tree)[0].root
    rel = baseline_path(root, model)
    try:
        baseline = read_baseline(tree.read(rel), rel)
        found = run_of_commit(repo, repo.work_root, root, commit)
        if found is None:
            raise Refused(f"no run pinned to {commit[:12]} to gate: `gitevals run --rev "
                          f"{commit}` (or `gitevals notes pull`)")
        result = gate(baseline, found.run, rel)
    except Refused as exc:
        return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {exc}")]
    if result.passed:
        return []
    return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {headline(result)}; see "
                                        f"`gitevals gate {commit[:12]} --baseline {model}`")]
