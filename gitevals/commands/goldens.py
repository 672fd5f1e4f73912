"""``gitevals goldens stats`` and ``gitevals goldens leak-check``: the golden set as a
whole (counts, the seed's floors) and training files checked for golden rows."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format, add_rev

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO

    from gitevals.git.trees import Tree
    from gitevals.goldens.flywheel import Candidate
    from gitevals.jsontypes import JSONObject
    from gitevals.settings import Settings

NAME = "goldens"
HELP = "the golden set: counts per bucket/split/tag and floors (stats), training files " \
       "checked for golden ids and inputs (leak-check), recorded conversations as rows " \
       "(from-runs), rows by cross-product of axes (synth)"
#: Largest recording ``from-runs`` reads (a run artifact or a JSONL transcript).
MAX_RECORDING = 1 << 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="goldens_command", metavar="SUBCOMMAND", required=True,
                                parser_class=type(parser))
    stats = sub.add_parser("stats", help="items per bucket, split and tag; the seed's floors "
                           "(>= 100 items, 4-8 buckets)",
                           description="Count goldens.jsonl per bucket, split and tag, and "
                           "say which of the seed's floors are not met.")
    _tree_arguments(stats)
    stats.set_defaults(_goldens=_stats)
    leak = sub.add_parser("leak-check", help="exit 1 when a training file holds a golden "
                          "(same id, or same input once normalized)",
                          description="List every training row (file:line) that carries a "
                          "golden id or a golden's input after normalization (case, "
                          "whitespace, punctuation), holdout items included.")
    leak.add_argument("training", nargs="+", metavar="TRAIN.jsonl",
                      help="training files, one JSON object a line (streamed)")
    leak.add_argument("--field", default="input", metavar="NAME",
                      help="the training rows' field compared with each golden's input "
                           "(default: input; a chat 'messages' list compares its user turns)")
    _tree_arguments(leak)
    leak.set_defaults(_goldens=_leak_check)
    runs = sub.add_parser("from-runs", help="recorded conversations (a run, or a JSONL "
                          "transcript) as goldens rows with their provenance",
                          description="Write each conversation of RUN as a goldens row "
                          "(input: its user turns; source: where it was recorded), ids "
                          "derived from the provenance; ids retired or already in "
                          "goldens.jsonl are refused, one line each (exit 1).")
    runs.add_argument("what", metavar="RUN",
                      help="a run artifact (.json), a JSONL transcript, or a revision "
                           "whose run is kept (as `gitevals show REV` finds it)")
    runs.add_argument("--failed", action="store_true",
                      help="only the failed trials (conversations)")
    runs.add_argument("--bucket", metavar="B", help="set every row's bucket to B")
    runs.add_argument("-o", "--output", metavar="FILE",
                      help="write the rows to FILE, which must not exist (default: stdout)")
    runs.set_defaults(_goldens=_from_runs)
    synth = sub.add_parser("synth", help="one row per combination of the axes' values, made "
                           "by a generator function of the tree (which may call t.llm)",
                           description="Call the generator FILE.FUNCTION (a function of "
                           "<root>/graders/FILE.py, run as a grader is: fn(t, case, run), "
                           "case['axes'] the combination) once per combination and write "
                           "each answer as a goldens row with a deterministic id; ids "
                           "retired or already in goldens.jsonl are refused, one line each "
                           "(exit 1).")
    synth.add_argument("--axis", action="append", default=[], metavar="NAME=v1,v2",
                       help="an axis and its values (repeatable; default: the axes declared "
                            "in [tool.gitevals.goldens] axes)")
    synth.add_argument("--generator", required=True, metavar="FILE.FUNCTION",
                       help="the function of <root>/graders/FILE.py that makes a row")
    add_rev(synth, "run the generator as committed at REV (default HEAD)", default="HEAD")
    synth.add_argument("-o", "--output", metavar="FILE",
                       help="write the rows to FILE, which must not exist (default: stdout)")
    synth.set_defaults(_goldens=_synth)


def _tree_arguments(parser: argparse.ArgumentParser) -> None:
    add_rev(parser, "read goldens.jsonl as committed at REV (default: working tree)")
    add_format(parser, ("text", "json"), "text (default) or json")


def run(args: argparse.Namespace) -> int:
    code: int = args._goldens(args)
    return code


def goldens_bytes(tree: Tree) -> tuple[str, bytes]:
    """``<root>/goldens.jsonl`` of ``tree``: its path and bytes (UsageError when absent)."""
    from gitevals.errors import UsageError
    from gitevals.settings import load_settings

    root = load_settings(tree)[0].root
    path = f"{root}/goldens.jsonl" if root else "goldens.jsonl"
    data = tree.read(path)
    if data is None:
        why = "not a regular file gitevals reads" if tree.entry(path) else "no such file"
        raise UsageError(f"{path}: {why} in {tree.label}; commit one JSON object a line "
                         "(see docs/goldens.md)")
    return path, data


def _stats(args: argparse.Namespace) -> int:
    from gitevals.git.trees import open_tree
    from gitevals.goldens.stats import stats_of
    from gitevals.report.goldens import stats_json, stats_text

    tree = open_tree(rev=args.rev)
    path, data = goldens_bytes(tree)
    stats = stats_of(data)
    render = stats_json if args.format == "json" else stats_text
    sys.stdout.write(render(stats, path, tree.label))
    return 0


def _from_runs(args: argparse.Namespace) -> int:
    from gitevals.git.trees import open_tree
    from gitevals.goldens import flywheel
    from gitevals.goldens.rows import row_id, rows
    from gitevals.lint.retired import parse_retired
    from gitevals.settings import load_settings
    from gitevals.text import visible

    bucket = flywheel.bucket_name(args.bucket) if args.bucket is not None else None
    found = _conversations(args.what)
    tree = open_tree()
    root = load_settings(tree)[0].root
    g_path, r_path = (f"{root}/{n}" if root else n for n in ("goldens.jsonl",
                                                               "goldens.retired"))
    present = {row_id(row, n) for n, row in rows(tree.read(g_path) or b"")}
    retired = parse_retired(tree.read(r_path), r_path)[0]
    chosen = flywheel.select(found, args.failed, bucket, present, retired, g_path, r_path)
    text = flywheel.dumps(chosen.rows)
    if args.output is not None:
        _create(args.output, text)
    else:
        sys.stdout.write(text)
    for id_, why in chosen.refused:
        print(f"gitevals: refused id {visible(json.dumps(id_))}: {visible(why)}",
              file=sys.stderr)
    where = visible(args.output) if args.output is not None else "stdout"
    print(f"wrote {len(chosen.rows):,} rows to {where}; refused {len(chosen.refused):,}",
          file=sys.stderr)
    return 1 if chosen.refused else 0


def _synth(args: argparse.Namespace) -> int:
    from gitevals.errors import UsageError
    from gitevals.git.trees import open_tree
    from gitevals.goldens import flywheel, synth
    from gitevals.goldens.rows import row_id, rows
    from gitevals.lint.retired import parse_retired
    from gitevals.settings import load_settings
    from gitevals.text import visible

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*", args.generator):
        raise UsageError(f"--generator {args.generator!r}: write FILE.FUNCTION, a function "
                         "of <root>/graders/FILE.py")
    if args.output is not None and os.path.lexists(args.output):
        raise UsageError(f"{visible(args.output)}: already exists; name a new file (rows are "
                         "never written over an existing one)")
    rev = open_tree(rev=args.rev)
    settings, bad = load_settings(rev)
    if bad:
        raise UsageError(f"{bad[0]}; fix the settings first (`gitevals lint`)")
    given = [synth.parse_axis(a) for a in args.axis]
    axes = synth.check_axes(given or list(synth.declared(settings.raw)))
    combos = synth.combinations(axes)
    here = open_tree()
    root = settings.root
    g_path, r_path = (f"{root}/{n}" if root else n for n in ("goldens.jsonl",
                                                               "goldens.retired"))
    present = {row_id(r, n) for n, r in rows(here.read(g_path) or b"")}
    retired = parse_retired(here.read(r_path), r_path)[0]
    made, failed, refused = _generate(rev, settings, args.generator, combos, present, retired)
    for why in failed[:10]:
        print(f"gitevals: {visible(why)}", file=sys.stderr)
    if failed:
        print(f"gitevals: the generator failed on {len(failed):,} of {len(combos):,} "
              "combinations; nothing was written", file=sys.stderr)
        return 1
    text = flywheel.dumps(made)
    if args.output is not None:
        _create(args.output, text)
    else:
        sys.stdout.write(text)
    for id_, why in refused:
        print(f"gitevals: refused id {visible(json.dumps(id_))}: {visible(why)}",
              file=sys.stderr)
    where = visible(args.output) if args.output is not None else "stdout"
    print(f"wrote {len(made):,} rows to {where}; refused {len(refused):,}", file=sys.stderr)
    return 1 if refused else 0


def _generate(tree: Tree, settings: Settings, generator: str, combos: list[dict[str, str]],
              present: set[str], retired: Mapping[str, int]
              ) -> tuple[list[JSONObject], list[str], list[tuple[str, str]]]:
    """The rows the generator makes (in the committed tree, as a grader runs), the
    combinations it failed on (why), and the ids refused before it ran (present or
    retired: the generator is not called for them)."""
    from gitevals.git.trees import RevisionTree
    from gitevals.goldens import synth
    from gitevals.run.grading import GraderWorker
    from gitevals.run.judge import judge_config
    from gitevals.run.workdir import workdir

    assert isinstance(tree, RevisionTree)
    made: list[JSONObject] = []
    failed: list[str] = []
    refused: list[tuple[str, str]] = []
    with workdir("synth") as tmp:
        tree.materialize(tmp)
        worker = GraderWorker(str(tmp), settings.root, judge_config(settings.judge))
        try:
            for i, combo in enumerate(combos):
                id_ = synth.synth_id(generator, combo)
                if id_ in present or id_ in retired:
                    where = "is in goldens.jsonl" if id_ in present else "is retired"
                    refused.append((id_, f"{where} (ids are never reused)"))
                    continue
                got = worker.call(generator, {"id": id_, "axes": dict(combo)},
                                  {"generator": generator, "index": i, "of": len(combos)})
                shown = ", ".join(f"{k}={v}" for k, v in combo.items())
                error = got["error"]
                if isinstance(error, dict):
                    failed.append(f"{shown}: {error.get('message')}")
                    continue
                row, why = synth.row(generator, tree.commit, combo, got["raw"])
                if row is None:
                    failed.append(f"{shown}: generator {generator} {why}")
                else:
                    made.append(row)
        finally:
            worker.stop()
    return made, failed, refused


def _conversations(what: str) -> list[Candidate]:
    """The conversations of ``what``: a file (run artifact or JSONL), else a revision."""
    import os

    from gitevals.goldens import flywheel
    from gitevals.run.artifact import load

    if what.endswith((".json", ".jsonl")) or os.path.lexists(what):
        data = _read_recording(what)
        if flywheel.is_run(data):
            return flywheel.from_run(load(data, what))
        return flywheel.from_jsonl(what, data)
    from gitevals.commands.show import run_for_rev

    return flywheel.from_run(run_for_rev(what))


def _read_recording(path: str) -> bytes:
    """A recording's bytes when it is a regular file of at most ``MAX_RECORDING`` bytes."""
    import os
    import stat

    from gitevals.errors import UsageError
    from gitevals.text import visible

    fix = "name a run artifact (.json) or a JSONL transcript"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{visible(path)}: {exc.strerror or exc}; {fix}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{visible(path)}: not a regular file (a device, FIFO or "
                             f"directory is never read); {fix}")
        if st.st_size > MAX_RECORDING:
            raise UsageError(f"{visible(path)}: {st.st_size:,} bytes, over the limit of "
                             f"{MAX_RECORDING:,}; split it")
        os.set_blocking(fd, True)
        return f.read(MAX_RECORDING + 1)


