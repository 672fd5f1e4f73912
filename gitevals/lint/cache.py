"""The lint cache: results keyed by content (git blob SHA), so unchanged files cost nothing.

Layout: ``$XDG_CACHE_HOME/gitevals/lint/<salt>/<kind>/<key>.json`` where ``salt``
digests everything besides a file's bytes that decides its findings: the tool
version, the source of the lint rules, the schema files and the refused-keys
setting. A new version or a new setting therefore starts a fresh directory and
never reads a stale answer.

Per-file results of one repository live together in one *manifest* (kind
``manifest``), a mapping ``"<blob sha>:<path>" -> result``: lookups stay
content-addressed, but a cold run over 2,000 files writes one file, not 2,000
(creating a file costs more than linting a small case). Grader-module indexes are
stored one per blob SHA (shared by every repository).

Every entry is written to a temporary file and renamed into place
(``os.replace``), so concurrent pre-commit workers never see half an entry; two
writers of the same key write the same bytes. An unreadable or corrupt entry is a
miss (and gets rewritten). A read-only or full disk only costs speed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from gitevals import __version__
from gitevals.files import cache_dir, write_atomic
from gitevals.jsontypes import JSON, JSONObject

FORMAT = "1"
_PACKAGE = Path(__file__).resolve().parent.parent


def _rule_sources() -> Iterable[Path]:
    """Files whose content decides findings: the lint package, its helpers and the schemas."""
    yield from sorted((_PACKAGE / "lint").glob("*.py"))
    yield from sorted((_PACKAGE / "tasks").glob("*.py"))  # the task rules live there
    for name in ("yamlsafe.py", "findings.py", "model.py", "settings.py", "validation.py",
                 "graderfile.py"):
        yield _PACKAGE / name
    yield from sorted((_PACKAGE / "schemas").glob("*.json"))


def salt(refused_keys: Mapping[str, str]) -> str:
    """Digest of the tool version, rule sources, schemas and the refused-keys setting."""
    h = hashlib.sha256(f"gitevals {__version__} cache {FORMAT}\0".encode())
    h.update(_sources_digest())
    h.update(json.dumps(dict(refused_keys), sort_keys=True).encode())
    return h.hexdigest()[:24]


@functools.cache
def _sources_digest() -> bytes:
    """The rule sources' digest, read once a process: it stands for the rules this
    process has loaded, which do not change while it runs (reading ~40 files was ~15 ms
    of every lint and run of a process that does many, such as a notebook's)."""
    h = hashlib.sha256()
    for path in _rule_sources():
        with contextlib.suppress(OSError):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.digest()


def key(*parts: str) -> str:
    """A cache key from parts (blob SHAs, paths...)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:40]


class LintCache:
    """JSON values by ``(kind, key)``. ``LintCache(None)`` is a cache that never hits."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0

    @classmethod
    def open(cls, refused_keys: Mapping[str, str], enabled: bool = True) -> LintCache:
        """The cache of this tool version and settings (disabled: ``enabled=False``)."""
        return cls(cache_dir("lint", salt(refused_keys)) if enabled else None)

    def _file(self, kind: str, k: str) -> Path | None:
        return None if self.directory is None else self.directory / kind / f"{k}.json"

    def get(self, kind: str, k: str) -> JSON:
        """The value stored under ``(kind, k)``, or None (absent, unreadable or corrupt)."""
        path = self._file(kind, k)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                value: JSON = json.loads(f.read())
        except (OSError, ValueError, RecursionError):  # RecursionError: a corrupt, deep file
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, kind: str, k: str, value: JSON) -> None:
        """Store ``value`` atomically; errors writing the cache are ignored."""
        path = self._file(kind, k)
        if path is None:
            return
        data = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        with contextlib.suppress(OSError):
            write_atomic(path, data, fsync=False, private=True)  # a lost entry: a miss

    def load_manifest(self, name: str) -> JSONObject:
        """The per-file results stored under ``name`` ({} when absent or corrupt)."""
        value = self.get("manifest", name)
        return value if isinstance(value, dict) else {}

    def save_manifest(self, name: str, entries: Mapping[str, JSON]) -> None:
        """Replace the manifest ``name`` (atomically; concurrent savers: the last one wins,
        which only costs the other one's entries a re-lint)."""
        self.put("manifest", name, dict(entries))
