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
    from gitevals.git.tree import Repo
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


def load_run(what: str) -> Run:
    """The run artifact file ``what``, or the goldens run of revision ``what``."""
    from gitevals.commands.show import _is_path, _locate
    from gitevals.run.artifact import load

    if _is_path(what):
        return load(what)
    repo, commit, root = _locate(what)
    run = goldens_run_of_commit(repo, root, commit)
    if run is None:
        from gitevals.errors import UsageError

        raise UsageError(f"no goldens run of {what} ({commit[:12]}) in {root}/results/ or its "
                         f"git note: make one with `gitevals run --goldens-only --rev {commit}`")
    return run


def goldens_run_of_commit(repo: Repo, root: str, commit: str) -> Run | None:
    """The run of ``commit`` to gate: the preferred one among those that sent every
    bucket, from ``<root>/results/`` of the working tree (``artifact.preference``), else
    the one of the git note that counts (``store.counting``: evidence only); None when
    there is none. (The commit's complete run may have sent no
    goldens, when it was run before buckets were mapped or with named cases.)"""
    from gitevals.run.artifact import checked
    from gitevals.run.store import counting, local_runs, note_runs, pins_of

    def whole(run: Run) -> bool:
        part = run.get("goldens")
        return part is not None and not part["buckets"] and not run["interrupted"]

    local = [r for r, _ in local_runs(repo.work_root, root, commit) if whole(r)]
    if local:
        return checked(local[-1], f"{root}/results/ run {local[-1]['run_id']}")
    noted = [r for r in note_runs(repo, commit) if whole(r)]
    return counting(noted, pins_of(repo, commit))[0] if noted else None


def run(args: argparse.Namespace) -> int:
    from gitevals.git.tree import require_repo
    from gitevals.report.gate import REPORTERS
    from gitevals.suite.gate import baseline_path, gate

    artifact = load_run(args.artifact)
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
    from gitevals.settings import load_settings
    from gitevals.suite.gate import Refused, baseline_path, gate

    repo = require_repo()
    tree = RevisionTree(repo, commit)
    root = load_settings(tree)[0].root
    rel = baseline_path(root, model)
    try:
        baseline = read_baseline(tree.read(rel), rel)
        found = goldens_run_of_commit(repo, root, commit)
        if found is None:
            raise Refused(f"no goldens run pinned to {commit[:12]} to gate: `gitevals run "
                          f"--goldens-only --rev {commit}` (or `gitevals notes pull`)")
        result = gate(baseline, found, rel)
    except Refused as exc:
        return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {exc}")]
    if result.passed:
        return []
    return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {headline(result)}; see "
                                        f"`gitevals gate {commit[:12]} --baseline {model}`")]