def _create(path: str, text: str) -> None:
    """``text`` into a new file ``path``: an existing file is never overwritten."""
    from gitevals.errors import UsageError
    from gitevals.text import visible

    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise UsageError(f"{visible(path)}: already exists; name a new file (rows are "
                         "never written over an existing one)") from None
    except OSError as exc:
        raise UsageError(f"{visible(path)}: cannot write: {exc.strerror or exc}") from None


def _leak_check(args: argparse.Namespace) -> int:
    from gitevals.git.trees import open_tree
    from gitevals.goldens.leak import bounded, index_goldens
    from gitevals.report.goldens import LeakReport, leak_json, leak_text

    files = _open_all(args.training)  # every file opens before any scan
    tree = open_tree(rev=args.rev)
    path, data = goldens_bytes(tree)
    index = index_goldens(data)
    del data
    report = LeakReport(path, tree.label, index.size)
    for name, f in files:
        with f:
            lines = bounded(f)
            report.add(name, index, _shown(name, f, lines) if sys.stderr.isatty() else lines,
                       args.field)
    sys.stdout.write((leak_json if args.format == "json" else leak_text)(report))
    if sum(report.rows.values()) and not report.with_field:
        # every row lacked the field: the input comparison checked nothing
        from gitevals.text import visible

        print(f"gitevals: warning: no training row has a {visible(args.field)!r} field, so "
              "inputs were not compared (only ids were): name the field that holds the "
              "prompt with --field (a chat transcript: --field messages)", file=sys.stderr)
    return 1 if report.leaks or report.unreadable else 0


