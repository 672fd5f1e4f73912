"""Observing one release: recorded conversations of one commit, read and summarized (pure).

The input is an explicit list of files: run artifacts, or JSONL transcripts a harness
logs in production (one target reply a line, each carrying the ``commit`` it ran as,
optionally a ``conversation`` id; a file without ids is one conversation). Every
conversation must prove the requested commit and hold a completed turn (a reply
without an error); anything else is refused with its file and line. Counters a turn
does not carry are *missing evidence*, never zero. Nothing is written or changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from gitevals.errors import GitevalsError
from gitevals.experiment.metrics import counter
from gitevals.jsontypes import JSONObject

FORMAT = "gitevals-observe/1"
MAX_CONVERSATIONS = 500
MAX_TURNS = 10_000
#: Counters read from every completed turn when no ``--max`` names others.
DEFAULT_COUNTERS = ("retries", "overflow_recoveries")
_METRIC = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class Refused(GitevalsError):
    """A recorded conversation that cannot be evidence for the release: ``file:line:col``."""


@dataclass
class Conversation:
    """One recorded conversation: where it was read and its replies, in order."""

    source: str
    key: str
    line: int                      # where it starts
    turns: list[JSONObject] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """One file read: its kind, what it held and the last line read."""

    path: str
    kind: str                      # "run" or "jsonl"
    conversations: int
    turns: int
    lines: int


class Metric(TypedDict):
    """One counter over the completed turns: how many carried it, its total and rate, and
    its status against the limit (None: no ``--max`` for it)."""

    turns: int
    observed: int
    missing: int
    total: int | None
    per_turn: float | None
    limit: float | None
    status: str


class SourceRow(TypedDict):
    """A ``Source`` as the report lists it."""

    path: str
    kind: str
    conversations: int
    turns: int
    lines: int


class Observation(TypedDict):
    """The ``--format json`` document of ``observe`` (``report``)."""

    format: str
    rev: str
    commit: str
    minimum_samples: int
    conversations: int
    turns: int
    completed_turns: int
    sources: list[SourceRow]
    metrics: dict[str, Metric]
    last_seen: dict[str, dict[str, int | None]]
    status: str


def parse_limit(text: str) -> tuple[str, float]:
    """``retries=0.05`` -> ``("retries", 0.05)``: a counter's most per completed turn."""
    import math

    from gitevals.errors import UsageError

    name, sep, value = text.partition("=")
    try:
        limit = float(value)
    except ValueError:
        limit = math.nan
    if not sep or not _METRIC.match(name) or not math.isfinite(limit) or limit < 0:
        raise UsageError(f"--max {text!r}: expected COUNTER=LIMIT, e.g. --max retries=0.05 "
                         "(a counter name in lower case, a number >= 0 per completed turn)")
    return name, limit


# -- reading ------------------------------------------------------------------------


def _refuse(path: str, line: int, col: int, what: str) -> Refused:
    return Refused(f"{path}:{line}:{col}: {what}")


def read_run(path: str, data: bytes, commit: str) -> tuple[Source, list[Conversation]]:
    """The conversations of a run artifact: per case, trial ``t`` through its scenarios."""
    from gitevals.run.artifact import load, scenarios

    run = load(data, path)
    if run["commit"] != commit:
        line = _key_line(data, b'\n "commit": ')
        raise _refuse(path, line, 2, f"this run is of commit {run['commit'][:12]}, not "
                      f"{commit[:12]}; name only recorded conversations of that commit")
    convs: dict[tuple[str, int], Conversation] = {}
    for case, s in scenarios(run):
        for trial in s["results"]:
            key = (case["name"], trial["trial"])
            conv = convs.setdefault(key, Conversation(
                path, f"run {run['run_id']}: {key[0]}#{key[1]}", 1))
            conv.turns += [r for r in trial["transcript"]["turns"] if isinstance(r, dict)]
    out = list(convs.values())
    lines = data.count(b"\n")
    return Source(path, "run", len(out), sum(len(c.turns) for c in out), lines), out


