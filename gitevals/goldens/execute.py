"""Run a ``SuitePlan`` in a materialized commit: each item is one conversation with the
target (its ``input`` turns), then its slice's grader with the row in ``case``.

The IO edge of the suite, built like ``gitevals.run.runner.Execution`` and on the
same parts: one target process per conversation (``Conversation``), graders in warm
workers (``GraderPool``), a thread pool (the targets are processes, so threads only
wait) and a thread-safe ``interrupt``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from gitevals.goldens import choice
from gitevals.goldens.plan import Item, SuitePlan
from gitevals.jsontypes import JSON, JSONObject
from gitevals.model import DEFAULT_TIMEOUT
from gitevals.run.artifact import (
    ErrorRecord,
    GraderAnswer,
    grader_arguments,
    transcript,
    unkeepable,
)
from gitevals.run.goldens import Goldens, SuiteItem, case_of, decide, slices
from gitevals.run.grading import GraderPool
from gitevals.run.judge import judge_config
from gitevals.run.targets import Conversation, ProcessRegistry, TargetError, Turn, target_argv

if TYPE_CHECKING:
    from gitevals.run.artifact import Transcript
    from gitevals.run.runner import GraderCall
    from gitevals.settings import Settings

#: ``progress(done, failed)``
Progress = Callable[[int, int], None]


def grade_item(call: GraderCall, grader: str, ident: str, row: JSONObject, sent: list[str],
               t: Transcript) -> GraderAnswer:
    """The grader's answer on one golden (a run, and ``score --regrade``): ``case`` is the
    row (``expected`` and all its fields) with ``user`` (the turns sent); ``run`` is the
    transcript, as for a case's grader."""
    _, run = grader_arguments(ident, sent, [], t)
    user: list[JSON] = list(sent)
    case: JSONObject = {"user": user, **row}
    answer = call(grader, case, run)
    raw, error = answer["raw"], answer["error"]
    why = unkeepable(raw)
    if why is not None:
        raw, error = None, {"kind": "grader_malformed",
                            "message": f"grader {grader}: its answer cannot be kept: {why}"}
    return {"index": 0, "name": grader, "raw": raw, "error": error,
            "duration_ms": answer["duration_ms"]}


