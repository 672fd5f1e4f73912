"""The compiled definition of one task directory: what ``task compile`` prints and a run uses.

A pure value: the loader (``gitevals.tasks.load``) builds it from a tree without
executing anything; the runner and the sandbox read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gitevals.jsontypes import JSONObject

#: The Harbor convention when ``[verifier] command`` is absent.
DEFAULT_VERIFIER: tuple[str, ...] = ("bash", "/tests/test.sh")
DEFAULT_WORKDIR = "/app"
DEFAULT_MAX_ITERATIONS = 1
DEFAULT_PASS_THRESHOLD = 1.0
#: The seed's bound on an instruction; ``[tool.gitevals.tasks] max_instruction_chars`` raises it.
DEFAULT_MAX_INSTRUCTION_CHARS = 4096


@dataclass(frozen=True)
class Verifier:
    argv: tuple[str, ...]            # never a shell string
    default: bool                    # True: argv is the Harbor convention, not written in task.toml
    timeout_sec: float | None        # [verifier] timeout_sec
    env: tuple[tuple[str, str], ...]  # [verifier.env], sorted by name
    reward_format: str               # "reward_text" (reward.txt) | "reward_json" (reward.json)
    #: True: task.toml does not set reward_format ("reward_text" above is the default);
    #: Harbor's own convention then reads whichever of reward.txt / reward.json exists.
    reward_default: bool = False


@dataclass(frozen=True)
class Environment:
    image: str | None                # [environment] docker_image / image
    dockerfile: str | None           # environment/Dockerfile in full, when present
    workdir: str = DEFAULT_WORKDIR
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    allow_internet: bool = False
    build_timeout_sec: float | None = None


@dataclass(frozen=True)
class Task:
    name: str                        # the directory's name under <root>/tasks/
    path: str                        # tree path of the directory, "<root>/tasks/<name>"
    instruction: str                 # the agent's description (instruction.md, else prompt.md)
    instruction_file: str            # "instruction.md" | "prompt.md"
    max_iterations: int
    pass_threshold: float
    agent_timeout_sec: float | None  # [agent] timeout_sec
    verifier: Verifier
    environment: Environment
    version: str | None = None
    metadata: JSONObject = field(default_factory=dict)
    #: tree path -> blob sha, every file of the task
    files: dict[str, str] = field(default_factory=dict)
    declared_name: str | None = None  # task.toml's own name (top-level name, or [task] name)
    #: Dotted task.toml keys that were read and are not used by gitevals (shown by compile).
    unused: tuple[str, ...] = ()
    #: ``[agent] sandbox = true``: the target runs in a sandbox of its own
    #: (``gitevals.tasks.sandbox.agent_argv``), the workspace at ``workdir``.
    agent_sandbox: bool = False

    def gaps(self) -> list[str]:
        """What gitevals does not realize of this task's environment, in words, sorted."""
        out = []
        if self.environment.dockerfile is not None:
            out.append("image_build")
        elif self.environment.image is not None:
            out.append("image_pull")
        return out
