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

from gitevals.commands._args import add_control, add_format
from gitevals.errors import GitevalsError

if TYPE_CHECKING:
    from gitevals.findings import Finding
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Baseline
    from gitevals.run.artifact import Run

NAME = "gate"
HELP = ("compare a run with <root>/baseline-<NAME>.json per bucket and drift slice; exit 1 "
        "on a drop beyond the hard-fail threshold")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT|REV",
                        help="the run artifact (.json), or a revision whose run to gate")
    parser.add_argument("--baseline", required=True, metavar="NAME",
                        help="the baseline's model name (<root>/baseline-<NAME>.json of the "
                             "working tree)")
    add_format(parser, ("text", "json", "markdown"))
    add_control(parser, "the counted slices")


def read_baseline(data: bytes | None, rel: str) -> Baseline:
    """The baseline in ``data`` (the bytes of ``rel``); refused when absent or not one."""
    from gitevals.goldens.gate import Refused, check_baseline

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
    """The run artifact file ``what``, or the goldens run of revision ``what``; either
    way checked against the commit it names (``pinned``)."""
    from gitevals.commands.show import is_path, locate
    from gitevals.git.repo import require_repo
    from gitevals.run.artifact import load

    if is_path(what):
        run = load(what)
        pinned(require_repo(), run, what)
        return run
    repo, commit, root = locate(what)
    found = goldens_run_of_commit(repo, root, commit)
    if found is None:
        from gitevals.errors import UsageError

        raise UsageError(f"no goldens run of {what} ({commit[:12]}) in {root}/ or its "
                         f"git note: make one with `gitevals run --goldens-only --rev {commit}`")
    return found


def pinned(repo: Repo, run: Run, label: str) -> None:
    """Refuse ``run`` unless its pins are those of the commit it names, read from git
    objects: the commit exists, its tree is the run's, and every pinned goldens file
    (goldens, drift suite, sources, grader modules and what they import) is that blob
    there. A file's say-so is never taken for what a commit holds."""
    from gitevals.errors import GitevalsError
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Refused

    try:
        tree = RevisionTree(repo, run["commit"])
    except GitevalsError:
        raise Refused(f"{label}: run {run['run_id']} names commit {run['commit'][:12]}, "
                      "which is not in this repository: fetch it, or gate a run of this "
                      "repository") from None
    if tree.commit != run["commit"] or tree.tree_sha != run["tree"]:
        raise Refused(f"{label}: run {run['run_id']} claims tree {str(run['tree'])[:12]} for "
                      f"commit {run['commit'][:12]}, whose tree is "
                      f"{str(tree.tree_sha)[:12]}: not a run of that commit")
    from gitevals.benchcache import PIN

    part = run.get("goldens")
    for path, sha in sorted((part["files"] if part is not None else {}).items()):
        if path.startswith(PIN):
            continue  # a named benchmark is outside the commit: compared with the baseline's
        if tree.blob_sha(path) != sha:
            raise Refused(f"{label}: run {run['run_id']} pins {path} at {sha[:12]}, but "
                          f"commit {run['commit'][:12]} holds "
                          f"{(tree.blob_sha(path) or 'no such file')[:12]}: not a run of that "
                          "commit")
    if part is not None:
        _closure_pinned(tree, run["root"], part["files"], label, run["run_id"])


def _closure_pinned(tree: RevisionTree, root: str, files: dict[str, str], label: str,
                    run_id: str) -> None:
    """Every grader module pinned must come with the tree files it imports (a run
    recorded before that pinned the modules alone: refused, run it again)."""
    from gitevals.goldens.gate import Refused
    from gitevals.graderimports import closure

    graders = f"{root}/graders/" if root else "graders/"
    modules = [p for p in files if p.startswith(graders) and p.endswith(".py")]
    for path, sha in closure(tree, modules, root).items():
        if files.get(path) != sha:
            raise Refused(f"{label}: run {run_id} does not pin {path} ({sha[:12]}), which "
                          "its graders import: run the goldens again with this gitevals")


def goldens_run_of_commit(repo: Repo, results: str, commit: str, notes_only: bool = False
                          ) -> Run | None:
    """The run of ``commit`` to gate: among those that sent every bucket, the one of its
    git note that counts (``store.counting``), else (unless ``notes_only``) from
    ``results`` (``Settings.results``) of the working tree; checked against the commit
    (``pinned``).
    None when there is none. (The commit's complete run may have sent no goldens, when
    it was run before buckets were mapped or with named cases.)"""
    from gitevals.run.artifact import checked
    from gitevals.run.store import counting, local_runs, note_runs, pins_of

    def whole(run: Run) -> bool:
        part = run.get("goldens")
        return part is not None and not part["buckets"] and not run["interrupted"]

    noted = [r for r in note_runs(repo, commit) if whole(r)]
    counted = counting(noted, pins_of(repo, commit))[0] if noted else None
    if counted is not None:  # the note's run that counts: evidence, by place in the note
        run, label = counted, f"git note on {commit[:12]}"
    else:
        local = [] if notes_only else [r for r, _ in local_runs(repo.work_root, results, commit)
                                       if whole(r)]
        if not local:
            return None
        label = f"{results}/ run {local[-1]['run_id']}"
        run = checked(local[-1], label)
    pinned(repo, run, label)
    return run


