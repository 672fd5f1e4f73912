"""``gitevals import harbor JOB_DIR``: another tool's results as a run pinned to a commit."""

from __future__ import annotations

import argparse
import sys

from gitevals.commands._args import add_rev, rate

NAME = "import"
HELP = ("turn a Harbor job's trial results into a run pinned to REV (default HEAD), for "
        "diff, show and report")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=("harbor",), help="what wrote the results")
    parser.add_argument("job_dir", metavar="JOB_DIR",
                        help="the Harbor job directory (one directory per trial, each with "
                             "result.json)")
    add_rev(parser, "the commit the results are of (default HEAD)", default="HEAD")
    parser.add_argument("--pass-threshold", type=rate, default=1.0, metavar="R",
                        help="the reward a trial must reach to pass, 0 to 1 (default 1)")
    parser.add_argument("--no-note", action="store_true",
                        help="do not attach the run to the commit as a git note")


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from gitevals.errors import UsageError
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree
    from gitevals.interop.harbor import Pin, build, read_job
    from gitevals.run.artifact import checked, dumps
    from gitevals.run.store import note, save
    from gitevals.settings import load_settings
    from gitevals.text import visible

    repo = require_repo()
    tree = RevisionTree(repo, args.rev)
    assert tree.commit is not None and tree.tree_sha is not None
    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]}")
    job = Path(args.job_dir)
    trials, unfinished = read_job(job)
    pin = Pin(args.rev, tree.commit, tree.tree_sha, settings.root, settings.as_dict())
    artifact = build(job.resolve().name, trials, args.pass_threshold, pin, time.time())
    text = dumps(checked(artifact, "the imported run"))
    path = save(repo.work_root, artifact, text)
    noted = not args.no_note and note(repo, artifact)
    if unfinished:
        print(f"gitevals: {unfinished} trial director{'ies' if unfinished != 1 else 'y'} "
              "without result.json (unfinished) left out", file=sys.stderr)
    tasks = len(artifact["cases"])
    print(f"imported {len(trials)} Harbor trial{'s' * (len(trials) != 1)} of {tasks} "
          f"task{'s' * (tasks != 1)} as run {artifact['run_id']} of {tree.commit[:12]}; "
          f"artifact {visible(str(path))}" + (", note refs/notes/gitevals" if noted else ""))
    return 0
