"""The run artifact: one typed model, one ``load``, one ``dumps``.

A run is plain JSON on disk and in git notes (``gitevals-run/1``,
``schemas/result.schema.json``). In memory it stays the dicts ``json.loads``
makes -- typed here as ``TypedDict``s, so mypy checks every field a module reads
and a 100,000-trial artifact costs no conversion -- and every module reads it
through these types: the runner builds it, scoring maps ``Run -> Run``,
reporters and diff read fields. Decisions about a run (``complete``,
``failed``, which of several runs of a commit to prefer) live here too.

Nothing here does IO except ``load`` of a path; files and notes are ``store``'s.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict, TypeGuard, cast

from gitevals import jsontext
from gitevals.errors import ArtifactError
from gitevals.jsontypes import JSON as JSON
from gitevals.jsontypes import JSONObject as JSONObject

if TYPE_CHECKING:
    from gitevals.prices import Prices
    from gitevals.run.goldens import Goldens, SuiteItem
    from gitevals.validation import Violation

FORMAT = "gitevals-run/1"

VerdictName = Literal["pass", "flaky", "fail", "broken", "not_run"]
VERDICTS: tuple[VerdictName, ...] = ("pass", "flaky", "fail", "broken", "not_run")
#: The verdicts that make a run exit 1.
FAILING: frozenset[str] = frozenset(("flaky", "fail", "broken"))


class ErrorRecord(TypedDict):
    """An infrastructure error: ``kind`` (``target_crash``, ``grader_timeout``...) and why."""

    kind: str
    message: str


class Transcript(TypedDict):
    """What the target said during one scenario's turns (all turns concatenated)."""

    final_answer: str | None
    tool_calls: list[JSONObject]
    hooks: list[JSONObject]
    error: JSON  # an error reported BY the target in its reply
    turns: list[JSONObject]  # each turn's raw reply, extra fields kept
    duration_ms: int | float


class _GraderAnswerKeys(TypedDict):
    index: int
    name: str
    raw: JSON
    error: ErrorRecord | None
    duration_ms: int | float


class JudgeCalls(TypedDict):
    """What a grader's ``t.llm``/``t.judge`` calls cost: ``calls`` to the judge, of which
    ``reported`` answered with both token counts (summed here)."""

    calls: int
    reported: int
    prompt_tokens: int
    completion_tokens: int


class JudgeModels(JudgeCalls, total=False):
    """``JudgeCalls`` with ``models``: the model each answered call named, as the judge's
    API answered (null: it named none); the evidence ``calibration.runs`` checks the
    pinned snapshot against. Runs written before it was recorded have none."""

    models: list[str | None]


class GraderAnswer(_GraderAnswerKeys, total=False):
    """A grader's raw answer as run (deciding what it means is scoring's job); ``usage``
    only when the grader asked the judge."""

    usage: JudgeModels


class _AssertionOutcomeKeys(TypedDict):
    index: int
    kind: str
    passed: bool
    message: str
    error: ErrorRecord | None
    score: float | None


class AssertionOutcome(_AssertionOutcomeKeys, total=False):
    """One assertion's outcome on one trial; ``advisory`` (true) only for a grader the
    run's ``judge_calibration`` says is advisory: its failure is shown, never counted."""

    advisory: bool


class Iteration(TypedDict):
    """One turn of a task's conversation and the verifier's reward on it (``gitevals.tasks``)."""

    iteration: int
    message: str                 # the user turn the target got
    rewards: dict[str, float]    # every reward the verifier wrote; {} when unreadable
    reward: float | None         # the deciding one (gitevals.tasks.verifier.deciding)
    passed: bool                 # reached the threshold the run used
    verifier_exit: int | None    # None: killed on its timeout, or not started
    verifier_tail: str           # the end of its output (stdout and stderr)
    attempts: int                # verifier calls: 2 after a retried grading failure
    error: ErrorRecord | None    # the grading failure that ended the trial, if any
    duration_ms: int | float


class _TaskTrialKeys(TypedDict):
    state: str                   # satisfied | needs_revision | max_iterations_reached | error
    final_reward: float | None
    sandbox: str                 # "bwrap", "none" (run --no-sandbox), "harbor" (imported)
    iterations: list[Iteration]


class TaskTrial(_TaskTrialKeys, total=False):
    """What a task trial adds to a ``Trial``: its iterations and where they led; ``limits``
    only when the task names ``cpus`` or ``memory_mb``: how they held (``rlimit`` or
    ``cgroup2``)."""

    limits: str


