"""The flywheel: recorded conversations back into goldens rows, with their provenance.

A failure seen in a run (or in production) is only worth something once it is labelled
and coded into a bucket; ``gitevals goldens from-runs`` writes each conversation as a
goldens row (``input``: its user turns; ``output``: what the target finally said;
``source``: where it was recorded) so it returns to error analysis. Ids are derived from
the provenance, never invented, so the same conversation exported twice is the same id
and is refused the second time instead of becoming a duplicate.

Two sources: a run artifact (each trial of each case scenario is one row, id
``run-<case>-<scenario>-<trial>``) and a JSONL transcript as ``gitevals observe`` reads
it, where each reply line also carries ``"conversation"`` and ``"user"`` (the user turn
it answered); each conversation is one row, id ``log-<conversation>``. Pure: bytes and
runs in, rows out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gitevals.errors import UsageError
from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import Run, scenarios

#: At most this many rows are written by one ``from-runs`` (more is refused, not cut).
MAX_ROWS = 10_000
#: Longest ``--bucket`` name.
MAX_BUCKET = 200


@dataclass(frozen=True)
class Candidate:
    """One conversation as a goldens row, and whether it failed."""

    id: str
    failed: bool
    row: JSONObject


def from_run(run: Run) -> list[Candidate]:
    """A row per trial of each case scenario of ``run``, in artifact order."""
    out: list[Candidate] = []
    for case, s in scenarios(run):
        user: JSON = list(s["user"])
        for trial in s["results"]:
            id_ = f"run-{case['name']}-{s['id']}-{trial['trial']}"
            source: JSONObject = {"run_id": run["run_id"], "commit": run["commit"],
                                  "case": case["name"], "scenario": s["id"],
                                  "trial": trial["trial"]}
            out.append(Candidate(id_, not trial["passed"], {
                "id": id_, "input": _one(user), "output": trial["transcript"]["final_answer"],
                "passed": trial["passed"], "source": source}))
    return out + _drift(run)


def _drift(run: Run) -> list[Candidate]:
    """A row per drift row the run sent (a benchmark's, the domain-adjacent slice's), id
    ``drift-<slice>-<id>``: a drift failure returns to error analysis like a case's.
    The goldens themselves are not exported: they are in the set already."""
    part = run.get("goldens")
    out: list[Candidate] = []
    for item in part["items"] if part is not None else []:
        if item["kind"] == "bucket":
            continue
        id_ = f"drift-{item['slice']}-{item['id']}"
        source: JSONObject = {"run_id": run["run_id"], "commit": run["commit"],
                              "drift": item["slice"], "file": item["path"],
                              "line": item["line"], "id": item["id"]}
        out.append(Candidate(id_, not item["passed"], {
            "id": id_, "input": item["row"].get("input"),
            "output": item["transcript"]["final_answer"], "passed": item["passed"],
            "source": source}))
    return out


def _one(turns: JSON) -> JSON:
    """One user turn as a string (a golden's usual ``input``), several as their list."""
    return turns[0] if isinstance(turns, list) and len(turns) == 1 else turns


@dataclass
class _Conv:
    line: int
    commit: JSON = None
    user: list[JSON] = field(default_factory=list)
    output: JSON = None
    failed: bool = False


def from_jsonl(path: str, data: bytes) -> list[Candidate]:
    """A row per conversation of a JSONL transcript; every line names its conversation
    and the user turn it answered (refused with ``file:line`` otherwise). A conversation
    failed when a reply reports an ``error`` or carries ``"passed": false``."""
    convs: dict[str, _Conv] = {}
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        reply = _object(path, n, raw)
        key, user = reply.get("conversation"), reply.get("user")
        if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
            raise _refuse(path, n, 'no "conversation" id (a string or an integer): each '
                          "line names the conversation it belongs to")
        if not isinstance(user, str):
            raise _refuse(path, n, 'no "user" string: each line carries the user turn the '
                          "reply answered")
        conv = convs.get(str(key))
        if conv is None:
            if len(convs) == MAX_ROWS:
                raise _refuse(path, n, f"more than {MAX_ROWS:,} conversations; export a "
                              "smaller file")
            conv = convs[str(key)] = _Conv(n)
        conv.user.append(user)
        conv.commit = reply.get("commit", conv.commit)
        conv.output = reply.get("final_answer")
        conv.failed |= reply.get("error") is not None or reply.get("passed") is False
    return [_log_row(path, key, c) for key, c in convs.items()]


def _log_row(path: str, key: str, c: _Conv) -> Candidate:
    id_ = f"log-{key}"
    source: JSONObject = {"file": path, "line": c.line, "commit": c.commit,
                          "conversation": key}
    user: JSON = c.user
    return Candidate(id_, c.failed, {"id": id_, "input": _one(user), "output": c.output,
                                      "passed": not c.failed, "source": source})


def _object(path: str, n: int, raw: bytes) -> JSONObject:
    try:
        value: JSON = json.loads(raw)
    except (ValueError, RecursionError):
        raise _refuse(path, n, "not valid JSON; each line is one reply object") from None
    if not isinstance(value, dict):
        raise _refuse(path, n, "not a JSON object; each line is one reply object")
    return value


def _refuse(path: str, line: int, what: str) -> UsageError:
    from gitevals.text import visible

    return UsageError(f"{visible(path)}:{line}:1: {what}")


def is_run(data: bytes) -> bool:
    """A run artifact is one JSON object with a ``format``; anything else is JSONL."""
    if data.lstrip()[:1] != b"{":
        return False
    try:
        whole = json.loads(data)
    except (ValueError, RecursionError):
        return False  # several lines of JSON: a transcript
    return isinstance(whole, dict) and "format" in whole


def bucket_name(text: str) -> str:
    """``--bucket``'s value when it is a usable bucket name."""
    if not text.strip() or len(text) > MAX_BUCKET or not text.isprintable():
        raise UsageError(f"--bucket {text[:40]!r}: a bucket is a printable name of 1 to "
                         f"{MAX_BUCKET} characters, e.g. --bucket refund-policy")
    return text


@dataclass(frozen=True)
class Selection:
    """The rows to write and the ids refused (id, why), in source order."""

    rows: list[JSONObject]
    refused: list[tuple[str, str]]


def select(found: list[Candidate], failed_only: bool, bucket: str | None,
           present: set[str], retired: dict[str, int], goldens: str,
           retired_path: str) -> Selection:
    """The candidates kept (``--failed``: only failed ones), with ``bucket`` set; an id
    retired or already in goldens.jsonl (or twice in the input) is refused, not written."""
    rows: list[JSONObject] = []
    refused: list[tuple[str, str]] = []
    seen: set[str] = set()
    for c in found:
        if failed_only and not c.failed:
            continue
        if c.id in retired:
            refused.append((c.id, f"retired ({retired_path} line {retired[c.id]}); ids are "
                            "never reused"))
        elif c.id in present:
            refused.append((c.id, f"already in {goldens}"))
        elif c.id in seen:
            refused.append((c.id, "named twice in the input; written once"))
        else:
            seen.add(c.id)
            rows.append({**c.row, "bucket": bucket} if bucket else dict(c.row))
    if len(rows) > MAX_ROWS:
        raise UsageError(f"{len(rows):,} rows, over the limit of {MAX_ROWS:,}: export "
                         "fewer (--failed, or a smaller run)")
    return Selection(rows, refused)


def dumps(rows: list[JSONObject]) -> str:
    """One JSON object a line, keys sorted (deterministic output for the same input)."""
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
