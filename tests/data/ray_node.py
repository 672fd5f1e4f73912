"""Ray's own ``ray start`` command, keeping a loopback address a loopback address.

Ray swaps 127.0.0.1 for the machine's outward address (so that other machines could
reach the node). The tests' clusters must stay on the loopback interface: this runs the
same command with that one swap turned off.

It also hands the raylet the dashboard agent's port (given as
``--dashboard-agent-listen-port``; Ray 2.60 does not pass it on): without it the raylet
waits for the agent, a Python process that imports Ray, to write the port to a file
within a fixed 15 s, which a loaded 2-core machine overruns, taking the node down.
"""

import sys

import ray._private.ray_constants as ray_constants
import ray._private.services as services

_resolve = services.resolve_ip_for_localhost


def _keep_loopback(host):
    return host if host in ("127.0.0.1", "localhost") else _resolve(host)


services.resolve_ip_for_localhost = _keep_loopback

_LISTEN = [a.partition("=")[2] for a in sys.argv if a.startswith("--dashboard-agent-listen-port=")]
_start_process = services.start_ray_process


def _start_with_agent_port(command, process_type, *args, **kwargs):
    if process_type == ray_constants.PROCESS_TYPE_RAYLET and _LISTEN:
        command = [*command, f"--dashboard_agent_listen_port={_LISTEN[0]}"]
    return _start_process(command, process_type, *args, **kwargs)


services.start_ray_process = _start_with_agent_port

from ray.scripts.scripts import main  # noqa: E402

sys.argv[0] = "ray"
sys.exit(main())