class _TrialKeys(TypedDict):
    trial: int
    transcript: Transcript
    error: ErrorRecord | None
    graders: list[GraderAnswer]
    assertions: list[AssertionOutcome]
    passed: bool


class Placement(TypedDict):
    """Where a trial's conversation ran on a cluster (``run --executor ray``): the node
    that finished it, how many attempts it took, and the nodes lost under it before."""

    node: str
    attempts: int
    lost: list[str]


class Trial(_TrialKeys, total=False):
    """One trial of one scenario: transcript, grader answers, outcomes; ``task`` only on
    a trial of a task directory; ``placement`` only for a conversation run on a cluster."""

    task: TaskTrial
    placement: Placement


class Verdict(TypedDict):
    """A scenario's verdict over its trials."""

    verdict: VerdictName
    passes: int
    trials: int
    pass_at_k: bool
    pass_hat_k: bool
    first_failure: str | None
    errors: dict[str, int]


class _ScenarioRunKeys(TypedDict):

    id: str
    user: list[str]
    expect: list[JSONObject]  # one single-key object per assertion
    trials: int
    timeout: int | float
    results: list[Trial]
    verdict: Verdict


# Optional keys as a total=False subclass (not NotRequired[...]): with postponed
# annotations only this form is seen at run time, where tests compare with the schema.
class SequentialLook(TypedDict):
    """One look of a sequential run: B's trials and passes so far, and the design's call
    (regressed, ruled_out, continue, no_regression at the last look, incomplete)."""

    trials: int
    passes: int
    call: str


class Tally(TypedDict):
    passes: int
    trials: int


class _SequentialRecordKeys(TypedDict):
    stopped: str  # regressed | ruled_out | max_trials | no_base | incomplete | interrupted
    looks: list[SequentialLook]


class SequentialRecord(_SequentialRecordKeys, total=False):
    """A scenario of ``run --against``: its base tally, its design and every look."""

    base: Tally
    design: JSONObject


class _PackedKeys(TypedDict):
    outcomes: str


class Packed(_PackedKeys, total=False):
    """A summary's trials as a note line keeps them (``gitevals.run.summary.pack``):
    one character a trial (``1`` passed, ``x`` failed with an infrastructure error,
    ``0`` failed) and the JSON text of the trials column by column
    (``summary.columns``), parsed only by what needs trials."""

    columns: str


class ScenarioRun(_ScenarioRunKeys, total=False):
    """One scenario: the rules used and a ``Trial`` per trial that ran; ``rules`` only
    after ``score --rules`` (applied, stored, or added); ``sequential`` only from
    ``run --against``; ``packed`` only in a note's summary (then ``results`` is empty
    until ``summary.unpack``)."""

    rules: Literal["applied", "stored", "added"]
    sequential: SequentialRecord
    packed: Packed


class _CaseRunKeys(TypedDict):
    name: str
    path: str
    blob: str | None
    scenarios: list[ScenarioRun]


class Draft(TypedDict):
    """A case run from a file outside the commit (``run --draft``): where it was read
    and the sha256 of its bytes."""

    path: str
    sha256: str


class _TaskInfoKeys(TypedDict):
    """What a run used of a task directory's definition, and what it did not realize."""

    instruction_file: str
    max_iterations: int
    pass_threshold: float
    verifier: list[str]          # the argv, never a shell string
    verifier_default: bool       # the Harbor convention, not written in task.toml
    reward_format: str
    workdir: str
    allow_internet: bool
    sandbox: str                 # "bwrap" | "none"
    gaps: list[str]              # unrealized: image_build, image_pull, cpus, memory_mb, ...


class TaskInfo(_TaskInfoKeys, total=False):
    """``controls`` only when the run checked them (``run --task-controls``); ``limits``
    only when the task names ``cpus`` or ``memory_mb``."""

    controls: JSONObject         # gitevals.tasks.controls.Controls.as_dict()
    limits: JSONObject           # cpus / memory_mb as applied (gitevals.tasks.limits.record)
    agent_sandbox: bool          # [agent] sandbox = true: the target ran in bubblewrap
    image: JSONObject            # the task's image as realized (gitevals.tasks.image.Realized)


class CaseRun(_CaseRunKeys, total=False):
    """One case; ``draft`` only for a case ``run --draft`` read from outside the tree;
    ``task`` only for a task directory (one scenario, ``task``)."""

    draft: Draft
    task: TaskInfo
    cluster: str  # the case's ``cluster:`` (diff clusters the suite interval by it)


