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
    count,
    points,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType

    from gitevals.git.tree import Repo, RevisionTree, Tree
    from gitevals.report.runs import Refused
    from gitevals.run.artifact import Run
    from gitevals.run.draft import DraftFile
    from gitevals.run.ray_executor import RayExecutor
    from gitevals.run.runner import Plan, Provenance
    from gitevals.run.sequential import Rounds
    from gitevals.settings import Settings
    from gitevals.suite.execute import SuiteExecution
    from gitevals.suite.plan import SuitePlan

NAME = "run"
HELP = ("run cases and tasks against the harness as committed at REV (default HEAD) and "
        "record verdicts")

EXIT_INTERRUPTED = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="NAME",
                        help="case names (file name without directory or .yaml) or task "
                             "names (directory under tasks/); default all")
    parser.add_argument("--rev", default="HEAD", help="commit, branch or tag to run (HEAD)")
    parser.add_argument("--trials", type=count(MAX_TRIALS), metavar="N",
                        help="run every scenario N times instead of its own trials (at "
                             f"most {MAX_TRIALS:,}, as a case file may set)")
    parser.add_argument("--jobs", "-j", type=count(MAX_JOBS), metavar="N",
                        help="conversations in parallel (default 16: conversations mostly wait "
                             f"on model APIs, not on the CPU; at most {MAX_JOBS})")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="run although tracked files have uncommitted changes "
                             "(the commit still runs; the artifact says dirty)")
    parser.add_argument("--no-note", action="store_true",
                        help="do not attach the artifact to the commit as a git note")
    parser.add_argument("--format", choices=("text", "json", "junit", "markdown"),
                        default="text", help="what to print on stdout (default text)")
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
    from gitevals.report.runs import render

    if fmt == "json":
        return text  # the artifact itself, byte for byte as written
    return render(artifact, fmt, terminal=sys.stdout.isatty(), refused=refused, tail=tail)


def _refused(the_plan: Plan) -> list[Refused]:
    """The cases lint kept from running, each with its error findings: reporters show
    them as failures (a JUnit consumer must not see a blocked case as absent)."""
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
    from gitevals.git.tree import NOTES_REF
    from gitevals.report.text import visible

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
    from gitevals.run.runner import DEFAULT_JOBS

    # With --ray-address, joining the cluster (seconds: importing Ray, starting a host per
    # node) goes on while the plan is made; an address nobody answers on stops it here.
    early = (_join(args.ray_address, args.jobs or DEFAULT_JOBS)
             if args.ray_address is not None and args.executor != "local" else None)
    try:
        return _run(args, early)
    finally:
        if early is not None:
            early.close()


def _run(args: argparse.Namespace, early: RayExecutor | None) -> int:
    from gitevals.errors import UsageError
    from gitevals.git.tree import RevisionTree, require_repo
    from gitevals.model import case_name
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
    the_plan, suite = _plans(planned, args)
    if the_plan.settings.target is None:
        table = ("[target] in gitevals.toml" if the_plan.settings.source == "gitevals.toml"
                 else "[tool.gitevals.target] in pyproject.toml")
        raise UsageError(f"no target configured in {tree.label}: set {table}: "
                         "command = [...] or python = \"module:function\"")
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
    bwrap = _sandbox(the_plan, args.no_sandbox)
    sendable = _sendable(suite)
    if runner.empty(the_plan) and sendable is None:  # --goldens-only, or no case to run
        return 1
    if sendable is not None and (args.trials or 1) > 1:
        print(f"gitevals: --trials {args.trials} is for cases and tasks: each golden is sent "
              "once, as its baseline was measured (docs/goldens.md)", file=sys.stderr)
    if not the_plan.cases and not the_plan.tasks and sendable is None:
        # An empty artifact would become the commit's newest run (and replace its note),
        # hiding the last real run from `show` and `diff`: write nothing.
        from gitevals.report.runs import render_refused
        from gitevals.report.text import visible

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
        _preflight_judge(tree, the_plan, sendable)
    jobs = args.jobs or runner.DEFAULT_JOBS
    rounds = _rounds(repo, args, the_plan)
    cluster = early or _cluster(the_plan, args, jobs)  # joined before anything starts
    try:
        artifact = _execute(tree, the_plan, prov, args.cases, jobs, not args.no_preflight,
                            target_env, rounds, bwrap, cluster, args.graders_on_workers,
                            sendable, public, args.cost_limit)
    finally:
        if cluster is not None:
            cluster.close()
    artifact = _calibrated(tree, the_plan, artifact)
    if args.goldens_only and _has_cases(tree, the_plan.settings):
        # (in a tree of goldens alone, this is its complete run, as a plain run is)
        artifact["options"]["goldens_only"] = True
    blocked = bool(the_plan.blocked) or (suite is not None and sendable is None)
    return _record(repo, args, the_plan, artifact, draft, refused, blocked)


