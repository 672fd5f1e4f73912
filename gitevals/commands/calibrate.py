"""``gitevals calibrate GRADER --labels FILE``: measure a judge grader against human labels.

TPR and TNR apart, each with its Wilson 95 % interval and counts, on the dev split (or,
with ``--final``, on the sealed test split: once per grader name and item, whatever edits
follow, so a new final needs new labelled items); the record goes to
``<root>/calibration/<file>.<function>.json``, written atomically. The grader runs as
committed at HEAD, in the same grader workers a run uses.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gitevals.commands._args import add_format, add_jobs

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from gitevals.calibration.labels import Item
    from gitevals.calibration.metrics import Measured
    from gitevals.calibration.record import Spent
    from gitevals.errors import UsageError
    from gitevals.git.repo import Repo
    from gitevals.git.trees import RevisionTree
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.run.grading import GraderPool
    from gitevals.settings import Settings

NAME = "calibrate"
HELP = "measure a judge grader's TPR and TNR on human labels (dev split, or --final: sealed test)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("grader", metavar="GRADER", help="the grader, as <file>.<function>")
    parser.add_argument("--labels", required=True, metavar="FILE.jsonl",
                        help="labelled items, one JSON object a line: id, input, output (or "
                             "run), label pass|fail; goldens rows with a label qualify")
    parser.add_argument("--final", action="store_true",
                        help="measure the sealed test split: once per grader, whatever later "
                             "edits (a new final needs new labelled test items; the record "
                             "lists those consumed)")
    add_format(parser, ("text", "json"), "what to print on stdout (default text)")
    add_jobs(parser, "grader calls in parallel (default 4)", default=4)
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip checking that the judge is keyed and answering first")


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from gitevals.calibration import metrics
    from gitevals.calibration.record import item_rows, path_of
    from gitevals.calibration.status import below_bar, status
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.report.calibration import render

    repo = require_repo()
    tree = RevisionTree(repo, "HEAD")
    settings = _settings(tree)
    blob = _grader_blob(repo, tree, settings, args.grader)
    items, unlabelled, labels_sha = _labels(args.labels)
    split = "test" if args.final else "dev"
    chosen = [i for i in items if metrics.split_of(i.id) == split]
    previous = _previous(repo, tree, settings, args.grader)
    assert settings.judge is not None  # _grader_blob refused a run without a judge
    asked = {i.id: i.content() for i in chosen} if args.final else {}
    basis = _final_basis(repo, settings, args.grader, previous, blob, asked,
                         args.labels) if args.final else previous
    if not chosen:
        from gitevals.errors import UsageError

        raise UsageError(f"{args.labels}: no item falls in the {split} split; add labelled "
                         "items (the split is decided by a hash of each id)")
    if not args.no_preflight:
        from gitevals.run.preflight import check_judge

        check_judge(settings, [args.grader])
    measured, said, answered = _measure(tree, settings, args.grader, chosen, args.jobs)
    _refuse_unpinned(answered, settings.judge.model, split)
    if not measured.tpr.of and not measured.tnr.of:
        _nothing_judged(measured, split)
    now = datetime.now(UTC).replace(microsecond=0)
    rows = item_rows({i.id: i.label for i in chosen}, said)
    labels_at = _in_repo(repo.work_root, args.labels)
    record = _record(tree, settings, args, blob, measured, now, labels_sha,
                     metrics.sizes(i.id for i in items), basis, rows, labels_at, asked)
    _note_uncommitted(tree, labels_at, labels_sha)
    kept = _write(repo, settings, args.grader, record, previous, args.final)
    verdict = status(args.grader, True, blob, settings.judge, record, None, now)
    below = below_bar(record, settings.judge)
    where = path_of(settings.root, args.grader)
    sys.stdout.write(render(record, verdict, args.format, unlabelled=unlabelled, kept=kept,
                            items=len(items), below=below, where=where))
    return 1 if below else 0


def _nothing_judged(measured: Measured, split: str) -> None:
    """Every item was an error: nothing is recorded (a --final keeps the sealed split)."""
    from gitevals.errors import GitevalsError
    from gitevals.text import visible

    first = measured.errors[0] if measured.errors else ("", "no item")
    for item_id, message in measured.errors[:20]:
        print(visible(f"  {item_id}: {message}"), file=sys.stderr)
    error = GitevalsError(f"no item of the {split} split was judged ({len(measured.errors)} "
                          f"errors, the first: {first[1]}); nothing was recorded: fix the "
                          "grader or the judge and calibrate again")
    error.exit_code = 1
    raise error


def _settings(tree: RevisionTree) -> Settings:
    from gitevals.errors import UsageError
    from gitevals.settings import load_settings

    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]}")
    return settings


def _grader_blob(repo: Repo, tree: RevisionTree, settings: Settings, name: str) -> str:
    """The blob of the grader's module at HEAD, after checking the grader can be
    calibrated: a well-formed name that resolves, committed as it is in the working
    tree, asking a configured judge."""
    from gitevals.errors import UsageError
    from gitevals.git.trees import WorkingTree
    from gitevals.graderfile import asks_judge, read, why_not

    file, dot, fn = name.partition(".")
    if not (dot and file.isidentifier() and fn.isidentifier()):
        raise UsageError(f"grader {name!r}: name it <file>.<function>, e.g. quality.tone")
    path = f"{settings.root}/graders/{file}.py"
    entry = tree.entry(path)
    source = tree.read(path) if entry is not None else None
    if entry is None or source is None:
        raise UsageError(f"{path} is not in {tree.label}: commit the grader first")
    module = read(source)
    if module.function(fn) is None:
        raise UsageError(f"{path} has no grader {fn!r}: {why_not(module, fn)}; run "
                         "`gitevals lint`")
    here = WorkingTree(repo.work_root).entry(path)
    if here is None or here.sha != entry.sha:
        raise UsageError(f"{path} has uncommitted changes: calibrate measures the committed "
                         "grader (a run uses that one); commit it, then calibrate")
    if not asks_judge(source, fn):
        raise UsageError(f"grader {name} does not call t.llm or t.judge: a deterministic "
                         "grader needs no calibration (calibration is N/A for it)")
    if settings.judge is None:
        raise UsageError("no judge configured: set [tool.gitevals.judge] base_url and model")
    return entry.sha


def _labels(path: str) -> tuple[list[Item], int, str]:
    """The labelled items of ``path``, how many rows had no label, and its sha256."""
    import hashlib

    from gitevals.calibration.labels import read_labels
    from gitevals.calibration.metrics import MIN_ITEMS
    from gitevals.errors import UsageError

    data = _read_regular(path)
    labels = read_labels(data, path)
    n = len(labels.items)
    if n < MIN_ITEMS:
        raise UsageError(f"{path}: {n} labelled item{'s' * (n != 1)}; calibration needs at "
                         f"least {MIN_ITEMS}: label {MIN_ITEMS - n} more")
    return list(labels.items), labels.unlabelled, hashlib.sha256(data).hexdigest()


#: The largest labels file read: thousands of labelled items fit many times over.
MAX_LABELS_BYTES = 256 << 20


def _read_regular(path: str) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``MAX_LABELS_BYTES``:
    a device (``/dev/zero``) or a FIFO would be read forever. Opened without blocking (a
    FIFO with no writer would hang the open), checked, then read to the bound."""
    import os
    import stat

    from gitevals.errors import UsageError
    from gitevals.text import visible

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"--labels {visible(path)}: {exc.strerror or exc}; name the labels "
                         "file") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"--labels {visible(path)}: not a regular file (a device, FIFO "
                             "or directory is never read); name the labels file")
        os.set_blocking(fd, True)
        data = f.read(MAX_LABELS_BYTES + 1)
    if len(data) > MAX_LABELS_BYTES:
        raise UsageError(f"--labels {visible(path)}: larger than {MAX_LABELS_BYTES >> 20} "
                         "MiB; split it, or label fewer items")
    return data