class _OptionsKeys(TypedDict):
    cases: list[str]
    trials: int | None
    jobs: int


class Options(_OptionsKeys, total=False):
    """``goldens_only`` only for ``run --goldens-only`` (no case was run); ``cost_limit``
    (USD) only for ``run --cost-limit``."""

    goldens_only: bool
    cost_limit: float


class ScoredWith(TypedDict, total=False):
    rules_rev: str
    rules_commit: str | None
    tool_version: str
    regraded: bool


class _RunKeys(TypedDict):

    format: str
    run_id: str
    tool_version: str
    rev: str
    commit: str
    tree: str
    dirty: bool
    dirty_diff: str | None
    root: str
    settings: JSONObject
    files: dict[str, str]
    started_at: str
    finished_at: str
    duration_ms: int
    interrupted: bool
    options: Options
    cases: list[CaseRun]


class TargetEnvValue(TypedDict, total=False):
    """A variable given to the target: its ``value``, or the ``sha256`` of a secret's."""

    value: str
    sha256: str


class Sequential(TypedDict):
    """What ``run --against`` was given: the base commit and run, and the design's numbers."""

    against: str
    base_run: str
    max_trials: int | None
    looks: int
    alpha: float
    drop: float


class _GraderCalibrationKeys(TypedDict):
    status: str
    reason: str
    code: str | None


class GraderCalibration(_GraderCalibrationKeys, total=False):
    """A judge grader's calibration when the run started (``gitevals.calibration``):
    ``status`` calibrated or advisory, why, and the lint code of an advisory reason;
    ``tpr`` and ``tnr`` (``Tally``-like ``hits`` of ``of``) only for a calibrated grader
    whose record has its counts, for judge-corrected rates."""

    tpr: RateCount
    tnr: RateCount


class RateCount(TypedDict):
    """``hits`` of ``of`` labelled items (a calibration's TPR or TNR)."""

    hits: int
    of: int


class ExecutorRecord(TypedDict):
    """What ran the conversations: ``local`` (this machine's thread pool) or ``ray`` (the
    cluster at ``address``, on ``nodes``)."""

    kind: str
    address: str | None
    nodes: list[str]


class Stored(TypedDict):
    """Where a summary's full artifact is: the sha256 and size of its canonical text."""

    sha256: str
    bytes: int


class Run(_RunKeys, total=False):
    """A whole run, pinned to ``commit``; ``scored_with`` only from ``gitevals score``;
    ``target_env`` only when variables were given to the target (``--target-env``);
    ``sequential`` only from ``run --against``; ``judge_calibration`` (grader name -> its
    calibration) in runs since judge calibration: empty when no grader asks the judge;
    ``executor`` in runs written since executors could be chosen; ``goldens`` only when
    the run sent the goldens (``gitevals.run.goldens``); ``stored`` only in a summary
    (``gitevals.run.summary``: the note's form, transcripts left out);
    ``interrupted_reason`` only when something other than a signal stopped it
    (``run --cost-limit``); ``imported`` only for a run ``gitevals import`` made."""

    scored_with: ScoredWith
    target_env: dict[str, TargetEnvValue]
    sequential: Sequential
    judge_calibration: dict[str, GraderCalibration]
    executor: ExecutorRecord
    goldens: Goldens
    stored: Stored
    interrupted_reason: str
    imported: Imported


#: Where an imported run came from (``gitevals import harbor``): ``from`` is a keyword.
Imported = TypedDict("Imported", {"from": str, "job": str, "trials": int})


def unkeepable(value: object) -> str | None:
    """Why ``value`` (parsed JSON from a target or grader) cannot be kept faithfully in a
    run, or None: the same limits ``gitevals.jsonlimits`` puts on goldens rows (bounded
    nesting, no lone surrogates, finite numbers), so a kept run can always be read."""
    from gitevals import jsonlimits

    kind = jsonlimits.problem(value)
    return None if kind is None else jsonlimits.ADVICE[kind]


#: The keys of a transcript, which are also what a grader's ``run`` argument holds.
TRANSCRIPT_KEYS: tuple[str, ...] = tuple(Transcript.__annotations__)


# -- building -------------------------------------------------------------------


