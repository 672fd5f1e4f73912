"""``gitevals score ARTIFACT``: re-score a stored run without running the target."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format, add_jobs

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from gitevals.model import Case
    from gitevals.run.artifact import CaseRun, GraderAnswer, Run, ScenarioRun, ScoredWith, Trial
    from gitevals.run.goldens import Goldens
    from gitevals.run.runner import GraderCall

NAME = "score"
HELP = ("re-score a run artifact from its stored transcripts (optionally by the rules of "
        "another revision) without running anything")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT",
                        help="a run artifact (<root>/results/<run-id>.json)")
    parser.add_argument("--rules", metavar="REV",
                        help="score by the case files of REV (default: the expectations "
                             "stored in the artifact, i.e. its own commit's rules)")
    parser.add_argument("--regrade", action="store_true",
                        help="re-run the graders on the stored transcripts (graders of REV "
                             "with --rules, else of the artifact's commit)")
    add_jobs(parser, "grader workers for --regrade (default: CPU count)", default=0, least=0,
             short=False)
    parser.add_argument("--out", metavar="FILE",
                        help="write the re-scored artifact to FILE (nothing is written "
                             "otherwise)")
    add_format(parser, ("text", "json", "junit", "markdown"), "output format (default: text)")


def rules_at(rev: str) -> tuple[dict[str, Case], str]:
    """Case name -> Case of every case file at ``rev``, and the commit it resolved to.

    The cases are linted first, as a run would: a case that does not lint at ``rev`` is
    a usage error naming its first problem (rules that do not lint cannot be applied).
    """
    from gitevals.api import plan
    from gitevals.errors import UsageError
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree

    tree = RevisionTree(require_repo(), rev)
    the_plan = plan(tree, [])
    if the_plan.blocked:
        first = next((f for f in the_plan.findings if f.severity == "error"), None)
        where = str(first) if first else f"case {the_plan.blocked[0]!r} does not lint"
        raise UsageError(f"{where} (at {tree.label}); fix it there or pick another --rules "
                         "revision")
    assert tree.commit is not None
    return {c.name: c for c in the_plan.cases}, tree.commit


def run(args: argparse.Namespace) -> int:
    import gc

    from gitevals import __version__
    from gitevals.report.runs import render
    from gitevals.run.artifact import failed, load
    from gitevals.run.scoring import apply_rules, rescore

    # One short-lived process over one big tree of fresh dicts, none of them cyclic:
    # the cycle collector would only rescan it again and again.
    gc.disable()
    stored = _whole(load(args.artifact), args.artifact, bool(args.regrade))
    rules, rules_commit = rules_at(args.rules) if args.rules and not _goldens_only(stored) \
        else (None, _commit(args.rules) if args.rules else None)
    ruled = apply_rules(stored, rules) if rules is not None else stored
    if args.rules:
        ruled = _task_rules(ruled, args.rules)
    if args.rules and "goldens" in ruled:
        ruled = {**ruled, "goldens": _golden_rules(ruled["goldens"], args.rules)}
    if args.regrade:
        ruled = regrade(ruled, args.rules or stored["commit"], args.jobs)
    scored = rescore(ruled)
    if args.rules or args.regrade:
        scored["scored_with"] = _scored_with(args, rules_commit, __version__)
    if args.out:
        from pathlib import Path

        from gitevals.files import write_atomic
        from gitevals.run.artifact import dumps

        write_atomic(Path(args.out), dumps(scored))
    sys.stdout.write(render(scored, args.format, terminal=sys.stdout.isatty()))
    sys.stdout.flush()
    return 1 if failed(scored) else 0


def _whole(run: Run, path: str, regrade: bool) -> Run:
    """``run``, or when it is a summary (a note's line) the full artifact it stands for:
    scoring reads transcripts. Kept here or fetched; else one line saying so."""
    from gitevals.errors import ArtifactError
    from gitevals.git.repo import require_repo
    from gitevals.run.runstore import full_run
    from gitevals.run.summary import is_summary

    if not is_summary(run):
        return run
    try:
        return full_run(require_repo(), run, f"the full artifact of run {run['run_id']}")
    except ArtifactError as exc:
        what = "score --regrade" if regrade else "score"
        raise ArtifactError(f"{path}: {what} needs the transcripts, and {exc}") from None


def _task_rules(run: Run, rev: str) -> Run:
    """``run`` with each task judged by the definition of its task at ``rev`` (its
    ``pass_threshold`` and ``max_iterations``): stored rewards, nothing runs. A task only
    ``rev`` has is added, not run, when the run selected everything (as a case is)."""
    everything = not run["options"]["cases"] and not _goldens_only(run)
    if not everything and not any("task" in c for c in run["cases"]):
        return run
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.run.tasks import added, with_rules
    from gitevals.settings import load_settings
    from gitevals.tasks.load import load_tasks

    tree = RevisionTree(require_repo(), rev)
    names = [] if everything else [c["name"] for c in run["cases"] if "task" in c]
    loaded, findings, _ = load_tasks(tree, load_settings(tree)[0], names)
    bad = next((f for f in findings if f.severity == "error"), None)
    if bad is not None:
        from gitevals.errors import UsageError

        raise UsageError(f"{bad} (at {tree.label}); fix it there or pick another --rules "
                         "revision")
    tasks = {t.name: t for t in loaded}
    cases = [with_rules(c, tasks.get(c["name"])) if "task" in c else c for c in run["cases"]]
    seen = {c["name"] for c in run["cases"]}
    new = [added(t) for name, t in tasks.items() if name not in seen]
    out: Run = {**run, "cases": sorted([*cases, *new], key=lambda c: c["name"]) if new
                else cases}
    return out


def _goldens_only(run: Run) -> bool:
    """A run of the goldens alone: its rules are the goldens mapping, no case file."""
    return not run["cases"] and "goldens" in run


def _commit(rev: str) -> str:
    from gitevals.git.repo import require_repo

    return require_repo().resolve(rev)


def _golden_rules(part: Goldens, rev: str) -> Goldens:
    """The goldens part graded by ``rev``'s bucket -> grader mapping (a bucket ``rev``
    grades with another grader has no stored answer: ``--regrade`` is not run for it)."""
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.run.goldens import rescore as rescore_goldens
    from gitevals.settings import load_settings

    settings, _ = load_settings(RevisionTree(require_repo(), rev))
    return rescore_goldens(part, settings.golden_graders)


def _scored_with(args: argparse.Namespace, commit: str | None, version: str) -> ScoredWith:
    out: ScoredWith = {"tool_version": version, "regraded": bool(args.regrade)}
    if args.rules:
        out["rules_rev"], out["rules_commit"] = args.rules, commit
    return out


def regrade(run: Run, rev: str, jobs: int) -> Run:
    """A copy of ``run`` whose grader answers come from running the graders of ``rev``
    again on the stored transcripts, for the expectations each scenario holds (in warm
    workers, ``jobs`` at a time). Trials that errored are not graded."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from gitevals.errors import UsageError
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.report.progress import progress
    from gitevals.run.grading import GraderPool
    from gitevals.run.judge import judge_config
    from gitevals.run.reaper import subreaper
    from gitevals.run.runner import grade
    from gitevals.run.workdir import workdir
    from gitevals.settings import load_settings

    tree = RevisionTree(require_repo(), rev)
    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]} (at {tree.label})")
    from gitevals.run.artifact import grader_calls, scenarios

    work = [(s, t) for _, s in scenarios(run) if grader_calls(s["expect"])
            for t in s["results"] if t["error"] is None]
    # Like a run: graders' leftover processes are adopted and killed before the tree goes.
    with workdir("regrade") as tmp, subreaper():
        tree.materialize(tmp)
        pool = GraderPool(str(tmp), settings.root, judge_config(settings.judge))
        try:
            with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as ex, \
                    progress("regrading", len(work)) as update:
                def one(w: tuple[ScenarioRun, Trial]) -> list[GraderAnswer]:
                    s, t = w
                    return grade(pool.call, s["id"], s["user"], s["expect"], t["transcript"])

                answers = []
                for answer in ex.map(one, work):
                    answers.append(answer)
                    update(len(answers), 0)
                if "goldens" in run:
                    run = {**run, "goldens": _regrade_goldens(run["goldens"], pool.call, ex)}
        finally:
            pool.close()
    fresh = {id(t): a for (_, t), a in zip(work, answers, strict=True)}
    return _with_graders(run, fresh)


