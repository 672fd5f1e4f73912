"""A run as an Inspect AI eval log (``.eval``), so a team can open gitevals runs in
``inspect view`` and read them with ``inspect_ai.log.read_eval_log``.

The ``.eval`` file is the zip archive Inspect itself writes (``inspect_ai.log``, log
format version 2): ``header.json`` (the ``EvalLog`` without its samples), one
``samples/<id>_epoch_<n>.json`` per sample, ``summaries.json`` (what the viewer lists)
and ``_journal/start.json``. The mapping:

- the run is one eval: task ``gitevals/<root>``, ``run_id`` and ``task_id`` the run's
  id, the commit as the git revision, ``epochs`` the most trials of a scenario;
- a scenario is a sample (id ``case/scenario``) and its trial *i* the sample's epoch
  *i + 1*; the user turns are its input, the conversation (tool calls and results
  included) its messages, the assertions its ``target``;
- the trial's verdict is the score ``gitevals`` (1 passed, 0 failed; the answer and the
  first failing assertion as explanation), every assertion a score of its own, and an
  infrastructure error the sample's ``error``; token usage is ``model_usage``.

Pure: a run in, bytes out (deterministic for the same run: fixed member times).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator

from gitevals.jsontypes import JSON, JSONObject
from gitevals.run.artifact import CaseRun, Run, ScenarioRun, Trial, scenarios

#: Inspect's log format version this writes.
VERSION = 2
#: The score every sample carries (the trial's verdict).
SCORER = "gitevals"
_STAMP = (2026, 1, 1, 0, 0, 0)


def eval_log(run: Run) -> bytes:
    """The ``.eval`` archive of ``run`` (a full run: transcripts included)."""
    samples = [_sample(run, c, s, t) for c, s in scenarios(run) for t in s["results"]]
    header = _header(run, samples)
    members: dict[str, JSON] = {
        "_journal/start.json": {"version": VERSION, "eval": header["eval"],
                                "plan": header["plan"]},
        "header.json": header,
        "summaries.json": [_summary(s) for s in samples],
    }
    for sample in samples:
        members[f"samples/{sample['id']}_epoch_{sample['epoch']}.json"] = sample
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, _STAMP),
                             json.dumps(data, ensure_ascii=False, sort_keys=True),
                             zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _header(run: Run, samples: list[JSONObject]) -> JSONObject:
    ids = sorted({str(s["id"]) for s in samples})
    passed = sum(1 for s in samples if _verdict(s) == 1)
    epochs = max((int(str(s["epoch"])) for s in samples), default=1)
    usage = _usage_total(samples)
    spec: JSONObject = {
        "created": run["started_at"], "task": f"gitevals/{run['root']}",
        "task_id": run["run_id"], "run_id": run["run_id"], "task_version": 0,
        "model": _model(samples), "model_args": {}, "task_args": {}, "solver_args": {},
        "dataset": {"name": run["root"], "samples": len(ids), "sample_ids": list(ids),
                    "shuffled": False},
        "config": {"epochs": epochs},
        "revision": {"type": "git", "origin": "", "commit": run["commit"],
                     "dirty": run["dirty"]},
        "packages": {"gitevals": run["tool_version"]},
        "metadata": {"gitevals": {"run_id": run["run_id"], "rev": run["rev"],
                                  "commit": run["commit"], "tree": run["tree"]}},
    }
    return {
        "version": VERSION, "status": "cancelled" if run["interrupted"] else "success",
        "eval": spec, "plan": {"name": "plan", "steps": [], "config": {}},
        "results": {"total_samples": len(samples), "completed_samples": len(samples),
                    "scores": [{"name": SCORER, "scorer": SCORER, "reducer": "mean",
                                "params": {}, "metrics": {"accuracy": {
                                    "name": "accuracy",
                                    "value": passed / len(samples) if samples else 0.0,
                                    "params": {}}}}]},
        "stats": {"started_at": run["started_at"], "completed_at": run["finished_at"],
                  "model_usage": usage},
    }


def _sample(run: Run, case: CaseRun, scenario: ScenarioRun, trial: Trial) -> JSONObject:
    sid = f"{case['name']}/{scenario['id']}"
    transcript = trial["transcript"]
    scores: JSONObject = {SCORER: _verdict_score(trial)}
    for outcome in trial["assertions"]:
        scores[f"{outcome['index']}:{outcome['kind']}"] = {
            "value": 1.0 if outcome["passed"] else 0.0, "explanation": outcome["message"]}
    sample: JSONObject = {
        "id": sid, "epoch": trial["trial"] + 1, "input": _input(scenario["user"]),
        "target": [_expectation(e) for e in scenario["expect"]],
        "messages": list(_messages(sid, scenario["user"], trial)), "scores": scores,
        "metadata": {"case": case["name"], "scenario": scenario["id"],
                     "trial": trial["trial"], "path": case["path"]},
        "model_usage": _usage(transcript["turns"]),
        "total_time": transcript["duration_ms"] / 1000,
    }
    if trial["error"] is not None:
        message = f"{trial['error']['kind']}: {trial['error']['message']}"
        sample["error"] = {"message": message, "traceback": "", "traceback_ansi": ""}
    return sample


def _input(user: list[str]) -> JSON:
    if len(user) == 1:
        return user[0]
    return [{"role": "user", "content": text} for text in user]


def _expectation(expect: JSONObject) -> str:
    return json.dumps(expect, ensure_ascii=False, sort_keys=True)


def _verdict_score(trial: Trial) -> JSONObject:
    """The trial's verdict; its explanation the first counted assertion that failed, else
    the infrastructure error."""
    score: JSONObject = {"value": 1.0 if trial["passed"] else 0.0,
                         "answer": trial["transcript"]["final_answer"]}
    failing = [a["message"] for a in trial["assertions"]
               if not a["passed"] and not a.get("advisory")]
    error = trial["error"]
    if failing:
        score["explanation"] = failing[0]
    elif error is not None:
        score["explanation"] = f"{error['kind']}: {error['message']}"
    return score


def _verdict(sample: JSONObject) -> float | None:
    scores = sample.get("scores")
    score = scores.get(SCORER) if isinstance(scores, dict) else None
    value = score.get("value") if isinstance(score, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _message_id(sid: str, trial: int, n: int) -> str:
    """A stable id per message (Inspect wants one; the same run gives the same ids)."""
    return hashlib.sha256(f"{sid}#{trial}#{n}".encode()).hexdigest()[:22]


def _calls(reply: JSONObject) -> list[JSONObject]:
    calls = reply.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)


def _messages(sid: str, user: list[str], trial: Trial) -> Iterator[JSONObject]:
    """The conversation as Inspect's chat messages: each user turn, the reply with its
    tool calls, then a ``tool`` message for each call that has a result."""
    out: list[JSONObject] = []
    for i, reply in enumerate(trial["transcript"]["turns"]):
        if i < len(user):
            out.append({"role": "user", "content": user[i]})
        calls = _calls(reply)
        answer = reply.get("final_answer")
        message: JSONObject = {"role": "assistant",
                               "content": answer if isinstance(answer, str) else ""}
        ids = [str(c.get("id") or f"call_{i}_{k}") for k, c in enumerate(calls)]
        if calls:
            message["tool_calls"] = [
                {"id": cid, "function": str(c.get("name")), "type": "function",
                 "arguments": args if isinstance(args := c.get("args"), dict)
                 else {"args": args}} for cid, c in zip(ids, calls, strict=True)]
        out.append(message)
        out += [{"role": "tool", "tool_call_id": cid, "function": str(c.get("name")),
                 "content": _text(c["result"])}
                for cid, c in zip(ids, calls, strict=True) if "result" in c]
    for n, message in enumerate(out):
        yield {"id": _message_id(sid, trial["trial"], n), **message}


def _usage(turns: list[JSONObject]) -> JSONObject:
    """Token usage by model, from the replies that report it (``usage`` and ``model``)."""
    by_model: dict[str, list[int]] = {}
    for reply in turns:
        usage = reply.get("usage")
        if not isinstance(usage, dict):
            continue
        counts = [_count(usage, "prompt_tokens", "input_tokens"),
                  _count(usage, "completion_tokens", "output_tokens")]
        model = reply.get("model")
        into = by_model.setdefault(model if isinstance(model, str) else "target", [0, 0])
        into[0] += counts[0]
        into[1] += counts[1]
    return {m: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
            for m, (i, o) in sorted(by_model.items())}


def _count(usage: JSONObject, name: str, alias: str) -> int:
    value = usage.get(name, usage.get(alias))
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else 0


def _usage_total(samples: list[JSONObject]) -> JSONObject:
    total: dict[str, list[int]] = {}
    for sample in samples:
        usage = sample.get("model_usage")
        for model, counts in (usage.items() if isinstance(usage, dict) else ()):
            if isinstance(counts, dict):
                into = total.setdefault(model, [0, 0])
                into[0] += _count(counts, "input_tokens", "input_tokens")
                into[1] += _count(counts, "output_tokens", "output_tokens")
    return {m: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
            for m, (i, o) in sorted(total.items())}


def _model(samples: list[JSONObject]) -> str:
    """The model the run's replies name, when they name exactly one; else the target."""
    models = {m for s in samples if isinstance(u := s.get("model_usage"), dict) for m in u}
    return f"gitevals/{models.pop()}" if len(models) == 1 else "gitevals/target"


def _summary(sample: JSONObject) -> JSONObject:
    """What ``inspect view`` lists of a sample."""
    keys = ("id", "epoch", "input", "target", "scores", "model_usage", "metadata",
            "total_time")
    out: JSONObject = {k: sample[k] for k in keys if k in sample}
    error = sample.get("error")
    if isinstance(error, dict):  # a summary's error is its message only
        out["error"] = error.get("message")
    messages = sample.get("messages")
    out["message_count"] = len(messages) if isinstance(messages, list) else 0
    out["completed"] = True
    return out
