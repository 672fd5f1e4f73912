"""``gitevals show [ARTIFACT|REV]``: the verdict table of a stored run, one trial of it
(``--trial``), or every run kept for a commit (``--all``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format
from gitevals.files import is_path as is_path  # the commands' ARTIFACT|REV test

if TYPE_CHECKING:
    from pathlib import Path

    from gitevals.git.repo import Repo
    from gitevals.report.runs import Kept
    from gitevals.run.artifact import CaseRun, Run, ScenarioRun, Trial
    from gitevals.run.goldens import SuiteItem

NAME = "show"
HELP = "show the verdicts of a run: an artifact file, or the newest run of a revision"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", default="HEAD", metavar="ARTIFACT|REV",
                        help="a run artifact (.json), or a revision whose newest run to show "
                             "(default: HEAD)")
    add_format(parser, ("text", "json", "junit", "markdown"), "output format (default: text)")
    parser.add_argument("--trial", metavar="CASE/SCENARIO[/N]",
                        help="print one trial as a conversation: turns, tool calls, hooks, "
                             "assertions, grader answers (N: the first failing trial, else 0); "
                             "goldens/ID a golden's, drift:NAME/ID a drift row's")
    parser.add_argument("--all", action="store_true", dest="all_runs",
                        help="list every run kept for the revision (results/ and its git "
                             "note), newest first, marking the one show and diff read")


def locate(rev: str) -> tuple[Repo, str, str]:
    """The repository, ``rev``'s commit and where the working tree's settings keep runs
    (``Settings.results``: ``<root>/results`` unless ``results`` says otherwise)."""
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import WorkingTree
    from gitevals.settings import load_settings

    repo = require_repo()
    commit = repo.resolve(rev)
    settings, _ = load_settings(WorkingTree(repo.work_root))
    return repo, commit, settings.results


def no_run(rev: str, commit: str, results: str) -> Exception:
    from gitevals.errors import UsageError

    return UsageError(f"no run of {rev} ({commit[:12]}) in {results}/ or its "
                      f"git note: make one with `gitevals run --rev {commit}`")


def run_for_rev(rev: str) -> Run:
    """The run pinned to ``rev``'s commit: the results directory of the working tree, else the
    git note on the commit. None found is a usage error naming the fix."""
    from gitevals.run.store import run_of_commit

    repo, commit, root = locate(rev)
    found = run_of_commit(repo, repo.work_root, root, commit)
    if found is None:
        raise no_run(rev, commit, root)
    return found.run


def kept_runs(rev: str) -> tuple[str, list[Kept]]:
    """``rev``'s commit and every run kept for it, marked with the one ``show`` and ``diff``
    read (``store.run_of_commit``'s choice: the preferred file, else the note)."""
    from gitevals.git.repo import NOTES_REF
    from gitevals.report.runs import kept
    from gitevals.run.store import counting, local_runs, note_runs, pins_of, problem

    repo, commit, root = locate(rev)
    local = [(run, os.path.relpath(path), _written(path)) for run, path in
             local_runs(repo.work_root, root, commit)]
    noted = note_runs(repo, commit)
    found = [*local, *((run, f"note {NOTES_REF}", 0) for run in noted)]
    if not found:
        raise no_run(rev, commit, root)
    pins = pins_of(repo, commit)
    refused = {str(r.get("run_id")): why for r in noted if (why := problem(r, pins))}
    counts = counting(noted, pins)[0]
    picked = local[-1][0] if local else counts
    return commit, kept(found, str(picked.get("run_id")) if picked else "", refused)


def _written(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _formats(args: argparse.Namespace) -> None:
    from gitevals.errors import UsageError

    if args.all_runs and args.trial:
        raise UsageError("--all and --trial do not go together: list the runs, then show a "
                         "trial of one")
    option = "--all" if args.all_runs else "--trial" if args.trial else None
    if option and args.format not in ("text", "json"):
        raise UsageError(f"{option} prints text or json, not {args.format}")
    if args.all_runs and is_path(args.what):
        raise UsageError(f"--all lists the runs of a revision, not of a file: "
                         f"{args.what} is a file")


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals.run.artifact import failed, load

    _formats(args)
    gc.disable()  # a short-lived read of one big acyclic tree: see commands/score.py
    if args.all_runs:
        return _show_all(args)
    artifact = load(args.what) if is_path(args.what) else run_for_rev(args.what)
    if args.trial:
        return _show_trial(artifact, args.trial, args.format)
    from gitevals.report.runs import render

    # The title names the revision asked for (`show v2` says "of v2"), not the one the
    # run was started with ("HEAD" then); the JSON stays the artifact as kept.
    view = artifact
    if args.format != "json" and not is_path(args.what):
        view = {**artifact, "rev": args.what}
    _write(render(view, args.format, terminal=sys.stdout.isatty()))
    return 1 if failed(artifact) else 0


def _show_trial(artifact: Run, spec: str, fmt: str) -> int:
    from gitevals.report import trial
    from gitevals.run.summary import is_summary

    item = trial.pick_golden(artifact, spec)
    if item is not None:
        if is_summary(artifact):
            item = _full_item(artifact, item)
        doc = trial.golden_document(artifact, item)
        _write(trial.as_json(doc) if fmt == "json" else trial.render_text(doc))
        return 0 if item["passed"] else 1
    case, scenario, chosen = trial.pick(artifact, spec)
    if is_summary(artifact):
        chosen = _full_trial(artifact, case, scenario, chosen)
    doc = trial.document(artifact, case, scenario, chosen)
    _write(trial.as_json(doc) if fmt == "json" else trial.render_text(doc))
    return 0 if chosen["passed"] else 1


def _packed(summary: Run) -> tuple[bytes, str]:
    """The packed full artifact of ``summary`` (fetched when not here), and its label."""
    from gitevals.git.repo import require_repo
    from gitevals.run.runstore import get, packed

    repo = require_repo()
    stored = summary["stored"]
    label = f"the full artifact of run {summary['run_id']}"
    if get(repo, stored["sha256"]) is None:
        print(f"gitevals: fetching the transcripts of run {summary['run_id']} "
              f"({stored['bytes']:,} bytes unpacked)", file=sys.stderr)
    return packed(repo, summary, label), label


def _full_trial(summary: Run, case: CaseRun, scenario: ScenarioRun, chosen: Trial) -> Trial:
    """The trial ``chosen`` (picked from the summary) read alone from the full artifact."""
    from gitevals.errors import ArtifactError
    from gitevals.run.archive import trial_of

    ci = next(i for i, c in enumerate(summary["cases"]) if c is case)
    si = next(i for i, s in enumerate(case["scenarios"]) if s is scenario)
    ri = next(i for i, t in enumerate(scenario["results"]) if t is chosen)
    data, label = _packed(summary)
    full = trial_of(data, ci, si, ri, label)
    if full is None or full["trial"] != chosen["trial"]:
        raise ArtifactError(f"{label}: does not hold trial {chosen['trial']} of "
                            f"{case['name']}/{scenario['id']}: it is not this run's")
    return full


def _full_item(summary: Run, item: SuiteItem) -> SuiteItem:
    from gitevals.errors import ArtifactError
    from gitevals.run.archive import item_of

    items = summary["goldens"]["items"]
    index = next(i for i, it in enumerate(items) if it is item)
    data, label = _packed(summary)
    full = item_of(data, index, label)
    if full is None or full["id"] != item["id"]:
        raise ArtifactError(f"{label}: does not hold golden {item['id']}: it is not this run's")
    return full


def _show_all(args: argparse.Namespace) -> int:
    from gitevals.report.runs import kept_json, kept_text

    commit, runs = kept_runs(args.what)
    _write(kept_json(commit, args.what, runs) if args.format == "json"
           else kept_text(commit, args.what, runs))
    return 0


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