def new_run_id(commit: str, now: float | None = None) -> str:
    """``<UTC yyyymmddThhmmssZ>-<commit[:12]>-<6 hex>``: sortable by time, unique at once."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    # os.urandom is what ``secrets.token_hex`` reads, without its import (random, hashlib)
    return f"{stamp}-{commit[:12]}-{os.urandom(3).hex()}"


def utc_stamp(now: float | None = None) -> str:
    """``2026-11-29T22:00:00.123Z``: milliseconds, so two runs of one commit finished in
    the same second still have an order (``preference``), in results/ and in notes alike."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def transcript(replies: list[JSONObject], ms: int) -> Transcript:
    """One scenario's transcript: its own turns, tool calls and hooks concatenated."""
    errors = [r["error"] for r in replies if r.get("error") is not None]
    answer = replies[-1].get("final_answer") if replies else None
    return {
        "final_answer": answer if isinstance(answer, str) else None,
        "tool_calls": [c for r in replies for c in _objects(r.get("tool_calls"))],
        "hooks": [h for r in replies for h in _objects(r.get("hooks"))],
        "error": errors[0] if errors else None,
        "turns": replies,
        "duration_ms": ms,
    }


def judge_calls(value: object) -> JudgeModels | None:
    """The judge usage a grader worker reported for one call, or None when it is not
    four whole numbers >= 0 with ``reported`` at most ``calls``; with the models its
    answered calls named (``JudgeModels``) when that list is well formed."""
    if not isinstance(value, dict):
        return None
    keys = ("calls", "reported", "prompt_tokens", "completion_tokens")
    got = [value.get(k) for k in keys]
    counts = [v for v in got if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    if len(counts) != len(keys) or counts[1] > counts[0]:
        return None
    out: JudgeModels = {"calls": counts[0], "reported": counts[1], "prompt_tokens": counts[2],
                        "completion_tokens": counts[3]}
    models = value.get("models")
    if isinstance(models, list) and len(models) <= counts[0] and all(
            m is None or (isinstance(m, str) and 0 < len(m) <= 200) for m in models):
        out["models"] = list(models)
    return out


def _objects(value: JSON) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def grader_calls(expect: list[JSONObject]) -> list[tuple[int, str]]:
    """``(index, grader name)`` of every ``grader`` assertion of ``expect``."""
    out = []
    for index, item in enumerate(expect):
        arg = item.get("grader") if len(item) == 1 else None
        name = arg.get("name") if isinstance(arg, dict) else None
        if isinstance(name, str):
            out.append((index, name))
    return out


def grader_arguments(scenario_id: str, user: list[str], expect: list[JSONObject],
                     t: Transcript) -> tuple[JSONObject, JSONObject]:
    """The ``case`` and ``run`` a grader is called with for one trial (DESIGN §3)."""
    case: JSONObject = {"id": scenario_id, "user": list(user), "expect": list(expect)}
    run: JSONObject = {k: cast(JSON, t.get(k)) for k in TRANSCRIPT_KEYS}
    return case, run


# -- decisions ------------------------------------------------------------------


def scenarios(run: Run) -> Iterator[tuple[CaseRun, ScenarioRun]]:
    """Every scenario of ``run`` with its case, in artifact order."""
    for case in run["cases"]:
        for s in case["scenarios"]:
            yield case, s


def scenario_ms(scenario: ScenarioRun) -> int:
    """How long a scenario took: the sum of its trials' ``duration_ms`` (the time its
    target took to answer, and a task's verifier to decide), whole milliseconds."""
    total = 0
    for r in scenario["results"]:
        ms = r["transcript"]["duration_ms"]
        ok = isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0
        total += int(ms) if ok else 0
    return total


def duration_text(ms: int) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``: a duration for a table cell."""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds:02d} s"


def complete(run: Run) -> bool:
    """A run of every case of its commit (no CASE filter) that was not interrupted
    (``run --goldens-only`` runs no case, ``--bucket`` only some goldens: neither is)."""
    part = run.get("goldens")
    only = run["options"].get("goldens_only") or (part is not None and part["buckets"])
    return (not run["options"]["cases"] and not run["interrupted"] and not is_draft(run)
            and not only)


def is_draft(run: Run) -> bool:
    """A run of a draft case (``run --draft``): never the run of its commit."""
    return any("draft" in c for c in run["cases"])


def failed(run: Run) -> bool:
    """True when any scenario is flaky, fail or broken, or a golden did not pass (the
    exit status 1 condition); an advisory judge grader's failures never count."""
    part = run.get("goldens")
    if any(s["verdict"]["verdict"] in FAILING for _, s in scenarios(run)):
        return True
    if part is None:
        return False
    from gitevals.run.goldens import failing  # a run without goldens never loads it
    from gitevals.run.scoring import advisory_graders

    return failing(part, advisory_graders(run))


def preference(run: Run, written: int = 0) -> tuple[bool, str, int]:
    """Sort key of the runs of one commit: the greatest is the one to show, diff and note.

    Used for the files of ``<root>/results/`` (the working tree's own); the runs of a
    note are ordered by their place in it, never by a field they carry
    (``store.ranked``). Complete runs first (`gitevals run tone` after a full run must
    not hide the full run; a draft run is never complete), then the run that finished
    last (a long run started earlier can finish after a short one); ``finished_at`` has
    whole seconds, so a tie goes to the later-written one (``written``: a file's mtime),
    never to the run id's random suffix.
    """
    return complete(run), run["finished_at"], written


# -- usage ----------------------------------------------------------------------

#: What a reply may report about its cost: ``usage.prompt_tokens``,
#: ``usage.completion_tokens`` (OpenAI style) and ``cost`` (or ``usage.cost``).
MEASURES: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "cost")