def _regrade_goldens(part: Goldens, call: GraderCall, ex: Executor) -> Goldens:
    """``part`` with a fresh grader answer for every golden that did not end in an error."""
    from gitevals.goldens.choice import GRADER
    from gitevals.goldens.execute import grade_item
    from gitevals.goldens.rows import turns
    from gitevals.run.goldens import SuiteItem

    def one(it: SuiteItem) -> SuiteItem:
        if it["error"] is not None or it["grader"] == GRADER:
            return it  # a multiple-choice row is scored by gitevals, not by a tree grader
        sent = list(turns(it["row"]) or ())
        answer = grade_item(call, it["grader"], it["id"], it["row"], sent, it["transcript"])
        return {**it, "answer": answer}

    return {**part, "items": list(ex.map(one, part["items"]))}


def _with_graders(run: Run, answers: dict[int, list[GraderAnswer]]) -> Run:
    """``run`` with the graders of each trial in ``answers`` (by ``id`` of the trial)."""
    cases: list[CaseRun] = []
    for case in run["cases"]:
        scenarios_: list[ScenarioRun] = []
        for s in case["scenarios"]:
            results: list[Trial] = [{**t, "graders": answers.get(id(t), t["graders"])}
                                    for t in s["results"]]
            scenarios_.append({**s, "results": results})
        cases.append({**case, "scenarios": scenarios_})
    return {**run, "cases": cases}
