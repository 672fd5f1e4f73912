"""``gitevals run``: evaluate the tree as committed at REV; write a pinned artifact."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.commands._args import (
    MAX_JOBS,
    MAX_LOOKS,
    MAX_SEQUENTIAL_TRIALS,
    MAX_TRIALS,
    add_control,
    add_format,
    add_jobs,
    add_rev,
    count,
    points,
)

if TYPE_CHECKING:

    from gitevals.api import RunPlans
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree, Tree
    from gitevals.report.runs import Refused
    from gitevals.run.artifact import Run
    from gitevals.run.draft import DraftFile
    from gitevals.run.ray_executor import RayExecutor
    from gitevals.run.runner import Plan
    from gitevals.run.sequential import Rounds
    from gitevals.run.targets import ProcessRegistry
    from gitevals.settings import Settings

NAME = "run"
HELP = ("run cases and tasks against the harness as committed at REV (default HEAD) and "
        "record verdicts")

EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="NAME",
                        help="case names (file name without directory or .yaml) or task "
                             "names (directory under tasks/); default all")
    add_rev(parser, "commit, branch or tag to run (HEAD)", default="HEAD")
    parser.add_argument("--trials", type=count(MAX_TRIALS), metavar="N",
                        help="run every scenario N times instead of its own trials (at "
                             f"most {MAX_TRIALS:,}, as a case file may set)")
    add_jobs(parser, "conversations in parallel (default 16: conversations mostly wait "
                     f"on model APIs, not on the CPU; at most {MAX_JOBS})")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="run although tracked files have uncommitted changes "
                             "(the commit still runs; the artifact says dirty)")
    parser.add_argument("--no-note", action="store_true",
                        help="do not attach the artifact to the commit as a git note")
    add_format(parser, ("text", "json", "junit", "markdown"),
               "what to print on stdout (default text)")
    parser.add_argument("--draft", metavar="PATH.yaml",
                        help="run this case file, from outside the tree, against the commit's "
                             "graders and harness (linted first; kept in results/drafts/, "
                             "never as the commit's run or note)")
    parser.add_argument("--target-env", action="append", metavar="KEY=VALUE",
                        help="give the target this environment variable (repeatable); the "
                             "artifact records the SHA-256 of its value, not the value")
    parser.add_argument("--target-env-public", action="append", metavar="KEY",
                        help="record the value of --target-env KEY in clear (repeatable; "
                             "e.g. MODEL); never a name holding KEY, TOKEN or SECRET")
    seq = parser.add_argument_group(
        "sequential runs (docs/statistics.md)",
        "run each scenario's trials in rounds against the run pinned to REV, and stop a "
        "scenario as soon as its regression call is settled either way")
    seq.add_argument("--against", metavar="REV",
                     help="the base revision: its run's tallies are what each scenario is "
                          "compared with after every round")
    seq.add_argument("--max-trials", type=count(MAX_SEQUENTIAL_TRIALS), metavar="N",
                     help="trials a scenario runs at most (default: its own trials; at most "
                          f"{MAX_SEQUENTIAL_TRIALS:,}: the design is computed exactly)")
    seq.add_argument("--looks", type=count(MAX_LOOKS), metavar="K",
                     help=f"looks (rounds) at most (default 5; at most {MAX_LOOKS})")
    seq.add_argument("--drop", type=points, metavar="PTS", default=20.0,
                     help="the drop in pass rate, in points, that matters: ruling it out "
                          "stops a scenario early (default 20)")
    add_control(seq, "scenarios: under fdr and fwer each scenario's design is held at "
                     "alpha / scenarios (Bonferroni)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run task verifiers directly on this machine, without "
                             "bubblewrap (no isolation; recorded in the artifact)")
    parser.add_argument("--task-controls", action="store_true",
                        help="first run each task's validity controls in the sandbox (the "
                             "verifier must fail the untouched workspace and pass after "
                             "solution/solve.sh); a task whose controls fail is broken and "
                             "its trials do not run")
    parser.add_argument("--goldens", action="store_true",
                        help="also send the goldens (each to its bucket's grader) with the named "
                             "cases; a run of every case sends them when buckets are mapped")
    parser.add_argument("--goldens-only", action="store_true",
                        help="send the goldens (and the drift suite) alone, no case")
    parser.add_argument("--bucket", action="append", metavar="B",
                        help="send only the goldens of bucket B (repeatable; implies --goldens; "
                             "no drift suite)")
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip the checks made before any trial (target executable or "
                             "importable, judge configured, keyed and answering)")
    parser.add_argument("--executor", choices=("local", "ray"),
                        help="where conversations run: local (this machine, the default) or "
                             "ray (a Ray cluster; docs/run.md); default from [executor] settings")
    parser.add_argument("--ray-address", metavar="HOST:PORT",
                        help="the Ray cluster's head (implies --executor ray; default the "
                             "[executor] address, RAY_ADDRESS, or the cluster on this machine)")
    parser.add_argument("--cost-limit", type=_usd, metavar="USD",
                        help="stop the run cleanly once its trials have cost USD or more "
                             "(target and judge; tokens priced by [pricing]); the artifact "
                             "keeps what finished, marked interrupted")
    parser.add_argument("--graders-on-workers", action="store_true",
                        help="with --executor ray, grade on the cluster's nodes rather than "
                             "on this machine (the judge's key must be set there too)")


def _usd(text: str) -> float:
    """A cost limit in USD: above 0, at most ``MAX_COST_LIMIT``."""
    import math

    from gitevals.run.pricing import MAX_COST_LIMIT

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of USD") from None
    if not (math.isfinite(value) and 0 < value <= MAX_COST_LIMIT):
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0 and at most "
                                         f"{MAX_COST_LIMIT:,.0f} USD")
    return value


def _refuse_dirty(repo: Repo, results: str, allow: bool,
                  draft: DraftFile | None = None) -> tuple[bool, str | None]:
    from gitevals.errors import UsageError

    dirty = repo.dirty_paths(ignore_prefix=results)
    if draft is not None:  # a draft may be the edited copy of a tracked case
        mine = os.path.relpath(os.path.abspath(draft.given), repo.work_root)
        dirty = [p for p in dirty if p != mine]
    if not dirty:
        return False, None
    if not allow:
        raise UsageError(f"uncommitted changes to {', '.join(dirty)}: commit them, or pass "
                         "--allow-dirty to run the commit anyway (recorded as dirty)")
    return True, repo.diff_digest()


def _write_note(repo: Repo, artifact: Run) -> bool:
    """Attach the run to its commit; True when the note now holds it."""
    import time

    from gitevals.errors import GitError
    from gitevals.run.store import note

    for attempt in range(5):
        try:
            if not note(repo, artifact):
                print("gitevals: this partial run is kept in results/ and the git note; "
                      "`show` and `diff` still read the complete run of this commit",
                      file=sys.stderr)
            return True
        except GitError as exc:  # another run moved the notes ref: try again
            if attempt == 4:
                print(f"gitevals: warning: {exc}; the artifact is in results/", file=sys.stderr)
            time.sleep(0.05 * (attempt + 1))
    return False


def _keep(work: Path, artifact: Run, text: str, draft: bool = False) -> Path:
    """Write the run to its results directory (``store.run_results``; a draft's to its
    ``drafts/``, where no
    command looks for a commit's run); when that cannot be written (read-only, full,
    a symlink or FIFO in its place), to a temp file instead, and say so: a finished run
    is never thrown away."""
    import tempfile

    from gitevals.files import write_atomic
    from gitevals.run.store import run_results, save

    try:
        return _save_draft(work, artifact, text) if draft else save(work, artifact, text)
    except OSError as exc:
        why = exc.strerror or str(exc)
        fd, name = tempfile.mkstemp(prefix=f"gitevals-{artifact['run_id']}-", suffix=".json")
        os.close(fd)
        fallback = Path(name)
        write_atomic(fallback, text)
        print(f"gitevals: warning: cannot write {run_results(artifact)}/ ({why}); the run "
              f"is in {fallback} instead", file=sys.stderr)
        return fallback


def _save_draft(work: Path, artifact: Run, text: str) -> Path:
    import errno

    from gitevals.files import write_atomic
    from gitevals.run.draft import DRAFTS_DIR
    from gitevals.run.store import results_dir, run_results

    directory = results_dir(work, run_results(artifact)) / DRAFTS_DIR
    real, top = directory.resolve(), work.resolve()
    if top not in real.parents:  # a committed symlink must not send it outside the repo
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    path = directory / f"{artifact['run_id']}.json"
    write_atomic(path, text)
    return path


def _render(artifact: Run, text: str, fmt: str, refused: list[Refused], tail: str) -> str:
    if fmt == "json":
        return text  # the artifact itself, byte for byte as written
    from gitevals.report.runs import render

    return render(artifact, fmt, terminal=sys.stdout.isatty(), refused=refused, tail=tail)


def _refused(the_plan: Plan) -> list[Refused]:
    """The cases lint kept from running, each with its error findings: reporters show
    them as failures (a JUnit consumer must not see a blocked case as absent)."""
    if not the_plan.blocked:
        return []  # (a --format json run never loads the reporters)
    from gitevals.model import case_name
    from gitevals.report.runs import Refused

    cases_dir = f"{the_plan.settings.root}/cases/"
    tasks_dir = f"{the_plan.settings.root}/tasks/"

    def owner(path: str) -> str | None:  # the case or task a finding belongs to
        if path.startswith(cases_dir):
            return case_name(path)
        return path[len(tasks_dir):].split("/")[0] if path.startswith(tasks_dir) else None

    return [Refused(name, tuple(str(f) for f in the_plan.findings
                                if f.severity == "error" and owner(f.path) == name))
            for name in the_plan.blocked]


def _tail(artifact: Run, path: Path, noted: bool) -> str:
    """`` in 12.3 s; artifact evals/results/<id>.json, note refs/notes/gitevals``: what
    ends the text summary, so a reader knows where the whole run is."""
    from gitevals.git.repo import NOTES_REF
    from gitevals.text import visible

    where = f" in {artifact['duration_ms'] / 1000:.1f} s; artifact {visible(os.path.relpath(path))}"
    return where + (f", note {NOTES_REF}" if noted else "")


def _with_draft(tree: RevisionTree, args: argparse.Namespace) -> tuple[Tree, DraftFile | None]:
    """The tree to plan from: ``tree``, or ``tree`` with the ``--draft`` case laid over it."""
    if args.draft is None:
        return tree, None
    from gitevals.errors import UsageError
    from gitevals.run.draft import DraftTree, read_draft
    from gitevals.settings import load_settings

    if args.cases:
        raise UsageError("--draft runs the draft alone: name no CASE with it")
    draft = read_draft(args.draft, load_settings(tree)[0].root)
    args.cases = [draft.name]
    return DraftTree(tree, draft), draft


def run(args: argparse.Namespace) -> int:
    from gitevals.run.targets import ProcessRegistry

    ray = args.ray_address is not None and args.executor != "local"
    # The supervisor of a local run's targets (a Python start of its own) boots while
    # gitevals imports what it needs and reads the plan, not after.
    registry = ProcessRegistry() if not ray and args.executor != "ray" else None
    if registry is not None:
        registry.prestart()
    try:
        # Likewise, with --ray-address, joining the cluster (seconds: importing Ray,
        # starting a host per node) goes on while the plan is made; an address nobody
        # answers on stops it here.
        early = _join(args.ray_address, args.jobs or _default_jobs()) if ray else None
        try:
            return _run(args, early, registry)
        finally:
            if early is not None:
                early.close()
    finally:
        if registry is not None:
            registry.close()


def _default_jobs() -> int:
    from gitevals.run.runner import DEFAULT_JOBS

    return DEFAULT_JOBS


def _run(args: argparse.Namespace, early: RayExecutor | None,
         registry: ProcessRegistry | None = None) -> int:
    from gitevals import api
    from gitevals.errors import UsageError
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.model import case_name
    from gitevals.report.progress import progress
    from gitevals.run import runner
    from gitevals.run.targetenv import collect, public_names

    target_env = collect(args.target_env)
    public = public_names(args.target_env_public, target_env)
    repo = require_repo()
    tree = RevisionTree(repo, args.rev)
    assert tree.commit is not None and tree.tree_sha is not None
    # `gitevals run evals/cases/tone.yaml` (shell completion) means the case `tone`
    args.cases = [case_name(c) if c.endswith((".yaml", ".yml")) else c for c in args.cases]
    planned, draft = _with_draft(tree, args)
    plans = _plans(planned, args)
    the_plan, suite = plans.plan, plans.suite
    if the_plan.settings.target is None:
        table = ("[target] in gitevals.toml" if the_plan.settings.source == "gitevals.toml"
                 else "[tool.gitevals.target] in pyproject.toml")
        raise UsageError(f"no target configured in {tree.label}: set {table}: "
                         "command = [...], python = \"module:function\", or an endpoint "
                         "(openai, http: docs/integrations.md)")
    dirty, digest = _refuse_dirty(repo, the_plan.settings.results, args.allow_dirty, draft)
    for f in the_plan.findings:
        if not _calibration_warning(f.code):  # the run states calibration itself
            print(draft.rename(f) if draft else f, file=sys.stderr)
    tasks_dir = f"{the_plan.settings.root}/tasks/{{}}/"
    for name in the_plan.blocked:
        is_task = any(f.path.startswith(tasks_dir.format(name)) for f in the_plan.findings)
        what = (f"draft {args.draft}" if draft else f"task {name!r}" if is_task
                else f"case {name!r}")
        print(f"gitevals: {what} does not lint and was not run", file=sys.stderr)
    refused = _refused(the_plan)
    for line in api.task_notes(the_plan):
        print(line, file=sys.stderr)
    bwrap = api.find_sandbox(the_plan, args.no_sandbox)
    for line in plans.suite_notes:  # the goldens do not lint: not sent
        print(line, file=sys.stderr)
    sendable = plans.sendable
    if runner.empty(the_plan) and sendable is None:  # --goldens-only, or no case to run
        return 1
    if sendable is not None and (args.trials or 1) > 1:
        print(f"gitevals: --trials {args.trials} is for cases and tasks: each golden is sent "
              "once, as its baseline was measured (docs/goldens.md)", file=sys.stderr)
    if not the_plan.cases and not the_plan.tasks and sendable is None:
        # An empty artifact would become the commit's newest run (and replace its note),
        # hiding the last real run from `show` and `diff`: write nothing.
        from gitevals.report.runs import render_refused
        from gitevals.text import visible

        if draft is not None:  # lint never sees the draft, and a draft is not committed
            import shlex

            print(f"gitevals: nothing was run: the draft has lint errors (above); fix the "
                  f"draft and run it again (`gitevals run --draft "
                  f"{visible(shlex.quote(args.draft))}`)", file=sys.stderr)
        else:
            print(f"gitevals: nothing was run: every selected case has lint errors; fix "
                  f"them (`gitevals lint --rev {args.rev}`) and commit", file=sys.stderr)

        sys.stdout.write(render_refused(refused, args.format))
        return 1
    prov = runner.Provenance(args.rev, tree.commit, tree.tree_sha, dirty, digest)
    if not args.no_preflight:
        api.preflight_judge(tree, the_plan, sendable)
    jobs = args.jobs or runner.DEFAULT_JOBS
    rounds = _rounds(repo, args, the_plan)
    cluster = early or _cluster(the_plan, args, jobs)  # joined before anything starts
    try:
        # --goldens-only is recorded where the tree has cases (in a tree of goldens alone,
        # this is its complete run, as a plain run is)
        goldens_only = args.goldens_only and _has_cases(tree, the_plan.settings)
        options = api.RunOptions(tuple(args.cases), jobs, not args.no_preflight, target_env,
                                 public, rounds, bwrap, cluster, args.graders_on_workers,
                                 sendable, args.cost_limit, goldens_only, draft, registry)
        artifact = api.run_commit(tree, the_plan, prov, options, progress)
    finally:
        if cluster is not None:
            cluster.close()
    blocked = bool(the_plan.blocked) or (suite is not None and sendable is None)
    return _record(repo, args, the_plan, artifact, draft, refused, blocked)


def _has_cases(tree: Tree, settings: Settings) -> bool:
    """Whether ``tree`` has a case file or a task directory (a run can leave them out)."""
    from gitevals.run.runner import case_paths
    from gitevals.tasks.load import task_dirs

    return bool(case_paths(tree, settings.root)) or bool(task_dirs(tree, settings.root))


def _plans(tree: Tree, args: argparse.Namespace) -> RunPlans:
    """The run's plans (``api.run_plans``), its note about them said on stderr."""
    from gitevals import api
    from gitevals.errors import UsageError

    if args.task_controls and args.no_sandbox:
        raise UsageError("--task-controls runs a task's solution and verifier in the "
                         "sandbox: drop --no-sandbox")
    plans = api.run_plans(tree, api.RunSelection(
        tuple(args.cases), args.trials, args.goldens_only, args.goldens,
        tuple(args.bucket or ()), args.draft is not None, args.task_controls))
    for line in plans.notes:
        print(line, file=sys.stderr)
    return plans


