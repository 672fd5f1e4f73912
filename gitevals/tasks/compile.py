"""A ``Task`` -> its compiled definition: the document ``gitevals task compile`` prints.

Pure: every value comes from the ``Task``; nothing is read or run. The document says
what gitevals realizes of the task and what it does not (a seed rule: the surface
says exactly what it can run), with the Dockerfile kept in full.
"""

from __future__ import annotations

from gitevals.jsontypes import JSON, JSONObject
from gitevals.tasks.definition import DEFAULT_VERIFIER, Task

FORMAT = "gitevals-task/1"
REWARD_FILES = {"reward_text": "/logs/verifier/reward.txt",
                "reward_json": "/logs/verifier/reward.json"}
DEFAULT_NOTE = ("task.toml has no [verifier] command: gitevals runs Harbor's convention, "
                f"{' '.join(DEFAULT_VERIFIER)}")
#: What a run makes of the environment (the sandbox, ``gitevals run``), in words.
REALIZED = (
    "workspace: a fresh copy of environment/ (without its Dockerfile) per trial, at workdir",
    "tests/: read-only at /tests; /logs/verifier/ fresh and writable",
    "network: none unless allow_internet = true",
    "verifier timeout: timeout_sec of [verifier]",
    "cpus, memory_mb: per-process limits of the verifier (RLIMIT_CPU, RLIMIT_AS)",
)
#: Recorded, shown, and not enforced by a run.
NOT_ENFORCED = ("storage_mb", "build_timeout_sec")


def compile_task(task: Task) -> JSONObject:
    """The compiled definition of ``task`` as plain JSON values (keys sorted on output)."""
    v, env = task.verifier, task.environment
    return {
        "format": FORMAT,
        "name": task.name,
        "path": task.path,
        "declared_name": task.declared_name,
        "version": task.version,
        "description": task.instruction,
        "instruction_file": f"{task.path}/{task.instruction_file}",
        "max_iterations": task.max_iterations,
        "pass_threshold": task.pass_threshold,
        "timeouts": {"agent_sec": task.agent_timeout_sec, "verifier_sec": v.timeout_sec,
                     "build_sec": env.build_timeout_sec},
        "verifier": {
            "argv": list(v.argv),
            "default": v.default,
            "note": DEFAULT_NOTE if v.default else None,
            "env": dict(v.env),
            "reward_format": v.reward_format,
            "reward_file": REWARD_FILES.get(v.reward_format),
            "reward_format_default": v.reward_default,
        },
        "environment": {
            "image": env.image,
            "dockerfile": env.dockerfile,
            "workdir": env.workdir,
            "cpus": env.cpus,
            "memory_mb": env.memory_mb,
            "storage_mb": env.storage_mb,
            "allow_internet": env.allow_internet,
            "realized": list(REALIZED),
            "not_enforced": [k for k in NOT_ENFORCED if _set(env, k)],
            "gaps": [gap(task, g) for g in task.gaps()],
        },
        "metadata": task.metadata,
        "unused_keys": list(task.unused),
        "files": dict(sorted(task.files.items())),
    }


def _set(env: object, key: str) -> bool:
    return getattr(env, key, None) is not None


def gap(task: Task, kind: str) -> JSONObject:
    """One thing of the task gitevals does not realize, with what it does instead."""
    detail: JSON
    if kind == "image_build":
        detail = (f"{task.path}/environment/Dockerfile is built only where a container "
                  "engine (podman, docker) is usable (kept in full under "
                  "environment.dockerfile); without one the verifier runs on this host's "
                  "system, read-only, in the sandbox")
    elif kind == "image_pull":
        detail = (f"image {task.environment.image!r} is pulled only where a container "
                  "engine (podman, docker) is usable; without one the verifier runs on this "
                  "host's system, read-only, in the sandbox")
    else:
        detail = kind
    return {"kind": kind, "detail": detail}
