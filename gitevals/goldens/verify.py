"""Whether a run and a baseline are what they claim, read from git objects: the goldens
gate's checks before it compares anything (``gitevals.api.gate``, ``baseline``, and
``publish-check --require-gate``).

A run's pins must be its commit's blobs (``pinned``), a baseline must be what the run it
copies measured (``verified_baseline``), and the run to gate of a commit is the one of
its git note that counts, else the working tree's ``results/`` (``goldens_run_of_commit``).
A file's say-so is never taken for what a commit holds.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gitevals.errors import GitevalsError

if TYPE_CHECKING:
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens.gate import Baseline
    from gitevals.run.artifact import Run


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
