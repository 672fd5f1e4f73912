"""A real Ray cluster on 127.0.0.1 for the tests and the benchmark: a head and worker
nodes, each a ``ray start`` with its own temp dir, ports, cache and recorded pids.

Never ``ray stop``: it stops every Ray node on the machine, other people's too. A node
is stopped by killing the processes recorded for it (those that name its temp dir,
and everything beneath them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import DATA, PROJECT

SRC = PROJECT
LAUNCHER = DATA / "ray_node.py"
#: A dead node is noticed within about 2 s (Ray's defaults take 15-30 s).
HEALTH = {"RAY_health_check_initial_delay_ms": "1000", "RAY_health_check_period_ms": "500",
          "RAY_health_check_timeout_ms": "500", "RAY_health_check_failure_threshold": "3"}
#: What a driver (the gitevals CLI) needs to join this cluster on the loopback address:
#: Ray would otherwise swap 127.0.0.1 for the machine's outward address.
DRIVER_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    name: str
    temp: Path
    cache: Path
    killed: bool = False


@dataclass
class LocalCluster:
    root: Path
    port: int = field(default_factory=free_port)
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _env(self, node: Node) -> dict[str, str]:
        path = os.environ.get("PYTHONPATH")
        return {**os.environ, **HEALTH, "PYTHONPATH": f"{SRC}{os.pathsep}{path}" if path else
                str(SRC), "XDG_CACHE_HOME": str(node.cache), "RAY_USAGE_STATS_ENABLED": "0",
                # each node's work copies in a tmp of its own: a target's cwd names its node
                "TMPDIR": str(node.cache / "tmp"),
                # as the tests' own environment: no container engine, so a task's
                # Dockerfile is not built on a node (this machine may have podman)
                "GITEVALS_CONTAINER_ENGINE": ""}

    def _start(self, name: str, args: list[str]) -> Node:
        node = Node(name, Path(tempfile.mkdtemp(prefix=f"ge-ray-{name}-")),
                    self.root / f"cache-{name}")
        (node.cache / "tmp").mkdir(parents=True, exist_ok=True)
        common = [f"--temp-dir={node.temp}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                  "--object-store-memory=100000000", "--disable-usage-stats",
                  f"--dashboard-agent-listen-port={free_port()}",
                  f"--metrics-export-port={free_port()}",
                  # Ports given, the raylet does not wait for the agents to write theirs:
                  # Ray gives them a fixed 15 s, and a loaded machine's agent (a Python
                  # that imports Ray) overruns it and takes the node down.
                  f"--dashboard-agent-grpc-port={free_port()}",
                  f"--runtime-env-agent-port={free_port()}"]
        self.nodes.append(node)  # recorded before it starts: a failed start is cleaned too
        proc = subprocess.run([sys.executable, str(LAUNCHER), "start", *args, *common],
                              env=self._env(node), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start {name} failed: {proc.stdout[-2000:]}"
                               f"{proc.stderr[-2000:]}")
        return node

    def start(self, workers: int = 1) -> LocalCluster:
        try:
            self._head()
        except RuntimeError:
            # On a loaded machine the head's raylet can miss Ray's start-up deadline
            # ("The current node timed out during startup"): clean it up, try once more.
            failed = self.nodes.pop()
            self.kill(failed)
            shutil.rmtree(failed.temp, ignore_errors=True)
            self.port = free_port()
            self._head()
        for _ in range(workers):
            self.add_worker()
        return self

    def _head(self) -> Node:
        # no autoscaler monitor: these clusters never scale (a Python process of Ray the less)
        return self._start("head", ["--head", f"--port={self.port}", "--include-dashboard=false",
                                    "--no-monitor",
                                    f"--dashboard-port={free_port()}"])

    def add_worker(self) -> Node:
        # No log monitor on a worker node (a Python process of Ray polling log files): the
        # driver never takes workers' logs (log_to_driver=False). The head keeps its own,
        # so a line its host prints would still reach a driver that asked for logs.
        return self._start(f"w{len(self.nodes)}", [f"--address={self.address}",
                                                   "--include-log-monitor=false"])

    def pids(self, node: Node) -> set[int]:
        """The node's processes: those naming its temp dir, and all beneath them."""
        parents: dict[int, int] = {}
        mine: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            pid = int(entry.name)
            parents[pid] = int(stat.rpartition(")")[2].split()[1])
            if str(node.temp).encode() in cmd and stat.rpartition(")")[2].split()[0] != "Z":
                mine.add(pid)
        grew = True
        while grew:
            more = {p for p, pp in parents.items() if pp in mine and p not in mine}
            mine |= more
            grew = bool(more)
        return mine

    def kill(self, node: Node) -> None:
        """The node dies at once, as a machine does: every process of it is stopped
        first (again for any it started meanwhile), then killed. Killed one by one while
        the others ran, a target could die before its conversation's actor, which then
        reported a crash of the target instead of going with its node."""
        stopped: set[int] = set()
        while more := self.pids(node) - stopped:
            for pid in more:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            stopped |= more
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.killed = True

    def alive(self, node: Node) -> bool:
        return bool(self.pids(node))

    def stop(self) -> None:
        for node in reversed(self.nodes):
            self.kill(node)
        deadline = time.monotonic() + 10
        while any(self.alive(n) for n in self.nodes) and time.monotonic() < deadline:
            time.sleep(0.2)
        for node in self.nodes:
            shutil.rmtree(node.temp, ignore_errors=True)


@dataclass(frozen=True)
class SizedProbe:
    """A conversation job with resource hints (as a task trial's ``cpus``/``memory_mb``
    will be): says what Ray gave it and where it ran. Importable on the nodes."""

    cpus: float
    memory_mb: int

    @property
    def resources(self) -> object:
        from gitevals.run.executors import Resources

        return Resources(self.cpus, self.memory_mb)

    def __call__(self, ctx: object) -> dict[str, object]:
        import ray

        tree = Path(ctx.tree_dir)  # type: ignore[attr-defined]
        return {"assigned": ray.get_runtime_context().get_assigned_resources(),
                "harness": (tree / "harness.py").is_file()}