class Measure(NamedTuple):
    """One measure summed over trials: ``total`` is None when no trial reported it
    (a missing count is never a zero); ``reported`` counts the trials that did."""

    total: int | float | None
    reported: int


def _plus(a: Measure, b: Measure) -> Measure:
    if a.total is None or b.total is None:
        return Measure(a.total if b.total is None else b.total, a.reported + b.reported)
    return Measure(a.total + b.total, a.reported + b.reported)


class Usage(NamedTuple):
    """What the replies of ``trials`` trials reported, measure by measure (``MEASURES``)."""

    trials: int
    measures: tuple[Measure, ...]

    def get(self, name: str) -> Measure:
        return self.measures[MEASURES.index(name)]


NO_USAGE = Usage(0, tuple(Measure(None, 0) for _ in MEASURES))
_UNKNOWN = Measure(None, 0)
#: A trial none of whose measures is known.
_UNREPORTED = Usage(1, NO_USAGE.measures)


#: Token counts as OpenAI-style replies name them, and as Anthropic-style ones do.
_ALIASES = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


def _reply_measures(reply: JSONObject, prices: Prices | None) -> tuple[int | float | None, ...]:
    """Each measure of one reply, in ``MEASURES`` order, None where it carries no usable
    one: a token count is a whole number >= 0, a cost a finite number >= 0 (never a bool
    or a string). A reply that reports tokens but no cost is priced from ``prices`` when
    it can be. One call a reply: a run's usage reads every reply of every trial."""
    usage = reply.get("usage")
    counts = usage if isinstance(usage, dict) else {}
    return (_count(counts, "prompt_tokens"), _count(counts, "completion_tokens"),
            reply_reported_cost(reply, prices))


def _count(usage: JSONObject, name: str) -> int | None:
    value = usage.get(name)
    if value is None and name in _ALIASES:
        value = usage.get(_ALIASES[name])  # the other API's name for the same count
    total = _usable(value, whole=True)
    return total if isinstance(total, int) else None


def _usable(value: JSON, whole: bool) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if (whole and not isinstance(value, int)) or value < 0:
        return None
    return None if isinstance(value, float) and not math.isfinite(value) else value


def reply_reported_cost(reply: JSONObject, prices: Prices | None = None) -> int | float | None:
    """A reply's cost: what it reports (``cost`` or ``usage.cost``), else its tokens at
    the price table's rate (``gitevals.run.pricing``), else None."""
    usage = reply.get("usage")
    value = reply["cost"] if reply.get("cost") is not None else (
        usage.get("cost") if isinstance(usage, dict) else None)
    if value is None and prices is not None:
        from gitevals.run.pricing import reply_cost

        return reply_cost(reply, prices)
    return _usable(value, whole=False)


def trial_usage(trial: Trial, prices: Prices | None = None) -> Usage:
    """One trial's usage: a measure counts only when every reply of the trial reported
    it (a partial sum would read as the whole); a trial with no reply reported nothing."""
    replies = trial["transcript"]["turns"]
    if not replies or not all(isinstance(r, dict) for r in replies):
        return _UNREPORTED
    if len(replies) == 1:  # most trials: one reply (0 + v is what sum([v]) gives)
        return Usage(1, tuple(_UNKNOWN if v is None else Measure(0 + v, 1)
                              for v in _reply_measures(replies[0], prices)))
    columns = zip(*(_reply_measures(r, prices) for r in replies), strict=True)
    return Usage(1, tuple(_UNKNOWN if None in values
                          else Measure(sum(v for v in values if v is not None), 1)
                          for values in columns))


