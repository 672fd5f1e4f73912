"""``gitevals baseline ARTIFACT --model NAME``: write ``<root>/baseline-<NAME>.json``.

The gate token: an explicit command, so a run never writes into the eval tree. Written
atomically; an existing baseline is replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import sys

NAME = "baseline"
HELP = ("write <root>/baseline-<NAME>.json, the gate token, from a goldens run of the "
        "unmodified base model")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="ARTIFACT|REV",
                        help="the run artifact (.json), or a revision whose run to use")
    parser.add_argument("--model", required=True, metavar="NAME",
                        help="the base model's name: the file is baseline-<NAME>.json")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing baseline of that name")


def run(args: argparse.Namespace) -> int:
    from gitevals import api, jsontext
    from gitevals.errors import UsageError
    from gitevals.files import write_atomic
    from gitevals.git.repo import require_repo
    from gitevals.goldens.gate import baseline_of, baseline_path
    from gitevals.text import visible

    artifact = api.goldens_run(args.artifact)
    if artifact["dirty"]:
        raise UsageError(f"run {artifact['run_id']} ran with uncommitted changes: a baseline "
                         "is measured on a commit; commit, run again, then write it")
    repo = require_repo()
    api.check_lints(repo, artifact["commit"])  # duplicate golden ids, a budget of inf: refused
    doc = baseline_of(artifact, args.model)
    rel = baseline_path(artifact["root"], args.model)
    path = repo.work_root / rel
    top = repo.work_root.resolve()
    if top not in path.parent.resolve().parents and path.parent.resolve() != top:
        raise UsageError(f"{rel}: its directory leads outside the repository; the baseline "
                         "belongs in the eval tree")
    if path.exists() and not args.force:
        raise UsageError(f"{rel} exists: the gate token is replaced only on purpose; pass "
                         "--force to write the new baseline")
    if not path.parent.is_dir():
        raise UsageError(f"{artifact['root']}/ does not exist in the working tree: check out "
                         "the eval tree the run measured, then write the baseline")
    write_atomic(path, jsontext.dumps(doc) + "\n")
    n = len(doc["slices"])
    print(visible(f"wrote {rel}: {n} slice{'s' * (n != 1)} of run {doc['run_id']} (commit "
                  f"{doc['commit'][:12]}); commit it: it is the gate token"))
    sys.stdout.flush()
    return 0