def _shown(name: str, f: BinaryIO, lines: Iterator[bytes]) -> Iterator[bytes]:
    """``f``'s lines, with how far the scan is on stderr (a terminal) every 65,536 lines."""
    import os

    from gitevals.text import visible

    total = os.fstat(f.fileno()).st_size or 1
    for n, line in enumerate(lines, 1):
        yield line
        if not n & 0xFFFF:
            sys.stderr.write(f"\rleak-check: {visible(name)} {f.tell() * 100 // total}% "
                             f"({n:,} lines)")
    sys.stderr.write("\r\x1b[K")


def _open_all(paths: list[str]) -> list[tuple[str, BinaryIO]]:
    """Each training file opened once: a file named twice (by another spelling or a
    link) is scanned once, and said so, so no leak is counted twice."""
    import os

    from gitevals.text import visible

    out: list[tuple[str, BinaryIO]] = []
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        name, f = _open_training(path)
        st = os.fstat(f.fileno())
        first = seen.setdefault((st.st_dev, st.st_ino), name)
        if first != name or any(n == name for n, _ in out):
            f.close()
            print(f"gitevals: warning: {visible(name)} is {visible(first)}, named twice: "
                  "scanned once", file=sys.stderr)
            continue
        out.append((name, f))
    return out


def _open_training(path: str) -> tuple[str, BinaryIO]:
    """``path`` opened for reading when it is a regular file: a device (``/dev/zero``), a
    FIFO or a directory would never end or never be a training file. Opened without
    blocking (a FIFO with no writer would hang the open itself), then checked."""
    import os
    import stat

    from gitevals.errors import UsageError
    from gitevals.text import visible

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{visible(path)}: {exc.strerror or exc}; name a training file "
                         "(JSON lines)") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{visible(path)}: not a regular file (a device, FIFO or "
                         "directory is never read); name a training file (JSON lines)")
    os.set_blocking(fd, True)
    return path, os.fdopen(fd, "rb")  # closed after its scan