def _record_path(repo: Repo, settings: Settings, name: str) -> Path:
    from gitevals.calibration.record import path_of

    return repo.work_root / path_of(settings.root, name)


def _previous(repo: Repo, tree: RevisionTree, settings: Settings, name: str
              ) -> JSONObject | None:
    """The record as it stands (working tree, else HEAD), with the sealed uses of both;
    an existing record that cannot be read is refused, never overwritten."""
    from gitevals.calibration.record import parse, path_of, sealed_uses
    from gitevals.errors import UsageError

    where = _record_path(repo, settings, name)
    here = where.read_bytes() if where.is_file() else None
    committed = tree.read(path_of(settings.root, name))
    found = []
    for data, label in ((here, str(where)), (committed, f"{path_of(settings.root, name)} at HEAD")):
        if data is None:
            continue
        record, problem = parse(data)
        if record is None:
            raise UsageError(f"{label}: cannot read the calibration record ({problem}); "
                             "restore it from git or move it away (it is never overwritten)")
        found.append(record)
    if not found:
        return None
    merged = dict(found[0])
    uses = {(str(u.get("grader_blob")), str(u.get("judge_model")), str(u.get("date"))): u
            for r in found for u in sealed_uses(r)}
    merged["sealed"] = list(uses.values())
    return merged


