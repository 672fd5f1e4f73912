"""Where runs are kept: ``<root>/results/`` of the working tree (or the directory the
``results`` setting names) and the git note.

The note is JSONL: one run per line, in the order runs were added, so that git's own
``cat_sort_uniq`` merge (and ``gitevals notes pull``) keeps every run two machines
attached to one commit. Since notes hold summaries (``gitevals.run.summary``) a line
is a run's summary; a full run written by an older gitevals reads as before. The
older form still, one indented document, is read too.

Which run counts for a commit (``show``, ``diff``, ``gate``, ``log``...): in results/,
``artifact.preference``; in a note, ``counting``: a run is evidence only when it
validates, is pinned to the commit the note is on (commit, tree, file blobs), lies in
no future and its verdicts are what its trials give; among those, complete before
partial, clean before dirty, then the one added last to the note. No field a run
carries (``finished_at``...) decides: anyone can write those (docs/storage.md).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import ArtifactError
from gitevals.run.artifact import (
    Run,
    candidate,
    checked,
    complete,
    dumps,
    load,
    preference,
    scenarios,
)

if TYPE_CHECKING:
    from gitevals.git.repo import Repo

RESULTS_DIR = "results"
#: The ``.gitignore`` of a results directory ``save`` made where the settings moved it.
MADE_IGNORE = ("# gitevals run artifacts (the `results` setting): shared as git notes "
               "(refs/notes/gitevals), not committed.\n*\n")
#: Runs a note keeps per commit: the preferred one plus the most recent others, so a
#: commit run by every CI job for months does not grow a note without bound.
NOTE_KEEP = 10


@dataclass(frozen=True)
class Found:
    """The run of a commit and where it came from (``results`` or ``note``)."""

    run: Run
    source: str
    label: str  # for messages: the file, or the note


def default_results(root: str) -> str:
    """Where runs go when the settings do not say (``Settings.results``)."""
    return f"{root}/{RESULTS_DIR}"


def run_results(run: Run) -> str:
    """Where ``run`` is kept in the working tree: the ``results`` of the settings it ran
    with (validated when they were read, GE705), else its ``<root>/results``."""
    settings = run.get("settings")
    given = settings.get("results") if isinstance(settings, dict) else None
    return given if isinstance(given, str) and given else default_results(run["root"])


def results_dir(work_root: Path, results: str) -> Path:
    """The directory ``results`` (``Settings.results``: relative to the repository, by
    default ``<root>/results``) of the working tree."""
    return work_root / results


def save(work_root: Path, run: Run, text: str | None = None) -> Path:
    """Write ``run`` (whose ``dumps`` is ``text``, when already made) to
    ``<results>/<run_id>.json`` of the working tree, atomically (``run_results``).

    A results directory the settings moved (``results = "runs"``) is made with a
    ``.gitignore`` that ignores everything in it, itself too: runs travel as notes, never
    as commits, wherever they are kept (``gitevals init``'s ``<root>/results/.gitignore``
    is committed instead)."""
    from gitevals.files import write_atomic

    where = run_results(run)
    directory = results_dir(work_root, where)
    real, top = directory.resolve(), work_root.resolve()
    if real != top and top not in real.parents:
        # A committed symlink must not send the run (or anything) outside the repository.
        raise OSError(errno.EXDEV, f"it leads outside the repository, to {real}")
    if where != default_results(run["root"]) and not os.path.lexists(directory):
        write_atomic(directory / ".gitignore", MADE_IGNORE)
    path = directory / f"{run['run_id']}.json"
    write_atomic(path, text if text is not None else dumps(run))
    return path


def note_line(run: Run) -> str:
    """``run`` as one line of a note: compact JSON, sorted keys, ending in a newline; a
    summary with its trials packed (``summary.pack``).

    ``json.dumps`` escapes a newline inside a string, so the run never spans lines.
    """
    from gitevals.run.summary import pack

    return json.dumps(pack(run), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False) + "\n"


def parse_note(text: str, trials: bool = True) -> list[Run]:
    """The runs a note holds, in the order they were added (its lines, top to bottom);
    a line that is no run is skipped. A summary's packed trials are read back only
    with ``trials`` (``summary.unpack``): without, each scenario keeps its outcomes
    only, what verdicts and counts need (``log``, ``report``'s history, a merge).

    A note written before notes were JSONL is one indented document: read whole first.
    A run id seen twice (merged from two sides) counts once, at its first place.
    """
    from gitevals.run.summary import unpack

    whole = candidate(text) if text.lstrip().startswith("{\n") else None
    runs = [whole] if whole is not None else [
        run for line in text.split("\n") if line.strip()
        if (run := candidate(line)) is not None]
    return _once([unpack(r) for r in runs] if trials else runs)


def _once(runs: list[Run]) -> list[Run]:
    seen: set[str] = set()
    out = []
    for run in runs:
        if str(run.get("run_id")) not in seen:
            seen.add(str(run.get("run_id")))
            out.append(run)
    return out


def ranked(runs: list[Run]) -> list[Run]:
    """``runs`` (in note order) least preferred first: complete before partial, clean
    before dirty, then the later place in the note (``counts``' rule: never a field
    the run itself carries, such as ``finished_at``, which anyone can write)."""
    return sorted(_once(runs), key=lambda r: (complete(r), not r.get("dirty")))


def bounded(runs: list[Run], keep: int = NOTE_KEEP) -> list[Run]:
    """``runs`` (note order) cut to the ``keep - 1`` last added and the one that counts
    (``ranked``'s last), in note order."""
    if len(runs) <= keep:
        return runs
    best = ranked(runs)[-1]
    recent = runs[len(runs) - keep + 1:]
    return [r for r in runs if r is best or any(r is k for k in recent)]


def note_text(runs: list[Run]) -> str:
    """The note holding ``runs``, one line each in note order (the order is evidence of
    which was added last: ``ranked``)."""
    return "".join(note_line(run) for run in bounded(_once(runs)))


def note_runs(repo: Repo, commit: str, ref: str | None = None) -> list[Run]:
    """The runs in the note on ``commit`` (under ``ref``, default NOTES_REF), least
    preferred first (``ranked``)."""
    from gitevals.git.repo import NOTES_REF

    text = repo.read_note(commit, ref or NOTES_REF)
    return ranked(parse_note(text)) if text else []


def note(repo: Repo, run: Run) -> bool:
    """Add ``run`` to the note on its commit under refs/notes/gitevals: its summary as
    the last line (bounded by ``NOTE_KEEP``), the full artifact kept once by
    ``runstore``. True when the note's counting run (the one ``show`` and ``diff``
    read) is now this one.
    """
    from gitevals.git.repo import NOTES_REF
    from gitevals.run import runstore
    from gitevals.run.summary import is_summary, summarize

    if not is_summary(run):
        run = summarize(run, *runstore.put(repo, run))
    text = repo.read_note(run["commit"], NOTES_REF)
    others = [r for r in (parse_note(text, trials=False) if text else [])
              if r.get("run_id") != run["run_id"]]
    kept = [*others, run]
    repo.write_note(run["commit"], note_text(kept))
    return ranked(kept)[-1] is run


def merge_notes(ours: str | None, theirs: str | None) -> str | None:
    """Two notes on one commit (either may be missing) as one: ours' runs in their
    order, then those only theirs holds, in theirs' order; bounded. Equal texts, or a
    side with no run, stay as they are."""
    if ours == theirs or not theirs:
        return ours
    if not ours:
        return theirs
    runs = [*parse_note(ours, trials=False), *parse_note(theirs, trials=False)]
    return note_text(runs) if runs else ours


# -- evidence: a run in a note is a claim to check ----------------------------------

#: How far in the future a run's times may lie (clocks of CI machines drift).
SKEW_SECONDS = 600


@dataclass(frozen=True)
class Pins:
    """What a commit pins: its SHA, its tree, and the blob of each path asked for."""

    commit: str
    tree: str
    blob_of: Callable[[str], str | None]


def pins_of(repo: Repo, commit: str) -> Pins:
    """The pins of ``commit`` in ``repo`` (blobs looked up only when asked)."""
    from gitevals.git.trees import RevisionTree

    tree = RevisionTree(repo, commit)
    return Pins(commit, tree.tree_sha or "", tree.blob_sha)


def problem(run: Run, pins: Pins, now: float | None = None) -> str | None:
    """Why ``run``, found in the note on ``pins.commit``, is no evidence of it, or None:
    not a valid run (schema), pinned to another commit or tree, a file pin the commit
    does not hold (for a clean run), a time in the future, or a verdict its own trials
    contradict."""
    from gitevals.run.artifact import utc_stamp, validate

    bad = validate(run)
    if bad is not None:
        return bad
    if run["commit"] != pins.commit or run["tree"] != pins.tree:
        return f"pinned to commit {run['commit'][:12]} (tree {run['tree'][:12]}), not this one"
    future = utc_stamp((time.time() if now is None else now) + SKEW_SECONDS)[:19]
    if max(run["started_at"][:19], run["finished_at"][:19]) > future:
        return f"finished at {run['finished_at']}, in the future"
    if not run["dirty"]:
        from gitevals.benchcache import PIN

        files = {**run["files"], **(run["goldens"]["files"] if "goldens" in run else {})}
        # a named benchmark (``benchmark:mmlu``) is pinned by its content, outside the tree
        wrong = sorted(p for p, sha in files.items()
                       if not p.startswith(PIN) and pins.blob_of(p) != sha)
        if wrong:
            return f"pins {wrong[0]} at a blob the commit does not hold"
    return _contradicted(run)


def _contradicted(run: Run) -> str | None:
    """A verdict or slice rate the run's own trials or items do not give, or None."""
    from gitevals.run.goldens import slices
    from gitevals.run.scoring import verdict
    from gitevals.run.summary import outcomes_verdict

    for case, s in scenarios(run):
        v, packed = s["verdict"], s.get("packed")
        if packed is not None and "columns" not in packed:
            return (f"{case['name']}/{s['id']}: its packed trials are damaged or not what "
                    "its outcomes say")
        if packed is not None:
            again = outcomes_verdict(packed["outcomes"])
        else:
            given = verdict(s["results"])
            again = given["verdict"], given["passes"], given["trials"]
        if (v["verdict"], v["passes"], v["trials"]) != again:
            return (f"{case['name']}/{s['id']}: its verdict {v['verdict']} "
                    f"{v['passes']}/{v['trials']} is not what its trials give")
    part = run.get("goldens")
    if part is not None and part["slices"] != slices(part["items"]):
        return "its golden slice rates are not what its items give"
    return None


def counting(runs: list[Run], pins: Pins) -> tuple[Run | None, list[tuple[Run, str]]]:
    """The run that counts among ``runs`` (``ranked`` order): the most preferred one
    that is evidence of ``pins.commit``; and the runs refused on the way, with why."""
    refused: list[tuple[Run, str]] = []
    for run in reversed(runs):
        why = problem(run, pins)
        if why is None:
            return run, refused
        refused.append((run, why))
    return None, refused


def local_runs(work_root: Path, results: str, commit: str) -> list[tuple[Run, Path]]:
    """Runs in ``results`` (``Settings.results``) of the working tree pinned to
    ``commit``, least preferred first.

    Only files whose name carries ``commit[:12]`` are opened (run ids embed it), so a
    results dir with thousands of runs stays cheap. Unreadable files are skipped.
    """
    found = []
    tag, directory = f"-{commit[:12]}-", results_dir(work_root, results)
    try:  # names matched as text: a glob compiles a pattern per commit (log reads 200)
        names = [e.name for e in os.scandir(directory)
                 if tag in e.name and e.name.endswith(".json") and not e.name.startswith(".")]
    except OSError:
        names = []
    for path in (directory / name for name in sorted(names)):
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                continue  # a FIFO or a link named like a run: never opened (it could hang)
            run = candidate(path.read_bytes())
            mtime = path.stat().st_mtime_ns
        except OSError:
            continue
        if run is not None and run["commit"] == commit:
            found.append((preference(run, mtime), path.name, run, path))
    return [(f[2], f[3]) for f in sorted(found, key=lambda f: f[:2])]


def run_of_commit(repo: Repo | None, work_root: Path | None, results: str,
                  commit: str, trials: bool = True) -> Found | None:
    """The run to show for ``commit``: the preferred run in ``results`` (``Settings.results``)
    of the working tree,
    else the run of its git note that counts (``counting``: evidence checked, order by
    place in the note); validated, or ``ArtifactError`` when the note holds none that
    is evidence. Without ``trials`` a note's summary keeps its trials packed: its
    verdicts are checked against the outcomes, and ``results`` stay empty."""
    if work_root is not None:
        local = local_runs(work_root, results, commit)
        if local:
            run, path = local[-1]
            label = os.path.relpath(path) if path.is_absolute() else str(path)
            return Found(checked(run, label), "results", label)
    if repo is None:
        return None
    from gitevals.git.repo import NOTES_REF

    text = repo.read_note(commit)
    if not text:
        return None
    label = f"git note {NOTES_REF} on {commit[:12]}"
    runs = ranked(parse_note(text, trials))
    if not runs:
        # Lines that are no run are skipped beside runs; a note of nothing else is
        # damaged, and says how (load's one line on its first line).
        first = next(line for line in text.split("\n") if line.strip()) if text.strip() else ""
        load(first.encode(), label)
        raise ArtifactError(f"{label}: holds no gitevals run")
    found, refused = counting(runs, pins_of(repo, commit))
    if found is None:
        run, why = refused[0]
        raise ArtifactError(f"{label}: no run in it is evidence of this commit: run "
                            f"{run.get('run_id')} is refused: {why}")
    return Found(found, "note", label)
