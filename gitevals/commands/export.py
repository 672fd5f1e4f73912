"""``gitevals export [ARTIFACT|REV] --format inspect|otel``: a run for the tools around
us: an Inspect AI eval log (``inspect view``), or OpenTelemetry traces (OTLP/JSON, to a
file or an OTLP/HTTP collector)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format

if TYPE_CHECKING:
    from gitevals.run.artifact import Run

NAME = "export"
HELP = "write a run as an Inspect AI eval log or as OpenTelemetry traces (OTLP/JSON)"

#: Seconds an OTLP collector has to take the traces.
POST_TIMEOUT = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", default="HEAD", metavar="ARTIFACT|REV",
                        help="a run artifact (.json), or a revision whose newest run to "
                             "export (default: HEAD)")
    add_format(parser, ("inspect", "otel"), required=True,
               help="inspect: an Inspect AI .eval log; otel: OpenTelemetry traces in the "
                    "OTLP/JSON encoding")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write it (default: <run_id>.eval for inspect; "
                             "standard output for otel)")
    parser.add_argument("--endpoint", metavar="URL",
                        help="otel: POST the traces to this OTLP/HTTP collector "
                             "(e.g. http://127.0.0.1:4318/v1/traces) instead of writing them")


def run(args: argparse.Namespace) -> int:
    from gitevals.errors import UsageError

    if args.endpoint is not None and args.format != "otel":
        raise UsageError("--endpoint sends OpenTelemetry traces: it goes with --format otel")
    if args.endpoint is not None and args.output is not None:
        raise UsageError("--endpoint and --output each say where the traces go: give one")
    if args.endpoint is not None and not args.endpoint.startswith(("http://", "https://")):
        raise UsageError(f"--endpoint {args.endpoint!r} is not an http:// or https:// URL")
    artifact = _full(_read(args.what))
    if args.format == "inspect":
        return _inspect(artifact, args.output)
    return _otel(artifact, args.output, args.endpoint)


def _read(what: str) -> Run:
    from gitevals.commands.show import is_path, run_for_rev
    from gitevals.run.artifact import load

    return load(what) if is_path(what) else run_for_rev(what)


def _full(artifact: Run) -> Run:
    """The run with its transcripts: a summary (a note's form) is unpacked from the full
    artifact kept beside it (fetched when not here)."""
    from gitevals.run.summary import is_summary

    if not is_summary(artifact):
        return artifact
    from gitevals.git.repo import require_repo
    from gitevals.run.runstore import full_run

    return full_run(require_repo(), artifact, f"the full artifact of run {artifact['run_id']}")


def _inspect(artifact: Run, output: str | None) -> int:
    from gitevals.interop.inspect import eval_log

    path = output or f"{artifact['run_id']}.eval"
    _write(path, eval_log(artifact))
    print(f"wrote {path}: run {artifact['run_id']} as an Inspect AI eval log "
          f"(`inspect view` shows it)")
    return 0


def _otel(artifact: Run, output: str | None, endpoint: str | None) -> int:
    import json

    from gitevals.interop.otel import traces

    data = json.dumps(traces(artifact), ensure_ascii=False, sort_keys=True).encode()
    if endpoint is not None:
        _post(endpoint, data)
        print(f"sent run {artifact['run_id']} to {endpoint} as OpenTelemetry traces "
              f"({len(data):,} bytes)")
    elif output is not None:
        _write(output, data + b"\n")
        print(f"wrote {output}: run {artifact['run_id']} as OpenTelemetry traces (OTLP/JSON)")
    else:
        sys.stdout.buffer.write(data + b"\n")
    return 0


def _write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temp file renamed over it)."""
    import os
    import tempfile

    from gitevals.errors import UsageError

    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gitevals-export-")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _post(endpoint: str, data: bytes) -> None:
    """POST OTLP/JSON to a collector; anything but a 2xx answer is one line."""
    import urllib.error
    import urllib.request

    from gitevals.errors import UsageError

    request = urllib.request.Request(endpoint, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT):
            return
    except urllib.error.HTTPError as exc:
        said = exc.read(300).decode("utf-8", "replace").strip()
        raise UsageError(f"the collector at {endpoint} refused the traces: HTTP {exc.code}"
                         + (f": {said}" if said else "")) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot reach the collector at {endpoint} ({reason}): start it "
                         "or fix --endpoint") from None