class SuiteExecution:
    """Sends every item of ``plan`` to the target in ``tree_dir``, ``jobs`` at a time."""

    def __init__(self, plan: SuitePlan, settings: Settings, tree_dir: str, jobs: int,
                 grader_timeout: float, target_env: Mapping[str, str] | None = None,
                 interpreter: str | None = None,
                 registry: ProcessRegistry | None = None) -> None:
        target = settings.target
        # the same environment as the run's cases and tasks (``run --target-env``): a
        # baseline that records MODEL=... must have been measured with it
        self._env = {**os.environ, **target_env} if target_env else None
        self.plan = plan
        self.tree_dir = tree_dir
        self.jobs = max(1, jobs)
        self.argv = target_argv(target.command, target.python, interpreter,
                                 target.endpoint) if target else []
        self.python_target = bool(target and not target.command and target.python)
        self.stop = threading.Event()
        # the run's, when given: its supervisor, and the python target's worker the
        # preflight (or the cases) already imported, serve the goldens too
        self.registry = registry or ProcessRegistry()
        self.graders = GraderPool(tree_dir, settings.root, judge_config(settings.judge),
                                  grader_timeout, self.registry)
        self.results: dict[int, SuiteItem] = {}
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        """Start no more items and kill every running target and grader."""
        self.stop.set()
        self.registry.kill_all()

    def run(self, progress: Progress | None = None) -> None:
        """Send every item (what finished is kept when interrupted)."""
        try:
            with ThreadPoolExecutor(self.jobs, thread_name_prefix="gitevals-golden") as pool:
                for _ in pool.map(self._one, range(len(self.plan.items))):
                    if progress is not None:
                        with self._lock:
                            done = list(self.results.values())
                        progress(len(done), sum(not r["passed"] for r in done))
        finally:
            if self.stop.is_set():
                self.registry.kill_all()
            self.graders.close()

    def _one(self, index: int) -> None:
        if self.stop.is_set():
            return
        item = self.plan.items[index]
        record: JSONObject | None = None
        if item.choice is not None:
            t, error, answer, record = self._choose(item, item.choice)
        else:
            t, error = self._attempt(item, None)
            answer = self._grade(item, t) if error is None and not self.stop.is_set() else None
        if self.stop.is_set():
            return  # an interrupted conversation is not recorded
        done = decide({"kind": item.kind, "slice": item.slice, "id": item.id,
                       "path": item.path, "line": item.line, "row": item.row,
                       "grader": item.grader, "transcript": t, "error": error,
                       "answer": answer, "outcome": None, "passed": False})
        if record is not None:
            done["choice"] = record
        with self._lock:
            self.results[index] = done

    def _attempt(self, item: Item, max_tokens: int | None) -> tuple[Transcript,
                                                                    ErrorRecord | None]:
        """One conversation of ``item`` and its transcript (``max_tokens``: the token
        budget a multiple-choice row is sent with)."""
        started = time.monotonic()
        replies, error = self._converse(item, max_tokens)
        return transcript(replies, int((time.monotonic() - started) * 1000)), error

    def _choose(self, item: Item, spec: choice.Spec) -> tuple[
            Transcript, ErrorRecord | None, GraderAnswer | None, JSONObject]:
        """A multiple-choice row, scored by gitevals: the label the last reply chose (by
        log-probability, else extracted); an unparsed answer is sent once more with the
        larger budget before it is scored wrong. The record keeps every attempt."""
        first, retry = spec.budget
        attempts: list[JSON] = []
        t, error = self._attempt(item, first)
        scored = self._scored(t, error, spec)
        retried = None
        if error is None and scored.method == choice.UNPARSED and not self.stop.is_set():
            said: list[JSON] = list(t["turns"])
            attempts.append({"max_tokens": first, "method": scored.method, "chosen": None,
                             "final_answer": t["final_answer"], "turns": said})
            t, error = self._attempt(item, retry)
            scored, retried = self._scored(t, error, spec), retry
        attempts.append({"max_tokens": retried or first,
                         "method": "error" if error is not None else scored.method,
                         "chosen": scored.label})
        want = choice.expected(item.row, spec.labels) or ""
        record: JSONObject = {"choices": list(spec.labels), "expected": want,
                              "attempts": attempts}
        if error is not None:
            return t, error, None, record
        answer: GraderAnswer = {"index": 0, "name": choice.GRADER, "error": None,
                                "raw": choice.verdict(scored.label, want, scored, retried),
                                "duration_ms": 0}
        return t, None, answer, record

    @staticmethod
    def _scored(t: Transcript, error: ErrorRecord | None, spec: choice.Spec) -> choice.Scored:
        turns = t["turns"]
        if error is not None or not turns:
            return choice.Scored(None, "error", "the conversation ended in an error")
        return choice.score(turns[-1], spec.labels)

    def _converse(self, item: Item, max_tokens: int | None = None
                  ) -> tuple[list[JSONObject], ErrorRecord | None]:
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        replies: list[JSONObject] = []
        case = case_of(item.kind, item.slice)
        try:
            with Conversation(self.argv, self.tree_dir, env=self._env, registry=self.registry,
                              python_target=self.python_target) as conv:
                for turn, text in enumerate(item.turns):
                    msg: Turn = {"text": text, "turn": turn, "case": case,
                                 "scenario": item.id, "trial": 0}
                    if item.choice is not None and max_tokens is not None:
                        msg["choices"] = list(item.choice.labels)
                        msg["max_tokens"] = max_tokens
                    replies.append(conv.ask(msg, deadline))
        except TargetError as exc:
            return replies, exc.as_dict()
        return replies, None

    def _grade(self, item: Item, t: Transcript) -> GraderAnswer:
        return grade_item(self.graders.call, item.grader, item.id, item.row, list(item.turns), t)

    def part(self) -> Goldens:
        """The artifact's ``goldens`` part from what finished (items in plan order)."""
        items = [self.results[i] for i in sorted(self.results)]
        budget = self.plan.budget.as_dict() if self.plan.budget is not None else None
        return {"graders": dict(self.plan.graders),
                "buckets": list(self.plan.buckets) if self.plan.buckets else None,
                "budget": budget, "files": dict(self.plan.files), "items": items,
                "slices": slices(items)}
