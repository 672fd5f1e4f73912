"""Ray's own ``ray start`` command, keeping a loopback address a loopback address.

Ray swaps 127.0.0.1 for the machine's outward address (so that other machines could
reach the node). The tests' clusters must stay on the loopback interface: this runs the
same command with that one swap turned off.
"""

import sys

import ray._private.services as services

_resolve = services.resolve_ip_for_localhost


def _keep_loopback(host):
    return host if host in ("127.0.0.1", "localhost") else _resolve(host)


services.resolve_ip_for_localhost = _keep_loopback

from ray.scripts.scripts import main  # noqa: E402

sys.argv[0] = "ray"
sys.exit(main())
