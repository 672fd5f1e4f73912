"""``gitevals run --draft PATH``: a case file from outside the commit, run against it.

The draft is laid over the revision as ``<root>/cases/<name>.yaml`` (``DraftTree``), so
lint and the planner read it exactly as they would read a committed case, and its
graders and harness come from the commit. The artifact marks the case a draft, with the
sha256 of its bytes; it goes to ``<root>/results/drafts/``, where ``show`` and ``diff``
never look for a commit's run, and never to the git note.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gitevals.errors import UsageError
from gitevals.findings import Finding
from gitevals.git.blobs import git_blob_sha
from gitevals.git.trees import Entry, Tree
from gitevals.model import case_name
from gitevals.run.artifact import Draft, Run
from gitevals.yamlsafe import MAX_BYTES

#: Where draft runs are kept, under ``<root>/results/``.
DRAFTS_DIR = "drafts"


@dataclass(frozen=True)
class DraftFile:
    """The draft as read: where it came from, where it stands in the tree, its bytes."""

    given: str        # the path as the user gave it
    path: str         # ``<root>/cases/<name>.yaml``, where the tree sees it
    data: bytes

    @property
    def name(self) -> str:
        return case_name(self.path)

    def record(self) -> Draft:
        return {"path": self.given, "sha256": hashlib.sha256(self.data).hexdigest()}

    def rename(self, finding: Finding) -> Finding:
        """A finding about the draft names the draft's own path."""
        return replace(finding, path=self.given) if finding.path == self.path else finding


def read_draft(given: str, root: str) -> DraftFile:
    """Read the draft file; a path that is not a ``.yaml``/``.yml`` file is a usage error."""
    path = Path(given)
    if not given.endswith((".yaml", ".yml")):
        raise UsageError(f"--draft {given}: a draft is a case file named <name>.yaml")
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read forever
            raise UsageError(f"--draft {given}: not a regular file; give a case file")
        if path.stat().st_size > MAX_BYTES:
            raise UsageError(f"--draft {given}: over the 1 MiB limit of a case file")
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--draft {given}: cannot read it: {exc.strerror or exc}") from None
    return DraftFile(given, f"{root}/cases/{path.name}", data)


class DraftTree(Tree):
    """``base`` with the draft at ``draft.path`` (replacing a committed case of that name)."""

    def __init__(self, base: Tree, draft: DraftFile) -> None:
        self.base, self.draft = base, draft
        self.label, self.commit, self.tree_sha = base.label, base.commit, base.tree_sha
        self.sha = git_blob_sha(draft.data)

    @property
    def location(self) -> str:
        return self.base.location

    def _mine(self, prefix: str) -> bool:
        top = prefix.strip("/")
        return not top or self.draft.path.startswith(top + "/") or (
            self.draft.path == top and not prefix.endswith("/"))

    def entries(self, prefix: str = "") -> list[Entry]:
        out = [e for e in self.base.entries(prefix) if e.path != self.draft.path]
        if self._mine(prefix):
            out.append(Entry(self.draft.path, self.sha, len(self.draft.data)))
        return sorted(out, key=lambda e: e.path)

    def entry(self, path: str) -> Entry | None:
        if path == self.draft.path:
            return Entry(path, self.sha, len(self.draft.data))
        return self.base.entry(path)

    def read(self, path: str) -> bytes | None:
        return self.draft.data if path == self.draft.path else self.base.read(path)

    def blob_shas(self, prefix: str = "") -> dict[str, str]:
        out = {p: s for p, s in self.base.blob_shas(prefix).items() if p != self.draft.path}
        if self._mine(prefix):
            out[self.draft.path] = self.sha
        return dict(sorted(out.items()))

    def blob_sha(self, path: str) -> str | None:
        return self.sha if path == self.draft.path else self.base.blob_sha(path)

    def refused(self, prefix: str) -> dict[str, str]:
        # The draft is read from a regular file (read_draft); what the commit refuses stays.
        return {p: why for p, why in self.base.refused(prefix).items()
                if p != self.draft.path}

    def read_blobs(self, shas: Sequence[str]) -> list[bytes]:
        theirs = [s for s in shas if s != self.sha]
        found = dict(zip(theirs, self.base.read_blobs(theirs), strict=True))
        return [self.draft.data if s == self.sha else found[s] for s in shas]


def mark(run: Run, draft: DraftFile) -> Run:
    """The run's draft case carries ``draft``: the file it came from and its sha256."""
    for case in run["cases"]:
        if case["name"] == draft.name:
            case["draft"] = draft.record()
    return run