def _final_basis(repo: Repo, settings: Settings, name: str, previous: JSONObject | None,
                 blob: str, asked: dict[str, str], labels: str) -> JSONObject | None:
    """``previous`` once ``--final`` may measure the ``asked`` test items (id -> content):
    refused when the record, or any version of it in HEAD's history, says an earlier
    final of ``name`` consumed one of them; with every use found in history added to its
    ``sealed`` list, so the new record says what was consumed even when an old version
    was removed."""
    from gitevals.calibration.record import sealed_uses

    assert settings.judge is not None
    model = settings.judge.model
    _refuse_spent(previous, blob, model, name, asked, labels)
    history = _refuse_spent_in_history(repo, settings, name, blob, model, asked, labels)
    uses: dict[tuple[str, str, str], JSONObject] = {}
    for use in sealed_uses(previous) + history:  # a sealed entry before a bare final use
        key = (str(use.get("grader_blob")), str(use.get("judge_model")), str(use.get("date")))
        uses.setdefault(key, use)
    return {**(previous or {}), "sealed": list(uses.values())} if uses else previous


def _uses(record: JSONObject | None) -> list[JSONObject]:
    """Every use of the sealed split ``record`` shows: its ``sealed`` list, and itself
    when it is a final measurement."""
    from gitevals.calibration.record import final_use, sealed_uses

    own = final_use(record)
    return sealed_uses(record) + ([own] if own is not None else [])


def _refuse_spent(previous: JSONObject | None, blob: str, model: str, name: str,
                  asked: dict[str, str], labels: str) -> None:
    """Refuse ``--final`` when the record (working tree or HEAD) says an earlier final
    of grader ``name`` consumed an item it would measure."""
    from gitevals.calibration.record import spent

    found = spent(_uses(previous), blob, model, asked)
    if found is not None:
        raise _spent_error(name, found, len(asked), labels, "")


def _spent_error(name: str, found: Spent, asked: int, labels: str, where: str
                 ) -> UsageError:
    """The one line of a refused ``--final``: which final consumed how many of the items
    asked for, where that is said, and what to do."""
    from gitevals.errors import UsageError
    from gitevals.text import visible

    use, first = found.use, found.items[0]
    return UsageError(
        f"the sealed test split was already measured for {name}: its --final of "
        f"{use.get('date')} (grader blob {str(use.get('grader_blob'))[:12]}, judge model "
        f"{use.get('judge_model')!r}) consumed {len(found.items)} of the {asked} test items "
        f"of {visible(labels)} (the first: {visible(first[:40])!r}){where}; the split is "
        "spent per grader, whatever later edits: a new final needs a new labelled set "
        "(test items never measured, by id or content; the record lists those consumed "
        "under sealed), or drop --final to measure the dev split")


#: How many commits of history ``--final`` reads for earlier uses of the sealed split.
MAX_HISTORY = 100_000


def _refuse_spent_in_history(repo: Repo, settings: Settings, name: str, blob: str,
                             model: str, asked: dict[str, str], labels: str
                             ) -> list[JSONObject]:
    """Refuse ``--final`` when any version of the record in HEAD's history (removed or
    rewritten since) says an earlier final of grader ``name`` consumed an item it would
    measure: ``git rm`` of the record does not unspend it. Every version of the record
    path reachable from HEAD is read (each distinct blob once); returns every use of the
    split they show."""
    from gitevals.calibration.record import parse, path_of, spent
    from gitevals.git.trees import RevisionTree

    path = path_of(settings.root, name)
    seen: set[str] = set()
    found_uses: list[JSONObject] = []
    for n, commit in enumerate(reversed(repo.new_commits(repo.resolve("HEAD"), []))):
        if n >= MAX_HISTORY:
            break
        tree = RevisionTree(repo, commit)
        sha = tree.blob_sha(path)
        if sha is None or sha in seen:
            continue
        seen.add(sha)
        data = tree.read(path)
        uses = _uses(parse(data)[0] if data is not None else None)
        found = spent(uses, blob, model, asked)
        if found is not None:
            raise _spent_error(name, found, len(asked), labels,
                               f": {path} at {commit[:12]} says so (a removed or rewritten "
                               "record does not unspend it)")
        found_uses += uses
    return found_uses


def _refuse_unpinned(answered: list[str | None], model: str, split: str) -> None:
    """Record nothing when the judge's API answered as another model than ``model`` or
    changed model during the measurement (``calibration.runs.unpinned``, GE517): the
    record would name a snapshot it did not measure. No rate was shown, so a final's
    test items stay unspent."""
    from gitevals.calibration.runs import unpinned
    from gitevals.errors import GitevalsError

    why = unpinned(answered, model)
    if why is not None:
        error = GitevalsError(f"nothing was recorded of the {split} split: {why}")
        error.exit_code = 1
        raise error


