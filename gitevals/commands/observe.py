"""``gitevals observe REV --from FILE...``: what one release did across an explicit list of
recorded conversations (run artifacts or JSONL transcripts); changes nothing."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format, positive

if TYPE_CHECKING:
    from gitevals.experiment.observe import Conversation, Source

NAME = "observe"
HELP = ("report retries and recoveries per turn of one release from recorded conversations "
        "of that commit (run artifacts or JSONL transcripts); changes nothing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rev", metavar="REV", help="the release: a commit, branch or tag")
    parser.add_argument("--from", dest="files", nargs="+", action="extend", required=True,
                        metavar="FILE",
                        help="recorded conversations of REV: run artifacts (.json) or JSONL "
                             "transcripts, one target reply a line with its \"commit\"")
    parser.add_argument("--minimum-samples", type=positive, default=1, metavar="N",
                        help="fewer conversations than N need review (default 1)")
    parser.add_argument("--max", action="append", default=[], metavar="COUNTER=LIMIT",
                        help="the most of COUNTER per completed turn (repeatable; e.g. "
                             "retries=0.05); without any, retries and overflow_recoveries "
                             "are reported for human review")
    add_format(parser, ("text", "json"), "what to print on stdout (default text)")


def _read_file(path: str) -> bytes:
    import stat

    from gitevals.errors import UsageError

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path}: not a regular file; name a run artifact or a JSONL "
                             "transcript")
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _check_names(limits: Mapping[str, float], convs: Sequence[Conversation]) -> None:
    """Refuse a ``--max`` counter no turn reports when it is a near miss of one a turn
    reports or gitevals knows (``retires`` for ``retries``). Any other unreported counter
    stays what it is: missing evidence."""
    from gitevals.experiment.metrics import COUNTERS, counter
    from gitevals.experiment.observe import DEFAULT_COUNTERS

    known = {*DEFAULT_COUNTERS, *COUNTERS}
    unreported = [n for n in limits if n not in known
                  and all(counter(r, n) is None for c in convs for r in c.turns)]
    if not unreported:
        return
    from gitevals.errors import UsageError
    from gitevals.schema import closest

    names = set(known)  # and every whole number >= 0 a turn reports
    for c in convs:
        for r in c.turns:
            usage = r.get("usage")
            names |= {k for k in [*r, *(usage if isinstance(usage, dict) else ())]
                      if counter(r, k) is not None}
    for name in unreported:
        if near := closest(name, sorted(names)):
            raise UsageError(f"--max {name}: no turn reports a counter {name!r}; "
                             f"did you mean {near!r}?")


def run(args: argparse.Namespace) -> int:
    from gitevals import jsontext
    from gitevals.errors import UsageError
    from gitevals.experiment import observe
    from gitevals.git.repo import require_repo

    limits = dict(observe.parse_limit(t) for t in args.max)
    if len(limits) < len(args.max):
        raise UsageError("--max names a counter twice: give each counter one limit")
    commit = require_repo().resolve(args.rev)
    seen: set[str] = set()
    sources: list[Source] = []
    convs: list[Conversation] = []
    for path in args.files:
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{path} is named twice in --from: name each file once")
        seen.add(real)
        source, found = observe.read(path, _read_file(path), commit)
        sources.append(source)
        convs = observe.merge([*convs, *found])  # an id in two files is one conversation
        observe.check(convs)
    _check_names(limits, convs)
    doc = observe.report(args.rev, commit, sources, convs, args.minimum_samples, limits)
    text = (jsontext.dumps(doc) + "\n"
            if args.format == "json" else observe.render_text(doc))
    sys.stdout.write(text)
    sys.stdout.flush()
    return observe.exit_code(doc)