class _Sum:
    """A running sum of trial usages: the same left fold as ``_plus`` trial after trial
    (a float cost adds up in the same order), without a ``Usage`` built per trial (that
    cost more than reading the replies: ``benchmarks/bench_score.py``)."""

    __slots__ = ("reported", "totals", "trials")

    def __init__(self) -> None:
        self.trials = 0
        self.totals: list[int | float | None] = [None] * len(MEASURES)
        self.reported = [0] * len(MEASURES)

    def add(self, one: Usage) -> None:
        self.trials += one.trials
        for i, m in enumerate(one.measures):
            if m.total is not None:
                total = self.totals[i]
                self.totals[i] = m.total if total is None else total + m.total
                self.reported[i] += m.reported

    def usage(self) -> Usage:
        return Usage(self.trials, tuple(map(Measure, self.totals, self.reported)))


def usage(trials: Iterable[Trial], prices: Prices | None = None) -> Usage:
    """The usage of ``trials`` summed (a scenario's results, or every trial of a run)."""
    total = _Sum()
    for t in trials:
        total.add(trial_usage(t, prices))
    return total.usage()


def usages(run: Run) -> tuple[list[Usage], Usage]:
    """Each scenario's usage (in ``scenarios`` order) and the run's (``run_usage``), every
    trial read once: a verdict table shows both."""
    prices = run_prices(run)
    whole, parts = _Sum(), []
    for _, s in scenarios(run):
        part = _Sum()
        for t in s["results"]:
            one = trial_usage(t, prices)
            part.add(one)
            whole.add(one)
        parts.append(part.usage())
    return parts, whole.usage()


def run_prices(run: Run) -> Prices:
    """The price table the run's commit set (recorded in its ``settings``)."""
    from gitevals.prices import prices_of

    return prices_of(run["settings"])


def run_usage(run: Run) -> Usage:
    """The usage of every trial of ``run`` (tokens priced by the run's own price table)."""
    prices = run_prices(run)
    return usage((t for _, s in scenarios(run) for t in s["results"]), prices)


# -- text -----------------------------------------------------------------------


def dumps(run: Run) -> str:
    """The canonical text of a run (sorted keys, one space indent, trailing newline):
    ``json.dumps(run, sort_keys=True, indent=1, ensure_ascii=False) + "\\n"`` byte for
    byte, written by ``jsontext.dumps``, which does without json's slow indenting encoder."""
    return jsontext.dumps(run) + "\n"


def load(source: str | Path | bytes, label: str | None = None) -> Run:
    """Read and validate a run (a path, or its bytes), once.

    Raises ``ArtifactError`` with one line ``<label>: not a gitevals run artifact: <what>``.
    """
    label = label or ("<bytes>" if isinstance(source, bytes) else str(source))
    data = source if isinstance(source, bytes) else _read_regular(Path(source), label)
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{label}: not a gitevals run artifact: not JSON ({exc}); "
                            "give the .json file `gitevals run` wrote") from exc
    except RecursionError:
        raise ArtifactError(f"{label}: not a gitevals run artifact: nested too deep to read "
                            "(gitevals writes runs at most a few hundred levels deep)") from None
    run = checked(doc, label)
    return _with_trials(run, label) if "stored" in run else run


def _with_trials(summary: Run, label: str) -> Run:
    """A summary saved from a note line, with its packed trials back in ``results``
    (``summary.unpack``); ``ArtifactError`` when they are damaged."""
    from gitevals.run.summary import unpack

    run = unpack(summary)
    bad = next((f"{c['name']}/{s['id']}" for c, s in scenarios(run) if "packed" in s), None)
    if bad is not None:
        raise ArtifactError(f"{label}: not a gitevals run artifact: the packed trials of {bad} "
                            "are damaged or not what its outcomes say")
    return checked(run, label)


def _read_regular(path: Path, label: str) -> bytes:
    """The bytes of ``path`` when it is a regular file (a FIFO would block a read forever)."""
    import stat

    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ArtifactError(f"{label}: cannot read: not a regular file; give the .json "
                                "file `gitevals run` wrote")
        return path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{label}: cannot read: {exc.strerror or exc}") from exc