def _rounds(repo: Repo, args: argparse.Namespace, the_plan: Plan) -> Rounds | None:
    """``--against``: the sequential design (``api.sequential_design``), or None."""
    from gitevals import api
    from gitevals.errors import UsageError

    if args.against is None:
        if args.max_trials or args.looks:
            raise UsageError("--max-trials and --looks shape a sequential run: give "
                             "--against REV with them")
        return None
    if args.draft is not None:
        raise UsageError("--draft and --against do not go together: a draft has no base")
    return api.sequential_design(repo, the_plan, api.AgainstOptions(
        args.against, args.max_trials, args.looks, args.drop, args.alpha, args.control))


def _record(repo: Repo, args: argparse.Namespace, the_plan: Plan, artifact: Run,
            draft: DraftFile | None, refused: list[Refused], blocked: bool = False) -> int:
    """Keep the finished run (file, and note unless a draft), print it, say the status."""
    from gitevals.run.artifact import dumps, failed

    text = _writable(dumps(artifact), artifact)
    path = _keep(repo.work_root, artifact, text, draft is not None)
    # A draft is not the commit's: its run is never the commit's note.
    noted = not args.no_note and draft is None and _write_note(repo, artifact)
    tail = _tail(artifact, path, noted) if args.format == "text" else ""
    if tail and draft is not None:
        tail += f" (draft {draft.given}: not the commit's run)"
    sys.stdout.write(_render(artifact, text, args.format, refused, tail))
    sys.stdout.flush()
    if artifact["interrupted"]:
        why = artifact.get("interrupted_reason", "interrupted")
        print(f"gitevals: {why}; what finished is in {path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.format != "text" and sys.stderr.isatty():  # stdout stays the document alone
        print(f"artifact: {os.path.relpath(path)}", file=sys.stderr)
    return 1 if blocked or failed(artifact) else 0


def _writable(text: str, artifact: Run) -> str:
    """``text``, or when it holds what UTF-8 cannot write (a lone surrogate), the same
    run with every non-ASCII character as a JSON escape: a finished run is kept whole
    rather than lost to an encoding error after its conversations ran."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        import json

        print("gitevals: warning: the run holds text that is not valid UTF-8; it is kept "
              "with JSON escapes (\\u...)", file=sys.stderr)
        return json.dumps(artifact, sort_keys=True, indent=1, ensure_ascii=True) + "\n"
    return text


def _calibration_warning(code: str) -> bool:
    """GE510-GE519: an advisory judge grader; the run's report says so in its own words."""
    return code.startswith("GE51") and len(code) == 5


def _cluster(the_plan: Plan, args: argparse.Namespace, jobs: int) -> RayExecutor | None:
    """The Ray executor, connected, when the run asked for one (flags over settings)."""
    from gitevals.errors import UsageError
    from gitevals.run.executors import choose

    choice = choose(the_plan.settings.raw, args.executor, args.ray_address)
    if choice.kind != "ray":
        if args.graders_on_workers:
            raise UsageError("--graders-on-workers needs --executor ray: drop it, or run on "
                             "a cluster")
        return None
    return _join(choice.address, jobs)


def _join(address: str | None, jobs: int) -> RayExecutor:
    from gitevals.run.ray_executor import RayExecutor

    cluster = RayExecutor(address, jobs)
    cluster.connect()
    return cluster


