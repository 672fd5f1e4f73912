"""``gitevals fetch-run [REV]``: bring the full artifact of a commit's run here.

A note keeps a run's summary; its transcripts are kept once, elsewhere
(``gitevals.run.runstore``). ``show --trial`` fetches them when it needs them; this
fetches them ahead (before going offline, or to warm a CI cache directory); with an
HTTP(S) store, run where the transcripts are, it uploads them when the store lacks
them (a run whose upload failed).
"""

from __future__ import annotations

import argparse

NAME = "fetch-run"
HELP = "fetch the transcripts (the full artifact) of the run of a revision"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rev", nargs="?", default="HEAD", metavar="REV",
                        help="the revision whose run to fetch (default: HEAD)")


def run(args: argparse.Namespace) -> int:
    from gitevals.commands.show import locate, no_run
    from gitevals.run.runstore import full_run, get, place
    from gitevals.run.store import run_of_commit
    from gitevals.run.summary import is_summary

    repo, commit, root = locate(args.rev)
    found = run_of_commit(repo, None, root, commit)
    if found is None:
        raise no_run(args.rev, commit, root)
    run_id = found.run["run_id"]
    if not is_summary(found.run):
        print(f"run {run_id} of {commit[:12]}: its note holds the whole run already "
              "(`gitevals notes compact` keeps it as a summary and an artifact)")
        return 0
    sha = found.run["stored"]["sha256"]
    kept = get(repo, sha)
    full_run(repo, found.run, f"run {run_id}")  # unpacked: checked byte for byte
    where = place(repo)
    if kept is not None and where.url is not None:
        from gitevals.run import httpstore

        sent = httpstore.put(where.url, sha, kept)  # a run whose upload failed: again
        print(f"run {run_id} of {commit[:12]}: its transcripts are here, and "
              f"{'now uploaded to' if sent else 'already in'} {where.label}")
        return 0
    print(f"run {run_id} of {commit[:12]}: its transcripts are "
          f"{'already here' if kept is not None else 'fetched'} ({where.label})")
    return 0
