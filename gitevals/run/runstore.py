"""Where full run artifacts are kept, once each, by content address (the IO edge).

A note holds a run's summary; the full artifact, packed by ``gitevals.run.archive``,
is kept under the sha256 of its canonical text, in one of three places:

- ``git`` (the default): a blob named by the ref ``refs/gitevals/runs/<sha256>``.
  ``notes push`` pushes these refs beside the notes; a clone fetches none of them
  (``git clone`` and ``notes pull`` fetch branches, tags and notes only), and
  ``fetch`` brings one when someone opens a trial (``show --trial``, ``report``,
  ``fetch-run``).
- a directory (a CI cache, a mounted artifact store): ``<dir>/<sha[:2]>/<sha>.gea``.
- an HTTP(S) URL (``gitevals.run.httpstore``): uploaded by the run, downloaded when
  someone opens a trial, checked against its address, and kept in
  ``<git dir>/gitevals/runs/`` (never pushed) so it is downloaded once.

The place is ``GITEVALS_RUN_STORE`` (``git``, a directory or a URL), else the
repository's git config ``gitevals.runStore``, else ``git`` (docs/storage.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import ArtifactError

if TYPE_CHECKING:
    from gitevals.git.repo import Repo
    from gitevals.run.artifact import Run
    from gitevals.run.httpstore import Store

RUNS_REF = "refs/gitevals/runs/"
_SHA = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Place:
    """``git`` (refs under ``RUNS_REF``), a directory, or an HTTP(S) store."""

    directory: Path | None
    url: Store | None = None

    @property
    def label(self) -> str:
        if self.url is not None:
            return self.url.base
        return "git refs " + RUNS_REF + "*" if self.directory is None else str(self.directory)


def place(repo: Repo) -> Place:
    """Where this repository keeps full artifacts (module docstring). A URL's artifacts
    are kept here too, once downloaded or uploaded, in the git dir (``directory``)."""
    from gitevals.run.httpstore import store_of

    value = os.environ.get("GITEVALS_RUN_STORE") or repo.config_value("gitevals.runStore")
    if not value or value == "git":
        return Place(None)
    if value.startswith(("http://", "https://")):
        auth = (os.environ.get("GITEVALS_RUN_STORE_AUTH")
                or repo.config_value("gitevals.runStoreAuth"))
        return Place(Path(repo.raw.path) / "gitevals" / "runs", store_of(value, auth))
    path = Path(os.path.expanduser(value))
    return Place(path if path.is_absolute() else repo.work_root / path)


def ref_of(sha: str) -> str:
    return RUNS_REF + sha


def _file(directory: Path, sha: str) -> Path:
    return directory / sha[:2] / f"{sha}.gea"


def put(repo: Repo, run: Run) -> tuple[str, int]:
    """Keep ``run`` (a full run) packed; its content address and the size of its
    canonical text. Already kept: nothing is written."""
    from gitevals.run import archive

    sha, size, data = archive.pack(run)
    where = place(repo)
    if where.directory is None:
        if repo.ref_target(ref_of(sha)) is None:
            repo.set_ref(ref_of(sha), repo.write_blob(data), None)
        return sha, size
    from gitevals.files import write_atomic

    path = _file(where.directory, sha)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    if where.url is not None:
        _upload(where.url, sha, data)
    return sha, size


def _upload(store: Store, sha: str, data: bytes) -> None:
    """Upload to the URL store; when it cannot be, say so and go on: the note is still
    written and the artifact stays in this clone (``fetch-run`` here uploads it again)."""
    import sys

    from gitevals.run import httpstore

    try:
        httpstore.put(store, sha, data)
    except ArtifactError as exc:
        print(f"gitevals: warning: {exc}; the transcripts stay in this clone only "
              "(`gitevals fetch-run REV` uploads them when the store is back)",
              file=sys.stderr)


def get(repo: Repo, sha: str) -> bytes | None:
    """The packed artifact ``sha`` when it is here, else None."""
    if not _SHA.fullmatch(sha):
        return None
    where = place(repo)
    if where.directory is None:
        target = repo.ref_target(ref_of(sha))
        return None if target is None else repo.read_blobs([target])[0]
    path = _file(where.directory, sha)
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def fetch(repo: Repo, sha: str) -> str | None:
    """Fetch the packed artifact ``sha`` from the remotes (origin first) into its ref;
    None when one had it, else why none could give it (one phrase)."""
    where = place(repo)
    if where.url is not None and where.directory is not None:
        return _download(where.url, where.directory, sha)
    if where.directory is not None:
        return f"it is not in {where.label}, and a directory store is not fetched"
    remotes = sorted(repo.remotes(), key=lambda n: (n != "origin", n))
    if not remotes:
        return "this repository has no remote to fetch it from"
    said = []
    for name in remotes:
        code, err = repo.run_git("fetch", "--quiet", "--no-write-fetch-head", name,
                                 f"{ref_of(sha)}:{ref_of(sha)}")
        if code == 0 and repo.ref_target(ref_of(sha)) is not None:
            return None
        said.append(f"{name}: " + ("it does not have it" if "couldn't find remote ref" in err
                                   else (err.strip().splitlines() or ["git fetch failed"])[-1]))
    return "; ".join(said)


def _download(store: Store, cache: Path, sha: str) -> str | None:
    """Download ``sha`` into ``cache`` once it unpacks to the run it names; None when
    done, else why not. A store that answers other bytes is refused (``ArtifactError``)."""
    from gitevals.files import write_atomic
    from gitevals.run import archive, httpstore

    data = httpstore.get(store, sha)
    if data is None:
        return f"{store.base} does not have it"
    label = f"what the run store {store.base} answered for {sha[:12]}"
    try:
        head = archive.header(data, label)
        if head["sha256"] != sha:
            raise ArtifactError(f"{label} is another run's artifact")
        archive.unpack(data, label)  # hashes the whole run: byte for byte its address
    except ArtifactError as exc:
        raise ArtifactError(f"refused: {exc} (the store holds other bytes under this "
                            "address: nothing was kept)") from exc
    path = _file(cache, sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return None


def full_run(repo: Repo, summary: Run, label: str) -> Run:
    """The full run a summary stands for: kept here, else fetched (``ArtifactError``
    naming why when it cannot be had)."""
    from gitevals.run import archive

    return archive.unpack(packed(repo, summary, label), label)


def packed(repo: Repo, summary: Run, label: str) -> bytes:
    """The packed artifact of ``summary``: kept here, else fetched; ``ArtifactError``
    with one line saying why it cannot be had."""
    stored = summary.get("stored")
    if stored is None:
        raise ArtifactError(f"{label}: holds the whole run; nothing to fetch")
    data = get(repo, stored["sha256"])
    if data is None:
        why = fetch(repo, stored["sha256"])
        data = get(repo, stored["sha256"]) if why is None else None
        if data is None:
            fix = ("upload them from the machine that ran it (`gitevals fetch-run REV` "
                   "there)" if place(repo).url is not None
                   else "push them from the machine that ran it with `gitevals notes push`")
            raise ArtifactError(
                f"the transcripts of run {summary['run_id']} are not here and cannot be "
                f"fetched ({why or 'the fetched ref holds nothing'}): the note keeps its "
                f"summary only; {fix}")
    from gitevals.run.archive import header

    if header(data, label)["sha256"] != stored["sha256"]:
        raise ArtifactError(f"{label}: the artifact kept under {stored['sha256'][:12]} is "
                            "another run's: the store is damaged; fetch it again")
    return data
