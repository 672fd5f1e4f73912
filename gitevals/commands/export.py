"""``gitevals export [ARTIFACT|REV] --format inspect|otel``: a run for the tools around
us: an Inspect AI eval log (``inspect view``), or OpenTelemetry spans and evaluation
events (OTLP/JSON to a file, or through the OpenTelemetry SDK to an OTLP/HTTP
collector)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format

if TYPE_CHECKING:
    from gitevals.interop.otel import Signals
    from gitevals.run.artifact import Run

NAME = "export"
HELP = "write a run as an Inspect AI eval log or as OpenTelemetry spans and events"

#: Seconds an OTLP collector has to take each signal (the SDK retries within them).
POST_TIMEOUT = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", default="HEAD", metavar="ARTIFACT|REV",
                        help="a run artifact (.json), or a revision whose newest run to "
                             "export (default: HEAD)")
    add_format(parser, ("inspect", "otel"), required=True,
               help="inspect: an Inspect AI .eval log; otel: OpenTelemetry spans and "
                    "gen_ai.evaluation.result events (OTLP/JSON lines, or --endpoint)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write it (default: <run_id>.eval for inspect; "
                             "standard output for otel)")
    parser.add_argument("--endpoint", metavar="URL",
                        help="otel: send them through the OpenTelemetry SDK to this OTLP/HTTP "
                             "collector (its base URL, e.g. http://127.0.0.1:4318; needs "
                             "gitevals[otel]) instead of writing them")


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

    from gitevals.interop.otel import logs, signals, traces

    sig = signals(artifact)
    if endpoint is not None:
        _send(sig, endpoint)
        print(f"sent run {artifact['run_id']} to {endpoint} through the OpenTelemetry SDK: "
              f"{len(sig.spans):,} spans, {len(sig.events):,} evaluation events")
        return 0
    # JSON lines: the spans' request, then the events' (each a whole OTLP/JSON body)
    data = b"".join(json.dumps(doc, ensure_ascii=False, sort_keys=True).encode() + b"\n"
                    for doc in (traces(sig), logs(sig)))
    if output is not None:
        _write(output, data)
        print(f"wrote {output}: run {artifact['run_id']} as OpenTelemetry spans and events "
              "(OTLP/JSON lines)")
    else:
        sys.stdout.buffer.write(data)
    return 0


def _send(sig: Signals, endpoint: str) -> None:
    """Through the SDK, the ``otel`` extra: one line naming it when it is missing."""
    from gitevals.errors import UsageError

    try:
        from gitevals.interop.otelsdk import send_otlp
    except ImportError as exc:
        raise UsageError(f"--endpoint sends through the OpenTelemetry SDK, which is not "
                         f"installed here (no module {exc.name or exc}): "
                         "pip install 'gitevals[otel]'") from None
    send_otlp(sig, endpoint, POST_TIMEOUT)


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
