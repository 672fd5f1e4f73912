"""``gitevals run``: evaluate the tree as committed at REV; write a pinned artifact."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

    from gitevals.git.tree import RevisionTree
    from gitevals.run.artifact import Run
    from gitevals.run.runner import Plan, Provenance

NAME = "run"
HELP = "run cases against the harness as committed at REV (default HEAD) and record verdicts"

EXIT_INTERRUPTED = 130


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="case names (file name without directory or .yaml); default all")
    parser.add_argument("--rev", default="HEAD", help="commit, branch or tag to run (HEAD)")
    parser.add_argument("--trials", type=_positive, metavar="N",
                        help="run every scenario N times instead of its own trials")
    parser.add_argument("--jobs", "-j", type=_positive, metavar="N",
                        help="conversations in parallel (default: CPU count)")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="run although tracked files have uncommitted changes "
                             "(the commit still runs; the artifact says dirty)")
    parser.add_argument("--no-note", action="store_true",
                        help="do not attach the artifact to the commit as a git note")
    parser.add_argument("--format", choices=("text", "json", "junit", "markdown"),
                        default="text", help="what to print on stdout (default text)")


def _refuse_dirty(repo: Any, root: str, allow: bool) -> tuple[bool, str | None]:
    from gitevals.errors import UsageError
    from gitevals.git.tree import diff_digest, dirty_paths

    dirty = dirty_paths(repo, ignore_prefix=f"{root}/results")
    if not dirty:
        return False, None
    if not allow:
        raise UsageError(f"uncommitted changes to {', '.join(dirty)}: commit them, or pass "
                         "--allow-dirty to run the commit anyway (recorded as dirty)")
    return True, diff_digest(repo)


def _write_note(repo: Any, artifact: Run, text: str) -> None:
    import time

    from gitevals.run.store import note

    for attempt in range(5):
        try:
            if not note(repo, artifact, text):
                print("gitevals: the git note keeps the complete run of this commit; this "
                      "partial run is in results/", file=sys.stderr)
            return
        except Exception as exc:  # pygit2.GitError: another run moved the notes ref
            if attempt == 4:
                print(f"gitevals: warning: could not write the git note ({exc}); the artifact "
                      "is in results/", file=sys.stderr)
            time.sleep(0.05 * (attempt + 1))


def _render(artifact: Run, text: str, fmt: str) -> str:
    from gitevals.report.runs import render

    if fmt == "json":
        return text  # the artifact itself, byte for byte as written
    return render(artifact, fmt, terminal=sys.stdout.isatty())


def run(args: argparse.Namespace) -> int:
    from gitevals.errors import UsageError
    from gitevals.git.tree import RevisionTree, require_repo, work_root
    from gitevals.model import case_name
    from gitevals.run import runner

    repo = require_repo()
    tree = RevisionTree(repo, args.rev)
    assert tree.commit is not None and tree.tree_sha is not None
    # `gitevals run evals/cases/tone.yaml` (shell completion) means the case `tone`
    args.cases = [case_name(c) if c.endswith((".yaml", ".yml")) else c for c in args.cases]
    the_plan = runner.plan(tree, args.cases, args.trials)
    if the_plan.settings.target is None:
        table = ("[target] in gitevals.toml" if the_plan.settings.source == "gitevals.toml"
                 else "[tool.gitevals.target] in pyproject.toml")
        raise UsageError(f"no target configured in {tree.label}: set {table}: "
                         "command = [...] or python = \"module:function\"")
    dirty, digest = _refuse_dirty(repo, the_plan.settings.root, args.allow_dirty)
    for f in the_plan.findings:
        print(f, file=sys.stderr)
    for name in the_plan.blocked:
        print(f"gitevals: case {name!r} does not lint and was not run", file=sys.stderr)
    if not the_plan.cases:
        # An empty artifact would become the commit's newest run (and replace its note),
        # hiding the last real run from `show` and `diff`: write nothing.
        print(f"gitevals: nothing was run: every selected case has lint errors; fix them "
              f"(`gitevals lint --rev {args.rev}`) and commit", file=sys.stderr)
        return 1
    prov = runner.Provenance(args.rev, tree.commit, tree.tree_sha, dirty, digest)
    jobs = args.jobs or os.cpu_count() or 1
    artifact = _execute(tree, the_plan, prov, args.cases, jobs)
    from gitevals.run.artifact import dumps
    from gitevals.run.store import save

    text = dumps(artifact)
    path = save(work_root(repo), artifact, text)
    if not args.no_note:
        _write_note(repo, artifact, text)
    sys.stdout.write(_render(artifact, text, args.format))
    sys.stdout.flush()
    if artifact["interrupted"]:
        print(f"gitevals: interrupted; what finished is in {path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.format == "text" and sys.stderr.isatty():  # piped: nothing but the result
        print(f"artifact: {os.path.relpath(path)}", file=sys.stderr)
    from gitevals.run.artifact import failed

    return 1 if the_plan.blocked or failed(artifact) else 0


def _execute(tree: RevisionTree, the_plan: Plan, prov: Provenance, names: list[str],
             jobs: int) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the artifact."""
    import signal
    import tempfile
    import time
    from pathlib import Path

    from gitevals.report.progress import progress
    from gitevals.run import runner
    from gitevals.run.reaper import subreaper

    # gitevals adopts what escapes its targets and graders, and kills it all before the
    # materialized tree is removed (gitevals.run.reaper).
    with tempfile.TemporaryDirectory(prefix="gitevals-run-") as tmp, subreaper():
        tree.materialize(Path(tmp))
        execution = runner.Execution(the_plan, tmp, jobs, _grader_timeout())
        started = time.time()

        def stop(signum: int, frame: FrameType | None) -> None:
            execution.interrupt()

        old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        cases = len(the_plan.cases)
        try:
            with progress(f"{cases} case{'s' * (cases != 1)}", the_plan.total()) as update:
                execution.run(lambda done, total, failures: update(done, failures))
        finally:
            execution.registry.close()
            for s, handler in old.items():
                signal.signal(s, handler)
        finished = time.time()
    return runner.build_artifact(prov, the_plan, execution, names, jobs, started, finished)


def _grader_timeout() -> float:
    """30 s; GITEVALS_GRADER_TIMEOUT (seconds) overrides it, for tests of the timeout path."""
    from gitevals.run.grading import GRADER_TIMEOUT

    try:
        return float(os.environ.get("GITEVALS_GRADER_TIMEOUT") or GRADER_TIMEOUT)
    except ValueError:
        return GRADER_TIMEOUT