def _has_cases(tree: Tree, settings: Settings) -> bool:
    """Whether ``tree`` has a case file or a task directory (a run can leave them out)."""
    from gitevals.run.runner import case_paths
    from gitevals.tasks.load import task_dirs

    return bool(case_paths(tree, settings.root)) or bool(task_dirs(tree, settings.root))


def _sendable(suite: SuitePlan | None) -> SuitePlan | None:
    """``suite`` when its goldens lint; else None, having printed why they are not run."""
    if suite is None or not suite.blocked:
        return suite
    for f in suite.findings:
        print(f, file=sys.stderr)
    print("gitevals: the goldens do not lint and were not run; fix them (`gitevals lint`)",
          file=sys.stderr)
    return None


def _wants_goldens(args: argparse.Namespace, settings: Settings) -> bool:
    """Whether this run sends the goldens: asked for, or a run of every case of a tree
    that maps buckets to graders."""
    asked = args.goldens or args.goldens_only or bool(args.bucket)
    return asked or (not args.cases and args.draft is None and bool(settings.golden_graders))


def _plans(tree: Tree, args: argparse.Namespace) -> tuple[Plan, SuitePlan | None]:
    """The cases' plan (empty with --goldens-only) and the goldens' (None when not sent)."""
    from gitevals.errors import UsageError
    from gitevals.run import runner
    from gitevals.settings import load_settings
    from gitevals.suite.plan import plan_suite

    if args.goldens_only and args.cases:
        raise UsageError("--goldens-only runs no case: name no CASE with it")
    if args.goldens_only:
        settings, bad = load_settings(tree)
        if bad:
            raise UsageError(f"{bad[0]}")
        the_plan = runner.Plan(settings, (), (), (), {}, args.trials)
    else:
        the_plan = runner.plan(tree, args.cases, args.trials,
                               goldens_alone=args.draft is None)
        if runner.empty(the_plan):
            root = the_plan.settings.root
            print(f"gitevals: no case in {root}/cases/ nor task in {root}/tasks/ of "
                  f"{tree.label}: sending the goldens alone, as --goldens-only does",
                  file=sys.stderr)
    wanted = _wants_goldens(args, the_plan.settings)
    return the_plan, plan_suite(tree, the_plan.settings, args.bucket) if wanted else None


def _rounds(repo: Repo, args: argparse.Namespace, the_plan: Plan) -> Rounds | None:
    """``--against``: the base tallies from the run pinned to that revision, or None."""
    from gitevals.errors import UsageError

    if args.against is None:
        if args.max_trials or args.looks:
            raise UsageError("--max-trials and --looks shape a sequential run: give "
                             "--against REV with them")
        return None
    if args.draft is not None:
        raise UsageError("--draft and --against do not go together: a draft has no base")
    from gitevals.diff.sequential import DEFAULT_LOOKS
    from gitevals.run import sequential
    from gitevals.run.store import run_of_commit

    commit = repo.resolve(args.against)
    found = run_of_commit(repo, repo.work_root, the_plan.settings.results, commit)
    if found is None:
        raise UsageError(f"no run of {args.against} ({commit[:12]}) to run against: make one "
                         f"with `gitevals run --rev {args.against}`")
    planned = {(c.name, s.id): the_plan.trials_of(s) for c in the_plan.cases
               for s in c.scenarios}
    alpha = the_plan.settings.alpha if args.alpha is None else args.alpha
    control = the_plan.settings.control if args.control is None else args.control
    # a sequential design gives no p to adjust: the family is held by Bonferroni, each
    # design at alpha / (scenarios with a base), as diff reads them back
    bases = sequential.bases_of(found.run)
    based = sum(1 for key in planned if key in bases) or 1
    level = alpha / based if control != "none" else alpha
    settings = sequential.Settings(commit, found.run["run_id"], args.max_trials,
                                   args.looks or DEFAULT_LOOKS, level, args.drop / 100)
    return sequential.Rounds(settings, planned, bases)


def _record(repo: Repo, args: argparse.Namespace, the_plan: Plan, artifact: Run,
            draft: DraftFile | None, refused: list[Refused], blocked: bool = False) -> int:
    """Keep the finished run (file, and note unless a draft), print it, say the status."""
    from gitevals.run.artifact import dumps, failed

    if draft is not None:
        from gitevals.run.draft import mark

        artifact = mark(artifact, draft)
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


