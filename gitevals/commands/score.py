"""``gitevals score ARTIFACT``: re-score a stored run without running the target."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="grader workers for --regrade (default: CPU count)")
    parser.add_argument("--out", metavar="FILE",
                        help="write the re-scored artifact to FILE (nothing is written "
                             "otherwise)")
    parser.add_argument("--format", choices=("text", "json", "junit", "markdown"),
                        default="text", help="output format (default: text)")


def rules_at(rev: str) -> tuple[dict[str, Any], str]:
    """Case name -> Case of every case file at ``rev``, and the commit it resolved to.

    The cases are linted first, as a run would: a case that does not lint at ``rev`` is
    a usage error naming its first problem (rules that do not lint cannot be applied).
    """
    from gitevals.errors import UsageError
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.run.runner import plan

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
    from gitevals.report.runs import failed, render
    from gitevals.run.scoring import load_artifact, score_artifact

    if args.jobs < 0:
        from gitevals.errors import UsageError

        raise UsageError(f"--jobs {args.jobs}: give a number of grader workers, 1 or more "
                         "(0 = CPU count)")
    # One short-lived process over one big tree of fresh dicts, none of them cyclic:
    # the cycle collector would only rescan it again and again.
    gc.disable()
    artifact = load_artifact(args.artifact)
    rules, rules_commit = rules_at(args.rules) if args.rules else (None, None)
    if args.regrade:
        artifact = regrade(artifact, rules, args.rules or artifact["commit"], args.jobs)
    scored = score_artifact(artifact, rules)
    if args.rules or args.regrade:
        scored["scored_with"] = _scored_with(args, rules_commit, __version__)
    if args.out:
        from pathlib import Path

        from gitevals.run.artifact import dumps, write_atomic

        write_atomic(Path(args.out), dumps(scored))
    sys.stdout.write(render(scored, args.format, terminal=sys.stdout.isatty()))
    sys.stdout.flush()
    return 1 if failed(scored) else 0


def _scored_with(args: argparse.Namespace, commit: str | None, version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"tool_version": version, "regraded": bool(args.regrade)}
    if args.rules:
        out.update(rules_rev=args.rules, rules_commit=commit)
    return out


def _expects(artifact: dict[str, Any], rules: dict[str, Any] | None
             ) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """(case index, scenario index) -> the expectations scoring will apply there."""
    out = {}
    for ci, case in enumerate(artifact["cases"]):
        rule = (rules or {}).get(case["name"])
        by_id = {s.id: s for s in rule.scenarios} if rule is not None else {}
        for si, s in enumerate(case["scenarios"]):
            r = by_id.get(s["id"])
            out[ci, si] = [a.as_dict() for a in r.expect] if r is not None else s["expect"]
    return out


def _grade_trial(pool: Any, scenario: dict[str, Any], expect: list[dict[str, Any]],
                 result: dict[str, Any]) -> list[dict[str, Any]]:
    """Fresh grader answers for one stored trial (none when the trial itself errored)."""
    if result.get("error") is not None:
        return []
    t = result.get("transcript") or {}
    run_arg = {k: t.get(k) for k in ("final_answer", "tool_calls", "hooks", "error", "turns",
                                     "duration_ms")}
    case_arg = {"id": scenario["id"], "user": scenario["user"], "expect": expect}
    out = []
    for index, item in enumerate(expect):
        arg = item.get("grader") if len(item) == 1 else None
        if isinstance(arg, dict) and isinstance(arg.get("name"), str):
            out.append({"index": index, **pool.call(arg["name"], case_arg, run_arg)})
    return out


def regrade(artifact: dict[str, Any], rules: dict[str, Any] | None, rev: str,
            jobs: int) -> dict[str, Any]:
    """A copy of ``artifact`` whose grader answers come from running the graders of ``rev``
    again on the stored transcripts (in warm workers, ``jobs`` at a time)."""
    import os
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from gitevals.errors import UsageError
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.run.grading import GraderPool
    from gitevals.run.judge import judge_config
    from gitevals.settings import load_settings

    tree = RevisionTree(require_repo(), rev)
    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]} (at {tree.label})")
    expects = _expects(artifact, rules)
    work = [(ci, si, ri) for (ci, si), expect in expects.items()
            if any("grader" in item for item in expect)
            for ri in range(len(artifact["cases"][ci]["scenarios"][si]["results"]))]
    with tempfile.TemporaryDirectory(prefix="gitevals-regrade-") as tmp:
        tree.materialize(Path(tmp))
        pool = GraderPool(tmp, settings.root, judge_config(settings.judge))
        try:
            with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as ex, \
                    _progress(len(work)) as advance:
                def one(w: tuple[int, int, int]) -> list[dict[str, Any]]:
                    s = artifact["cases"][w[0]]["scenarios"][w[1]]
                    out = _grade_trial(pool, s, expects[w[0], w[1]], s["results"][w[2]])
                    advance()
                    return out

                answers = list(ex.map(one, work))
        finally:
            pool.close()
    return _with_graders(artifact, dict(zip(work, answers, strict=True)))


def _with_graders(artifact: dict[str, Any],
                  answers: dict[tuple[int, int, int], list[dict[str, Any]]]) -> dict[str, Any]:
    cases = []
    for ci, case in enumerate(artifact["cases"]):
        scenarios = []
        for si, s in enumerate(case["scenarios"]):
            results = [{**r, "graders": answers.get((ci, si, ri), r["graders"])}
                       for ri, r in enumerate(s["results"])]
            scenarios.append({**s, "results": results})
        cases.append({**case, "scenarios": scenarios})
    return {**artifact, "cases": cases}


@contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A rich progress bar on stderr while regrading, when stderr is a terminal."""
    if not sys.stderr.isatty() or total == 0:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(TextColumn("regrading"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("trials"), console=Console(stderr=True), transient=True)
    task = bar.add_task("regrade", total=total)
    with bar:
        yield lambda: bar.advance(task)
