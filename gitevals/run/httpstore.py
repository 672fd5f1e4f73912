"""Full run artifacts kept behind an HTTP(S) URL: GET, PUT and HEAD of content-addressed
keys (the IO edge; ``gitevals.run.runstore`` decides when).

The key of an artifact is ``<base>/<sha[:2]>/<sha256>.gea``, as in a directory store,
so one layout serves a generic artifact server, nginx with WebDAV PUT, or an
S3-compatible bucket through its public or presigned-style endpoint. Every answer is
checked, never trusted: a download is bounded (``MAX_BYTES``) and must unpack to the
run its key names (the sha256 of the run's canonical text), else it is refused.

Credentials never sit in settings: ``gitevals.runStoreAuth`` (or
``GITEVALS_RUN_STORE_AUTH``) names the environment variable whose value is sent as
the ``Authorization`` header, or ``Header-Name:VARIABLE`` for another header (an
artifact server's API key). A URL carrying ``user:password@`` is refused. Redirects
are not followed (they would carry the header to another host): give the final URL.
"""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException

from gitevals.errors import ArtifactError, UsageError

#: The largest artifact downloaded or uploaded (a 5,000-trial run packs to ~10 MB).
MAX_BYTES = 1 << 30
#: Seconds a connection or a read may stall before the store counts as unreachable.
TIMEOUT = 30.0
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,64}")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Store:
    """A base URL and, when the store needs one, the header that authorizes."""

    base: str
    header: str | None = None
    variable: str | None = None

    def key(self, sha: str) -> str:
        return f"{self.base}/{sha[:2]}/{sha}.gea"


def store_of(url: str, auth: str | None) -> Store:
    """The store at ``url`` authorized by ``auth`` (``VARIABLE`` or
    ``Header-Name:VARIABLE``); ``UsageError`` for a URL or a setting that cannot be."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"run store {url!r}: not an http(s) URL; give "
                         "https://host/path (docs/storage.md)")
    if parts.username is not None or parts.password is not None:
        raise UsageError("run store URL: it holds credentials; remove them and name the "
                         "environment variable that holds them in gitevals.runStoreAuth")
    if parts.fragment:
        raise UsageError(f"run store {url!r}: a URL with a #fragment names no place")
    if not auth:
        return Store(url.rstrip("/"))
    header, _, variable = auth.rpartition(":")
    header = header.strip() or "Authorization"
    variable = variable.strip()
    if not _VAR.fullmatch(variable) or not _HEADER.fullmatch(header):
        raise UsageError(f"gitevals.runStoreAuth {auth!r}: give the NAME of an environment "
                         "variable (VARIABLE, or Header-Name:VARIABLE), never a secret")
    return Store(url.rstrip("/"), header, variable)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: object, code: int, msg: str,
                         headers: object, newurl: str) -> None:
        return None  # the 3xx reaches the caller as an HTTPError


_OPENER = urllib.request.build_opener(_NoRedirect)


def _request(store: Store, method: str, sha: str, data: bytes | None = None
             ) -> urllib.request.Request:
    headers = {"User-Agent": "gitevals"}
    if data is not None:
        headers["Content-Type"] = "application/octet-stream"
    if store.header and store.variable:
        secret = os.environ.get(store.variable)
        if not secret:
            raise ArtifactError(f"gitevals.runStoreAuth names ${store.variable}, which is not "
                                "set: export it (the run store's credential) and run again")
        headers[store.header] = secret
    return urllib.request.Request(store.key(sha), data=data, method=method, headers=headers)


def _unreachable(store: Store, exc: BaseException) -> ArtifactError:
    reason = getattr(exc, "reason", None) or exc
    return ArtifactError(f"the run store {store.base} is unreachable ({reason}): check the "
                         "URL (git config gitevals.runStore) and the network, then run again")


def _status(store: Store, method: str, exc: urllib.error.HTTPError) -> ArtifactError:
    where = exc.headers.get("Location") if 300 <= exc.code < 400 else None
    hint = (f"it redirects to {where}: set gitevals.runStore to the final URL" if where
            else "check gitevals.runStoreAuth" if exc.code in (401, 403)
            else "check the store's URL and that it accepts " + method)
    return ArtifactError(f"the run store {store.base} answered {method} with HTTP "
                         f"{exc.code} {exc.reason}: {hint}")


def has(store: Store, sha: str) -> bool:
    """True when the store holds ``sha`` (HEAD: 2xx yes, 404 no)."""
    try:
        with _OPENER.open(_request(store, "HEAD", sha), timeout=TIMEOUT):
            return True
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 410):
            return False
        raise _status(store, "HEAD", exc) from exc
    except (urllib.error.URLError, OSError, HTTPException) as exc:
        raise _unreachable(store, exc) from exc


def put(store: Store, sha: str, data: bytes) -> bool:
    """Upload ``data`` under ``sha`` unless the store holds it; True when uploaded."""
    if len(data) > MAX_BYTES:
        raise ArtifactError(f"the artifact {sha[:12]} is {len(data):,} bytes, over the run "
                            f"store's bound of {MAX_BYTES:,}")
    if has(store, sha):
        return False
    try:
        with _OPENER.open(_request(store, "PUT", sha, data), timeout=TIMEOUT):
            return True
    except urllib.error.HTTPError as exc:
        raise _status(store, "PUT", exc) from exc
    except (urllib.error.URLError, OSError, HTTPException) as exc:
        raise _unreachable(store, exc) from exc


def get(store: Store, sha: str) -> bytes | None:
    """The bytes the store holds under ``sha`` (at most ``MAX_BYTES``), None when it
    holds nothing there; not yet checked (``runstore`` unpacks and hashes them)."""
    try:
        with _OPENER.open(_request(store, "GET", sha), timeout=TIMEOUT) as answer:
            size = answer.headers.get("Content-Length")
            if size is not None and size.isdigit() and int(size) > MAX_BYTES:
                raise _too_big(store, sha)
            parts, total = [], 0
            while chunk := answer.read(_CHUNK):
                total += len(chunk)
                if total > MAX_BYTES:
                    raise _too_big(store, sha)
                parts.append(chunk)
            return b"".join(parts)
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 410):
            return None
        raise _status(store, "GET", exc) from exc
    except (urllib.error.URLError, OSError, HTTPException) as exc:
        raise _unreachable(store, exc) from exc


def _too_big(store: Store, sha: str) -> ArtifactError:
    return ArtifactError(f"the run store {store.base} answered more than {MAX_BYTES:,} bytes "
                         f"for {sha[:12]}: refused (no artifact is that large)")