def checked(doc: object, label: str) -> Run:
    """``doc`` as a ``Run`` when it is one; else ``ArtifactError`` naming ``label``."""
    problems: list[str] = []
    if not is_run(doc, problems):
        raise ArtifactError(f"{label}: not a gitevals run artifact: {problems[0]}")
    return doc


def is_run(doc: object, problems: list[str] | None = None) -> TypeGuard[Run]:
    """True when ``doc`` is a run artifact (``validate``); else False, with what is wrong
    appended to ``problems`` when given."""
    problem = validate(doc)
    if problem is not None and problems is not None:
        problems.append(problem)
    return problem is None


def candidate(text: str | bytes) -> Run | None:
    """``text`` when it is JSON claiming to be a run (format checked, nothing else): what
    picking among many runs needs before the chosen one is validated with ``checked``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(data, dict) and data.get("format") == FORMAT):
        return None
    cases = data.get("cases")
    ok = (isinstance(data.get("options"), dict) and isinstance(data.get("finished_at"), str)
          and isinstance(data.get("commit"), str) and isinstance(cases, list)
          and all(isinstance(c, dict) for c in cases))  # what ranking runs reads
    return cast(Run, data) if ok else None


# -- validation: the compiled schema for the skeleton, a hand mirror for trials ----

#: The schema with trial records left opaque: ``_trial_ok`` checks those.
_SKELETON: JSONObject = {"result": {"type": "object"}}


def validate(doc: object) -> str | None:
    """What is wrong with ``doc`` as a run (one phrase), or None when it is one.

    Everything but the trial records is checked by the compiled schema
    (``gitevals.validation``); the (many) trial records by ``_trial_ok``, a hand-written
    mirror of ``$defs/result`` about twice as fast as the compiled check per record
    (``benchmarks/bench_score.py`` measures the whole load). jsonschema only explains
    what they rejected, so the message names the JSON path of the problem.
    """
    from gitevals import validation

    if not isinstance(doc, dict):
        return f"the top level is {type(doc).__name__}, not an object"
    fmt = doc.get("format")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith("gitevals-run/"):
            return (f"format {fmt!r} is not {FORMAT!r}, the one this gitevals reads; "
                    "upgrade gitevals")
        return f"no \"format\": {FORMAT!r} key; give the .json file `gitevals run` wrote"
    if not validation.is_valid("result", doc, defs=_SKELETON):
        return _explain(validation.best_error("result", doc, defs=_SKELETON), "$")
    for ci, case in enumerate(doc["cases"]):
        for si, scenario in enumerate(case["scenarios"]):
            for ri, result in enumerate(scenario["results"]):
                if not _trial_ok(result):
                    where = f"$.cases[{ci}].scenarios[{si}].results[{ri}]"
                    return _explain(validation.best_error("result", result,
                                                          definition="result"), where)
    return None


def _explain(v: Violation | None, where: str) -> str:
    from gitevals.validation import json_path

    if v is None:  # the fast check and jsonschema disagree: still refuse, say where
        return f"at {where}: it does not match schemas/result.schema.json"
    return f"at {json_path(v.path, where)}: {v.message}; see schemas/result.schema.json"


_TRIAL_KEYS = frozenset(Trial.__required_keys__)
_ITERATION_KEYS = frozenset(Iteration.__annotations__)
_TASK_TRIAL_KEYS = frozenset(TaskTrial.__required_keys__)
_TASK_STATES = frozenset(("satisfied", "needs_revision", "max_iterations_reached", "error"))
_TRANSCRIPT_KEYS = frozenset(TRANSCRIPT_KEYS)
_GRADER_KEYS = frozenset(_GraderAnswerKeys.__annotations__)
_ASSERTION_KEYS = frozenset(AssertionOutcome.__required_keys__)
_USAGE_KEYS = frozenset(JudgeCalls.__annotations__)
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


def _count_ok(x: object) -> bool:
    return type(x) is int and x >= 0


def _number_ok(x: object) -> TypeGuard[int | float]:
    """A JSON number as gitevals writes it (NaN and the infinities are not JSON)."""
    return type(x) is int or (type(x) is float and math.isfinite(x))


def _ms_ok(x: object) -> bool:
    return _number_ok(x) and x >= 0


def _error_ok(e: object) -> bool:
    if e is None:
        return True
    return (type(e) is dict and type(e.get("kind")) is str and _KIND.match(e["kind"]) is not None
            and type(e.get("message")) is str)


def is_error_record(e: object) -> TypeGuard[ErrorRecord]:
    """True when ``e`` is an infrastructure error record (``$defs/error``, not null)."""
    return e is not None and _error_ok(e)


def _named_ok(items: object) -> bool:
    """A list of objects each with a string ``name`` (tool calls, hooks)."""
    return type(items) is list and all(type(x) is dict and type(x.get("name")) is str
                                       for x in items)


def _transcript_ok(t: object) -> bool:
    return (type(t) is dict and t.keys() >= _TRANSCRIPT_KEYS
            and (t["final_answer"] is None or type(t["final_answer"]) is str)
            and _named_ok(t["tool_calls"]) and _named_ok(t["hooks"])
            and type(t["turns"]) is list and _ms_ok(t["duration_ms"]))


def _usage_ok(u: object) -> bool:
    """A grader's judge usage: four counts (``$defs/grader`` ``usage``)."""
    return (type(u) is dict and u.keys() >= _USAGE_KEYS
            and all(_count_ok(u[k]) for k in _USAGE_KEYS))