def run_by_id(repo: Repo, results: str, commit: str, run_id: str, notes_only: bool
              ) -> Run | None:
    """Run ``run_id`` of ``commit`` (its note, else results/ unless ``notes_only``)."""
    from gitevals.run.artifact import checked
    from gitevals.run.store import local_runs, note_runs

    for run in note_runs(repo, commit):
        if run["run_id"] == run_id:
            return checked(run, f"git note on {commit[:12]}")
    if notes_only:
        return None
    for run, path in local_runs(repo.work_root, results, commit):
        if run["run_id"] == run_id:
            return checked(run, str(path))
    return None


def verified_baseline(repo: Repo, baseline: Baseline, rel: str, notes_only: bool,
                      results: str | None = None) -> Baseline:
    """``baseline`` once it is what its run measured: the run it names, read through the
    commit it is pinned to, with the same slices and pins (``same_run``); its run is looked
    for in the note, then (unless ``notes_only``) in ``results`` of the working tree."""
    from gitevals.goldens.gate import Refused, same_run
    from gitevals.run.store import default_results

    results = results or default_results(rel.rpartition("/")[0])
    where = "its git note" if notes_only else f"its git note or {results}/"
    try:
        run = run_by_id(repo, results, baseline["commit"], baseline["run_id"], notes_only)
    except GitevalsError as exc:
        raise Refused(f"{rel}: its run cannot be read: {exc}") from None
    if run is None:
        raise Refused(f"{rel}: run {baseline['run_id']} of commit {baseline['commit'][:12]}, "
                      f"which it copies, is not in {where}: a baseline is checked against "
                      "its run (`gitevals notes pull`, or write it again from a run here)")
    pinned(repo, run, rel)
    why = same_run(baseline, run)
    if why is not None:
        raise Refused(f"{rel}: not what its run measured: {why}; write it again with "
                      "`gitevals baseline ARTIFACT --model NAME --force`")
    return baseline


def lints(repo: Repo, commit: str) -> None:
    """Refuse a run of a commit whose eval tree does not lint (duplicate golden ids, a
    drift budget that is not a number...): its numbers measure nothing the gate trusts."""
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Refused
    from gitevals.lint import lint_tree

    result = lint_tree(RevisionTree(repo, commit))
    errors = [f for f in result.findings if f.severity == "error"]
    if errors:
        f = errors[0]
        raise Refused(f"commit {commit[:12]} does not lint ({len(errors)} error"
                      f"{'s' * (len(errors) != 1)}; the first: {f.path}:{f.line}:{f.col}: "
                      f"{f.code} {f.message}): fix it; a run of it is not gated")


def run(args: argparse.Namespace) -> int:
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import WorkingTree
    from gitevals.goldens.gate import baseline_path, gate
    from gitevals.report.gate import REPORTERS
    from gitevals.settings import load_settings

    artifact = load_run(args.artifact)
    repo = require_repo()
    rel = baseline_path(artifact["root"], args.baseline)
    path = repo.work_root / rel
    data = path.read_bytes() if path.is_file() else None
    settings = load_settings(WorkingTree(repo.work_root))[0]
    baseline = verified_baseline(repo, read_baseline(data, rel), rel, notes_only=False,
                                 results=settings.results)
    result = gate(baseline, artifact, rel,  # another measuring stick is said first
                  settings.control if args.control is None else args.control,
                  settings.alpha if args.alpha is None else args.alpha)
    lints(repo, artifact["commit"])
    sys.stdout.write(REPORTERS[args.format](result))
    sys.stdout.flush()
    return 0 if result.passed else 1


def publish_findings(commit: str, model: str) -> list[Finding]:
    """GE639 when the run pinned to ``commit`` does not pass the gate against the
    baseline ``model`` of that commit. Everything is read from git objects: the published
    tree, the baseline in it, and the runs in git notes (never the working tree's
    results/, which anyone with the checkout can write)."""
    from gitevals.findings import Finding
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Refused, baseline_path, gate
    from gitevals.report.gate import headline
    from gitevals.settings import load_settings

    repo = require_repo()
    tree = RevisionTree(repo, commit)
    settings = load_settings(tree)[0]
    root = settings.root
    rel = baseline_path(root, model)
    try:
        baseline = verified_baseline(repo, read_baseline(tree.read(rel), rel), rel,
                                     notes_only=True)
        found = goldens_run_of_commit(repo, settings.results, commit, notes_only=True)
        if found is None:
            raise Refused(f"no goldens run pinned to {commit[:12]} in its git note to gate: "
                          f"`gitevals run --goldens-only --rev {commit}` (or `gitevals notes "
                          "pull`)")
        result = gate(baseline, found, rel, settings.control, settings.alpha)
    except GitevalsError as exc:
        return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {exc}")]
    if result.passed:
        return []
    return [Finding(rel, 1, 1, "GE639", f"--require-gate {model}: {headline(result)}; see "
                                        f"`gitevals gate {commit[:12]} --baseline {model}`")]