def _calibrated(tree: RevisionTree, the_plan: Plan, artifact: Run) -> Run:
    """The run with its judge graders' calibration; an advisory one's failures don't count."""
    from datetime import UTC, datetime

    from gitevals.calibration.runs import attach

    started = datetime.fromisoformat(artifact["started_at"].replace("Z", "+00:00"))
    return attach(artifact, tree, the_plan.settings, started.astimezone(UTC))


def _advisory(tree: RevisionTree, the_plan: Plan, at: float) -> frozenset[str]:
    """The plan's judge graders that are advisory at ``at`` (the run's start, as
    ``_calibrated`` decides): a sequential run's looks do not count their failures."""
    from datetime import UTC, datetime

    from gitevals.calibration.runs import calibration_of
    from gitevals.run.artifact import grader_calls
    from gitevals.run.scoring import expect_of

    names = {name for c in the_plan.cases for s in c.scenarios
             for _, name in grader_calls(expect_of(s))}
    now = datetime.fromtimestamp(at, UTC)
    return frozenset(n for n, c in calibration_of(tree, the_plan.settings, names, now).items()
                     if c["status"] == "advisory")


def _preflight_judge(tree: RevisionTree, the_plan: Plan, suite: SuitePlan | None = None) -> None:
    """Refuse the run when a selected grader calls ``t.llm`` and the judge cannot answer."""
    from gitevals.run import preflight

    names = {g for c in the_plan.cases for s in c.scenarios for g in s.graders()}
    names |= {i.grader for i in suite.items} if suite is not None else set()
    settings = the_plan.settings
    preflight.check_judge(settings, preflight.llm_graders(tree, settings.root, names))


def _sandbox(the_plan: Plan, no_sandbox: bool) -> str | None:
    """The bubblewrap that runs task verifiers (None: no tasks, or ``--no-sandbox``); what
    a run of tasks cannot realize (an image) is said here, once."""
    from gitevals.report.text import visible
    from gitevals.run.tasks import gap_lines

    for line in [*the_plan.notes, *gap_lines(the_plan.tasks)]:  # names come from the tree
        line = visible(line)
        print(line if line.startswith("gitevals:") else f"gitevals: {line}", file=sys.stderr)
    if not the_plan.tasks or no_sandbox:
        return None
    from gitevals.errors import UsageError
    from gitevals.tasks import userns
    from gitevals.tasks.sandbox import BWRAP_ENV, find_bwrap, probe

    bwrap = find_bwrap()
    if bwrap is None:
        given = os.environ.get(BWRAP_ENV)
        where = ("on PATH" if given is None else f"at {visible(given)} (${BWRAP_ENV})"
                 if given else f"(${BWRAP_ENV} is set but empty)")
        hint = userns.missing_hint(os.environ)
        raise UsageError(f"task verifiers run in bubblewrap, and there is no bwrap {where}: "
                         "install it (Debian/Ubuntu: apt-get install bubblewrap"
                         f"{'; ' + hint if hint else ''}), or pass --no-sandbox to run them "
                         "without isolation (recorded in the artifact)")
    why = probe(bwrap)
    if why is not None:
        from gitevals.report.text import one_line

        cause = userns.diagnose(userns.read_settings(), os.environ)
        fix = cause or ("allow unprivileged user namespaces, or install a bubblewrap that "
                        "knows --cap-drop, --size and --seccomp")
        raise UsageError(f"{visible(bwrap)} cannot make a sandbox here ({visible(one_line(why))}):"
                         f" {fix}, or pass --no-sandbox")
    return bwrap


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