def _grader_ok(g: object) -> bool:
    return (type(g) is dict and g.keys() >= _GRADER_KEYS and _count_ok(g["index"])
            and type(g["name"]) is str and _error_ok(g["error"]) and _ms_ok(g["duration_ms"])
            and ("usage" not in g or _usage_ok(g["usage"])))


def _assertion_ok(a: object) -> bool:
    return (type(a) is dict and a.keys() >= _ASSERTION_KEYS and _count_ok(a["index"])
            and type(a["kind"]) is str and type(a["passed"]) is bool
            and type(a["message"]) is str and _error_ok(a["error"])
            and (a["score"] is None or _number_ok(a["score"]))
            and ("advisory" not in a or type(a["advisory"]) is bool))


def _trial_ok(r: object) -> bool:
    """True when trial record ``r`` keeps ``$defs/result`` (mirrors the schema by hand)."""
    return (type(r) is dict and r.keys() >= _TRIAL_KEYS and _count_ok(r["trial"])
            and type(r["passed"]) is bool and _error_ok(r["error"])
            and _transcript_ok(r["transcript"])
            and type(r["graders"]) is list and all(map(_grader_ok, r["graders"]))
            and type(r["assertions"]) is list and all(map(_assertion_ok, r["assertions"]))
            and ("task" not in r or _task_trial_ok(r["task"]))
            and ("placement" not in r or _placement_ok(r["placement"])))


def is_trial(r: object) -> TypeGuard[Trial]:
    """True when ``r`` is a trial record (``_trial_ok``): a record read back alone."""
    return _trial_ok(r)


def is_item(r: object) -> TypeGuard[SuiteItem]:
    """True when ``r`` is a golden item record (``$defs/suite_item``)."""
    from gitevals import validation

    return isinstance(r, dict) and validation.is_valid("result", r, definition="suite_item")


def _reward_ok(x: object) -> bool:
    return (type(x) is int or type(x) is float) and 0 <= x <= 1


def _iteration_ok(i: object) -> bool:
    return (type(i) is dict and i.keys() >= _ITERATION_KEYS and _count_ok(i["iteration"])
            and type(i["message"]) is str and type(i["rewards"]) is dict
            and all(type(k) is str and _reward_ok(v) for k, v in i["rewards"].items())
            and (i["reward"] is None or _reward_ok(i["reward"]))
            and type(i["passed"]) is bool
            and (i["verifier_exit"] is None or type(i["verifier_exit"]) is int)
            and type(i["verifier_tail"]) is str and _count_ok(i["attempts"])
            and _error_ok(i["error"]) and _ms_ok(i["duration_ms"]))


def _task_trial_ok(t: object) -> bool:
    """A trial's ``task`` record (mirrors ``$defs/task_trial``)."""
    return (type(t) is dict and t.keys() >= _TASK_TRIAL_KEYS
            and type(t["state"]) is str and t["state"] in _TASK_STATES
            and (t["final_reward"] is None or _reward_ok(t["final_reward"]))
            and t["sandbox"] in ("bwrap", "none", "harbor")
            and type(t["iterations"]) is list and all(map(_iteration_ok, t["iterations"])))


def _placement_ok(p: object) -> bool:
    return (type(p) is dict and type(p.get("node")) is str and type(p.get("attempts")) is int
            and p["attempts"] >= 0 and type(p.get("lost")) is list
            and all(type(n) is str for n in p["lost"]))