def _key_line(data: bytes, key: bytes) -> int:
    at = data.find(key)
    return 1 if at < 0 else data.count(b"\n", 0, at) + 2


def read_jsonl(path: str, data: bytes, commit: str) -> tuple[Source, list[Conversation]]:
    """The conversations of a JSONL transcript; every line must carry ``commit``."""
    convs: dict[str, Conversation] = {}
    number = 0
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        reply = _reply(path, number, raw)
        _prove(path, number, reply, commit)
        key = reply.get("conversation")
        if key is not None and not isinstance(key, (str, int)):
            raise _refuse(path, number, 1, "\"conversation\" must be a string or a number")
        name = "" if key is None else str(key)
        # a file without ids is one conversation, named by the file
        conv = convs.setdefault(name, Conversation(path, name or f"file {path}", number))
        if len(conv.turns) == MAX_TURNS:
            raise _refuse(path, number, 1, f"conversation {conv.key!r} has more than "
                          f"{MAX_TURNS:,} turns; split it, or name fewer of its turns")
        conv.turns.append(reply)
    out = list(convs.values())
    return Source(path, "jsonl", len(out), sum(len(c.turns) for c in out), number), out


def _reply(path: str, number: int, raw: bytes) -> JSONObject:
    from gitevals.run.targets import TargetError, parse_reply

    try:
        reply: JSONObject = parse_reply(raw)
    except TargetError as exc:
        raise _refuse(path, number, 1, f"not a target reply: {exc.message}; each line is "
                      "one reply in the target-reply format "
                      "(schemas/target-reply.schema.json) with its \"commit\"") from None
    return reply


def _prove(path: str, number: int, reply: JSONObject, commit: str) -> None:
    ran = reply.get("commit")
    if not isinstance(ran, str):
        raise _refuse(path, number, 1, "the line carries no \"commit\": each reply must name "
                      "the full commit SHA it ran as")
    if ran != commit:
        raise _refuse(path, number, 1, f"this reply ran as commit {ran[:40]!r}, not "
                      f"{commit}; name only recorded conversations of that commit")


def read(path: str, data: bytes, commit: str) -> tuple[Source, list[Conversation]]:
    """A run artifact (one JSON object with a ``format``) or a JSONL transcript."""
    import json

    try:
        whole = json.loads(data) if data.lstrip()[:1] == b"{" else None
    except (ValueError, RecursionError):
        whole = None  # several lines of JSON (or a broken one): read as JSONL, by line
    if isinstance(whole, dict) and "format" in whole:
        return read_run(path, data, commit)
    return read_jsonl(path, data, commit)


#: The fields a reply may number itself by: the same number seen twice in one
#: conversation is the same reply, read again from another file.
ORDER_FIELDS = ("turn", "sequence")


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _position(reply: JSONObject) -> tuple[int | None, int | None] | None:
    """``(turn, sequence)`` when the reply numbers itself by either; else None."""
    at = (_number(reply.get("turn")), _number(reply.get("sequence")))
    return None if at == (None, None) else at


def merge(convs: Sequence[Conversation]) -> list[Conversation]:
    """One ``Conversation`` per id however many files hold it: the turns of every file in
    the order read, a reply numbered by ``turn``/``sequence`` counted once (a log rotated
    into two files, or copied into an archive, is one conversation, not two)."""
    out: dict[str, Conversation] = {}
    for c in convs:
        into = out.setdefault(c.key, Conversation(c.source, c.key, c.line))
        seen = {p for p in map(_position, into.turns) if p is not None}
        for reply in c.turns:
            at = _position(reply)
            if at is None or at not in seen:
                into.turns.append(reply)
                if at is not None:
                    seen.add(at)
    return list(out.values())


def last_seen(convs: Sequence[Conversation]) -> dict[str, dict[str, int | None]]:
    """Per conversation, the last ``turn`` and ``sequence`` a reply carried (None: none did)."""
    out: dict[str, dict[str, int | None]] = {}
    for c in convs:
        ends: dict[str, int | None] = {}
        for f in ORDER_FIELDS:
            values = [v for r in c.turns if (v := _number(r.get(f))) is not None]
            ends[f] = max(values) if values else None
        out[c.key] = ends
    return dict(sorted(out.items()))