def _execute(tree: RevisionTree, the_plan: Plan, prov: Provenance, names: list[str],
             jobs: int, check: bool = True, target_env: Mapping[str, str] | None = None,
             rounds: Rounds | None = None, bwrap: str | None = None,
             cluster: RayExecutor | None = None, graders_on_workers: bool = False,
             suite: SuitePlan | None = None, public_env: frozenset[str] = frozenset(),
             cost_limit: float | None = None) -> Run:
    """Materialize the commit, run the plan in it (SIGINT/SIGTERM stop it), build the artifact."""
    import signal
    import time

    from gitevals.report.progress import progress
    from gitevals.run import runner
    from gitevals.run.reaper import subreaper
    from gitevals.run.workdir import workdir

    # gitevals adopts what escapes its targets and graders, and kills it all before the
    # materialized tree is removed (gitevals.run.reaper).
    target = the_plan.settings.target
    interpreter = _interpreter(tree, the_plan)
    with workdir("run") as tmp, subreaper():
        tree.materialize(tmp)
        if check and target is not None:
            from gitevals.run.preflight import check_target

            check_target(target, str(tmp), interpreter)
        if cluster is not None:
            from gitevals.run.executors import RunShared

            cluster.start(str(tmp), prov.tree,
                          RunShared(the_plan, jobs, _grader_timeout(), graders_on_workers,
                                    dict(target_env or {}), sandboxed=bwrap is not None))
        execution = runner.Execution(the_plan, str(tmp), jobs, _grader_timeout(), target_env,
                                     bwrap, executor=cluster, interpreter=interpreter,
                                     public_env=public_env)
        goldens = _suite_execution(suite, the_plan, str(tmp), jobs, target_env, interpreter)
        started = time.time()

        def halt() -> None:
            execution.interrupt()
            if goldens is not None:
                goldens.interrupt()

        def stop(signum: int, frame: FrameType | None) -> None:
            halt()
            if execution.looking:  # a look's computation checks no flag: end it here
                raise KeyboardInterrupt

        meter = None
        if cost_limit is not None:
            from gitevals.run.pricing import CostMeter

            meter = CostMeter(the_plan.settings.pricing, cost_limit, halt)
            execution.on_trial = meter.add

        old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
        cases = len(the_plan.cases)
        label = f"{cases} case{'s' * (cases != 1)}" + (
            f", {len(the_plan.tasks)} task{'s' * (len(the_plan.tasks) != 1)}"
            if the_plan.tasks else "")
        try:
            # a sequential run (--against) may go to every scenario's last look
            total = the_plan.total() if rounds is None else (
                rounds.most() + len(the_plan.tasks) * the_plan.task_trials())
            with progress(label, total, groups=("cases", cases)) as update:
                def report(t: runner.Tally) -> None:
                    update(t.done, t.failures, t.running, t.cases_done)

                if rounds is None:
                    execution.run(report)
                else:
                    from gitevals.run.sequential import run_rounds

                    run_rounds(execution, rounds, report, _advisory(tree, the_plan, started))
            if goldens is not None and not execution.stop.is_set():
                with progress("goldens", len(goldens.plan.items), unit="items") as sent:
                    goldens.run(lambda done, bad: sent(done, bad))
        finally:
            execution.registry.close()
            if cluster is not None:
                cluster.close()
            if goldens is not None:
                goldens.registry.close()
            for s, handler in old.items():
                signal.signal(s, handler)
        finished = time.time()
    artifact = runner.build_artifact(prov, the_plan, execution, names, jobs, started, finished)
    if rounds is not None:
        from gitevals.run.sequential import annotate

        annotate(artifact, rounds)
    if goldens is not None:
        artifact["goldens"] = goldens.part()
        artifact["files"] = dict(sorted({**artifact["files"], **goldens.plan.files}.items()))
        artifact["interrupted"] = artifact["interrupted"] or goldens.stop.is_set()
    if meter is not None:
        artifact["options"]["cost_limit"] = meter.limit
        if meter.reached:
            artifact["interrupted_reason"] = meter.reason()
    return artifact


def _suite_execution(suite: SuitePlan | None, the_plan: Plan, tree_dir: str,
                     jobs: int, target_env: Mapping[str, str] | None = None,
                     interpreter: str | None = None) -> SuiteExecution | None:
    if suite is None:
        return None
    from gitevals.suite.execute import SuiteExecution

    return SuiteExecution(suite, the_plan.settings, tree_dir, jobs, _grader_timeout(),
                          target_env, interpreter)


def _interpreter(tree: RevisionTree, the_plan: Plan) -> str | None:
    """The interpreter of a python target (``[target] interpreter``, else the
    repository's ``.venv``, else gitevals' own); None for a command target."""
    target = the_plan.settings.target
    if target is None or target.command or not target.python:
        return None
    from gitevals.run.targets import resolve_interpreter

    return resolve_interpreter(target.interpreter, str(tree.repo.work_root))


def _grader_timeout() -> float:
    """30 s; GITEVALS_GRADER_TIMEOUT (seconds, above 0 and at most 3,600) overrides it,
    for tests of the timeout path."""
    from gitevals.run.grading import GRADER_TIMEOUT

    try:
        value = float(os.environ.get("GITEVALS_GRADER_TIMEOUT") or GRADER_TIMEOUT)
    except ValueError:
        return GRADER_TIMEOUT
    return value if 0 < value <= 3600 else GRADER_TIMEOUT  # NaN fails both
