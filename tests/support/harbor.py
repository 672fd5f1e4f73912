"""Harbor job directories as Harbor writes them, for ``gitevals import harbor``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def harbor_trial(job: Path, task: str, n: int, rewards: dict[str, Any] | None = None,
           reward_txt: str | None = None, exception: bool = False) -> Path:
    """One trial directory as Harbor writes it: result.json, verifier/ reward files."""
    d = job / f"{task}__{n:04d}abc"
    (d / "verifier").mkdir(parents=True)
    (d / "agent").mkdir()
    result: dict[str, Any] = {
        "id": f"00000000-0000-0000-0000-{n:012d}", "task_name": task,
        "trial_name": d.name, "trial_uri": d.as_uri(), "task_checksum": "abc",
        "task_id": {"path": f"tasks/{task}"}, "config": {}, "source": None,
        "agent_info": {"name": "oracle", "version": "1.0", "model_info": None},
        "agent_result": None, "exception_info": None,
        "verifier_result": {"rewards": rewards} if rewards is not None else None,
        "started_at": f"2026-11-30T10:00:{n:02d}.000000",
        "finished_at": f"2026-11-30T10:01:{n:02d}.500000"}
    if exception:
        result["exception_info"] = {"exception_type": "AgentTimeoutError",
                                    "exception_message": "agent ran past 600 s",
                                    "exception_traceback": "...",
                                    "occurred_at": "2026-11-30T10:01:00"}
    (d / "result.json").write_text(json.dumps(result))
    if reward_txt is not None:
        (d / "verifier" / "reward.txt").write_text(reward_txt)
    elif rewards is not None:
        (d / "verifier" / "reward.json").write_text(json.dumps(rewards))
    return d


def harbor_job(tmp_path: Path, name: str = "2026-11-30__10-00-00") -> Path:
    job = tmp_path / "jobs" / name
    job.mkdir(parents=True)
    (job / "config.json").write_text("{}")
    (job / "result.json").write_text('{"id": "job", "stats": {}}')  # the job's own
    return job
