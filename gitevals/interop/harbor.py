"""A Harbor job's trial results -> a gitevals run of its tasks (``gitevals import harbor``).

Harbor writes one directory per trial under its job directory, each with ``result.json``
(its ``TrialResult``: ``task_name``, ``trial_name``, ``verifier_result.rewards``,
``exception_info``, ``started_at``/``finished_at``) and the verifier's ``reward.txt`` or
``reward.json`` under ``verifier/``. Each Harbor task becomes a task of the run with one
trial per Harbor trial, judged by the pass threshold as a task directory's trials are,
so ``diff``, ``show`` and ``report`` read it as any run.

The job directory is data from elsewhere: only regular files are read (never through a
symlink), each of bounded size; what does not parse is refused in one line naming the
file. Reading is IO; ``build`` is pure.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import UsageError

if TYPE_CHECKING:
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.artifact import CaseRun, ErrorRecord, Iteration, Run, Trial

#: The largest ``result.json`` read (Harbor's are a few KiB; agent logs live elsewhere).
MAX_RESULT_BYTES = 4 * 1024 * 1024
#: The largest reward file read.
MAX_REWARD_BYTES = 64 * 1024
#: Trial directories a job may have at most.
MAX_TRIALS = 100_000
#: A task name as a run can hold it (it names a case).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


@dataclass(frozen=True)
class HarborTrial:
    """One trial as Harbor recorded it."""

    task: str
    trial: str
    rewards: dict[str, float]
    reward_file: str              # "reward_text" | "reward_json"
    error: ErrorRecord | None
    started: float | None         # seconds since the epoch
    finished: float | None


def _refuse(path: Path, what: str) -> UsageError:
    return UsageError(f"{path}: not a Harbor trial result: {what}; give the job directory "
                      "Harbor wrote (one directory per trial, each with result.json)")


def _read_regular(path: Path, most: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (not a symlink) of at most
    ``most`` bytes; None when it is absent; refused otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "not a regular file")
    if st.st_size > most:
        raise _refuse(path, f"larger than {most:,} bytes")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        data = f.read(most + 1)
    if len(data) > most:
        raise _refuse(path, f"larger than {most:,} bytes")
    return data


def _reward(value: JSON, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(float(value)) or not 0 <= float(value) <= 1:
        raise _refuse(path, f"reward {key!r} is {json.dumps(value)[:40]}, not a number "
                            "from 0 to 1")
    return float(value)


def _rewards(value: JSON, path: Path) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise _refuse(path, "rewards are not an object of named numbers")
    if len(value) > 100:
        raise _refuse(path, "more than 100 rewards")
    return {str(k): _reward(v, path, str(k)) for k, v in sorted(value.items())}


def _when(value: JSON) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _error(value: JSON) -> ErrorRecord | None:
    if not isinstance(value, dict):
        return None
    kind, message = value.get("exception_type"), value.get("exception_message")
    return {"kind": "harbor_exception",
            "message": f"{kind if isinstance(kind, str) else 'exception'}: "
                       f"{message if isinstance(message, str) else ''}"[:2000]}


def _reward_file(verifier: Path) -> tuple[dict[str, float], str] | None:
    """Rewards from ``verifier/reward.json`` (named) or ``verifier/reward.txt`` (one)."""
    data = _read_regular(verifier / "reward.json", MAX_REWARD_BYTES)
    if data is not None:
        try:
            doc: JSON = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise _refuse(verifier / "reward.json", "not JSON") from None
        return _rewards(doc, verifier / "reward.json"), "reward_json"
    data = _read_regular(verifier / "reward.txt", MAX_REWARD_BYTES)
    if data is None:
        return None
    try:
        number = float(data.decode("utf-8").strip())
    except (ValueError, UnicodeDecodeError):
        raise _refuse(verifier / "reward.txt", "not a number") from None
    return {"reward": _reward(number, verifier / "reward.txt", "reward")}, "reward_text"


def read_trial(directory: Path) -> HarborTrial | None:
    """The trial in ``directory``, or None when it has no ``result.json`` (unfinished)."""
    path = directory / "result.json"
    data = _read_regular(path, MAX_RESULT_BYTES)
    if data is None:
        return None
    try:
        doc: JSON = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _refuse(path, "not JSON") from None
    if not isinstance(doc, dict):
        raise _refuse(path, "not a JSON object")
    task, trial = doc.get("task_name"), doc.get("trial_name")
    if not isinstance(task, str) or not _NAME.match(task):
        raise _refuse(path, "task_name is missing or not a plain name")
    verifier = doc.get("verifier_result")
    found = verifier.get("rewards") if isinstance(verifier, dict) else None
    rewards, fmt = ((_rewards(found, path), "reward_json") if found is not None
                    else _reward_file(directory / "verifier") or ({}, "reward_json"))
    return HarborTrial(task, trial if isinstance(trial, str) else directory.name, rewards, fmt,
                       _error(doc.get("exception_info")), _when(doc.get("started_at")),
                       _when(doc.get("finished_at")))


def read_job(job: Path) -> tuple[list[HarborTrial], int]:
    """Every finished trial of the job (by trial name), and how many trial directories
    had no ``result.json`` yet."""
    try:
        st = os.lstat(job)
    except OSError as exc:
        raise UsageError(f"{job}: {exc.strerror or exc}; name the Harbor job directory") \
            from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{job}: not a directory; name the Harbor job directory")
    trials, unfinished = [], 0
    with os.scandir(job) as entries:
        for n, entry in enumerate(entries):
            if n >= MAX_TRIALS:
                raise UsageError(f"{job}: more than {MAX_TRIALS:,} entries; import a job "
                                 "directory of Harbor trials")
            if not entry.is_dir(follow_symlinks=False):
                continue  # the job's own config.json, result.json, job.log
            one = read_trial(Path(entry.path))
            if one is None:
                unfinished += 1
            else:
                trials.append(one)
    if not trials:
        raise UsageError(f"{job}: no trial directory with a result.json; name the "
                         "directory of a Harbor job that has finished trials")
    return sorted(trials, key=lambda t: (t.task, t.started or 0.0, t.trial)), unfinished


def _trial(k: int, t: HarborTrial, threshold: float) -> Trial:
    from gitevals.run.tasks import judged
    from gitevals.tasks.verifier import deciding

    ms = max(0, int(((t.finished or 0.0) - (t.started or 0.0)) * 1000)) \
        if t.started is not None and t.finished is not None else 0
    iteration: Iteration = {
        "iteration": 0, "message": "", "rewards": dict(t.rewards),
        "reward": deciding(t.rewards), "passed": False, "verifier_exit": None,
        "verifier_tail": f"harbor trial {t.trial}", "attempts": 1,
        "error": None if t.rewards else t.error, "duration_ms": ms}
    result: Trial = {
        "trial": k, "error": t.error, "graders": [], "assertions": [], "passed": False,
        "transcript": {"final_answer": None, "tool_calls": [], "hooks": [], "error": None,
                       "turns": [], "duration_ms": ms},
        "task": {"state": "error", "final_reward": None, "sandbox": "harbor",
                 "iterations": [iteration] if t.rewards or t.error is None else []}}
    return judged(result, threshold, 1)


def _case(name: str, trials: list[HarborTrial], threshold: float) -> CaseRun:
    from gitevals.run.scoring import verdict
    from gitevals.run.tasks import DEFAULT_AGENT_TIMEOUT, SCENARIO, rule

    results = [_trial(k, t, threshold) for k, t in enumerate(trials)]
    fmt = trials[0].reward_file
    return {"name": name, "path": f"harbor:{name}", "blob": None,
            "scenarios": [{"id": SCENARIO, "user": [""], "expect": [rule(threshold, 1)],
                           "trials": len(results), "timeout": DEFAULT_AGENT_TIMEOUT,
                           "results": results,
                           "verdict": verdict(results)}],
            "task": {"instruction_file": "", "max_iterations": 1, "pass_threshold": threshold,
                     "verifier": [], "verifier_default": True, "reward_format": fmt,
                     "workdir": "", "allow_internet": False, "sandbox": "harbor",
                     "gaps": []}}


@dataclass(frozen=True)
class Pin:
    """What the imported run is pinned to: the revision as given, its commit and tree,
    the settings of that commit (root, recorded settings)."""

    rev: str
    commit: str
    tree: str
    root: str
    settings: JSONObject


def build(job_name: str, trials: list[HarborTrial], threshold: float, pin: Pin,
          now: float) -> Run:
    """The run of ``trials`` (pure): one task per Harbor task, in name order."""
    from gitevals import __version__
    from gitevals.run.artifact import FORMAT, new_run_id, utc_stamp

    by_task: dict[str, list[HarborTrial]] = {}
    for t in trials:
        by_task.setdefault(t.task, []).append(t)
    starts = [t.started for t in trials if t.started is not None]
    ends = [t.finished for t in trials if t.finished is not None]
    started, finished = (min(starts) if starts else now), (max(ends) if ends else now)
    finished = max(started, finished)
    return {
        "format": FORMAT, "run_id": new_run_id(pin.commit, started),
        "tool_version": __version__, "rev": pin.rev, "commit": pin.commit, "tree": pin.tree,
        "dirty": False, "dirty_diff": None, "root": pin.root, "settings": pin.settings,
        "files": {}, "started_at": utc_stamp(started), "finished_at": utc_stamp(finished),
        "duration_ms": int((finished - started) * 1000), "interrupted": False,
        "options": {"cases": [], "trials": None, "jobs": 1},
        "cases": [_case(name, ts, threshold) for name, ts in sorted(by_task.items())],
        "imported": {"from": "harbor", "job": job_name, "trials": len(trials)},
    }