def _measure(tree: RevisionTree, settings: Settings, name: str, items: list[Item],
             jobs: int) -> tuple[Measured, dict[str, bool | str], list[str | None]]:
    """Call the grader on every item in the grader workers a run uses; measure it. Also
    the model the judge's API answered as on each call, in item order."""
    from concurrent.futures import ThreadPoolExecutor

    from gitevals.calibration.metrics import measure
    from gitevals.report.progress import progress
    from gitevals.run.grading import GraderPool
    from gitevals.run.judge import judge_config
    from gitevals.run.reaper import subreaper
    from gitevals.run.workdir import workdir

    with workdir("calibrate") as tmp, subreaper():
        tree.materialize(tmp)
        pool = GraderPool(str(tmp), settings.root, judge_config(settings.judge))
        try:
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex, \
                    progress(f"calibrating {name}", len(items), unit="items") as update:
                said: dict[str, bool | str] = {}
                answered: list[str | None] = []
                futures = {i.id: ex.submit(_one, pool, name, i) for i in items}
                for n, (item_id, fut) in enumerate(futures.items(), 1):
                    said[item_id], models = fut.result()
                    answered += models
                    update(n, sum(isinstance(v, str) for v in said.values()))
        finally:
            pool.close()
    return measure({i.id: i.label for i in items}, said), said, answered


def _one(pool: GraderPool, name: str, item: Item) -> tuple[bool | str, list[str | None]]:
    """The grader's decision on one item, or what went wrong (an error is never a FAIL),
    and the models the judge's API answered as on its calls."""
    from gitevals.run.artifact import judge_calls
    from gitevals.run.scoring import decide_grader

    answer = pool.call(name, item.case, item.run)
    usage = judge_calls(answer.get("usage"))
    models = list(usage.get("models", [])) if usage is not None else []
    outcome = decide_grader({"name": name}, {"index": 0, "name": name,
                                             "raw": answer["raw"], "error": answer["error"],
                                             "duration_ms": 0})
    err = outcome["error"]
    if err is not None:
        return f"{err['kind']}: {err['message']}", models
    return outcome["passed"], models


def _in_repo(work_root: Path, given: str) -> str:
    """The labels file's path in the repository (POSIX, from its root), which lint and
    run read the labels from to check the record; as given when it is outside."""
    import os

    full = os.path.realpath(given)
    rel = os.path.relpath(full, os.path.realpath(work_root))
    return given if rel == ".." or rel.startswith("../") else rel.replace(os.sep, "/")


def _note_uncommitted(tree: RevisionTree, labels_at: str, labels_sha: str) -> None:
    """Say so when the labels measured are not the ones committed at HEAD: lint and run
    check the record against the committed labels and leave it unusable until they are."""
    import hashlib

    from gitevals.text import visible

    data = tree.read(labels_at) if not labels_at.startswith("/") else None
    if data is None or hashlib.sha256(data).hexdigest() != labels_sha:
        print(f"gitevals: note: {visible(labels_at)} is not committed as measured: lint and "
              "run check the record against the committed labels, so commit them as they "
              "are", file=sys.stderr)


def _record(tree: RevisionTree, settings: Settings, args: argparse.Namespace, blob: str,
            measured: Measured, now: datetime, labels_sha: str, sizes: dict[str, int],
            previous: JSONObject | None, rows: list[JSON], labels_at: str,
            consumed: dict[str, str]) -> JSONObject:
    from gitevals.calibration.record import Context, build
    from gitevals.graderimports import closure
    from gitevals.lint.graders import module_path

    assert settings.judge is not None and tree.commit is not None
    pinned = closure(tree, [module_path(settings.root, args.grader)], settings.root)
    ctx = Context(args.grader, blob, tree.commit, settings.judge.model,
                  settings.judge.base_url, settings.judge.family,
                  now.strftime("%Y-%m-%dT%H:%M:%SZ"), labels_at, labels_sha, sizes, pinned)
    return build(ctx, measured, args.final, previous, rows, consumed)


def _write(repo: Repo, settings: Settings, name: str, record: JSONObject,
           previous: JSONObject | None, final: bool) -> str | None:
    """Write the record atomically; a dev run never replaces the final measurement of the
    same grader blob and judge model (returns why it was kept instead)."""
    from gitevals.calibration.record import dumps
    from gitevals.files import write_atomic

    path = _record_path(repo, settings, name)
    if (not final and previous is not None and previous.get("final") is True
            and previous.get("grader_blob") == record["grader_blob"]
            and previous.get("judge_model") == record["judge_model"]):
        return (f"{path.relative_to(repo.work_root)} keeps the final measurement of this "
                "grader and judge model; these dev numbers were not recorded")
    write_atomic(path, dumps(record))
    return None