def check(convs: Sequence[Conversation]) -> None:
    """At most ``MAX_CONVERSATIONS``, and each with a completed turn."""
    from gitevals.errors import UsageError

    if len(convs) > MAX_CONVERSATIONS:
        raise UsageError(f"{len(convs):,} conversations named, over the limit of "
                         f"{MAX_CONVERSATIONS}: observe an explicit sample of at most "
                         f"{MAX_CONVERSATIONS}")
    for c in convs:
        if not any(_completed(r) for r in c.turns):
            raise _refuse(c.source, c.line, 1, f"conversation {c.key!r} holds no completed "
                          "turn (every reply reports an error, or there is none); leave it "
                          "out of --from")


def _completed(reply: JSONObject) -> bool:
    return reply.get("error") is None


# -- the report -----------------------------------------------------------------------


def _metric(convs: Sequence[Conversation], name: str, limit: float | None) -> Metric:
    values = [counter(r, name) for c in convs for r in c.turns if _completed(r)]
    seen = [v for v in values if v is not None]
    missing = len(values) - len(seen)
    per_turn = sum(seen) / len(seen) if seen else None
    if missing:
        status = "missing evidence"
    elif limit is None:
        status = "complete"
    else:
        status = "within" if per_turn is not None and per_turn <= limit else "needs review"
    return {"turns": len(values), "observed": len(seen), "missing": missing,
            "total": sum(seen) if seen else None, "per_turn": per_turn, "limit": limit,
            "status": status}


def _status(n: int, minimum: int, metrics: Mapping[str, Metric],
            limited: bool) -> str:
    if n < minimum:
        return "too few samples"
    states = {m["status"] for m in metrics.values()}
    if "missing evidence" in states:
        return "missing evidence"
    if not limited:
        return "ready for human review"
    return "needs review" if "needs review" in states else "within limits"


def report(rev: str, commit: str, sources: Sequence[Source], convs: Sequence[Conversation],
           minimum: int, limits: Mapping[str, float]) -> Observation:
    """The observation of one release: counts, each counter per completed turn, a status."""
    names = sorted(limits) if limits else list(DEFAULT_COUNTERS)
    metrics = {n: _metric(convs, n, limits.get(n)) for n in names}
    completed = sum(1 for c in convs for r in c.turns if _completed(r))
    return {"format": FORMAT, "rev": rev, "commit": commit, "minimum_samples": minimum,
            "conversations": len(convs), "turns": sum(len(c.turns) for c in convs),
            "completed_turns": completed,
            "sources": [{"path": s.path, "kind": s.kind, "conversations": s.conversations,
              "turns": s.turns, "lines": s.lines} for s in sources],
            "metrics": metrics, "last_seen": last_seen(convs),
            "status": _status(len(convs), minimum, metrics, bool(limits))}


def exit_code(doc: Observation) -> int:
    return 0 if doc["status"] in ("ready for human review", "within limits") else 1


def render_text(doc: Observation) -> str:
    """The observation as plain text (file names escaped)."""
    from gitevals.text import visible

    out = [f"observe {visible(doc['rev'])} ({doc['commit'][:12]}): {doc['conversations']} "
           f"conversations, {doc['turns']:,} turns ({doc['completed_turns']:,} completed) "
           f"from {len(doc['sources'])} file{'s' * (len(doc['sources']) != 1)}"]
    for name, m in doc["metrics"].items():
        rate = "unknown" if m["per_turn"] is None else f"{m['per_turn']:.4g} per turn"
        limit = "" if m["limit"] is None else f" (limit {m['limit']:g})"
        miss = f", missing on {m['missing']} of {m['turns']} turns" if m["missing"] else ""
        out.append(f"  {name}: {rate}{limit}{miss}: {m['status']}")
    if doc["conversations"] < doc["minimum_samples"]:
        out.append(f"  fewer conversations than --minimum-samples {doc['minimum_samples']}")
    out.append(doc["status"])
    return "\n".join(out) + "\n"
