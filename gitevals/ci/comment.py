"""The diff as a pull-request comment and a step summary: the body (pure), and one sticky
comment kept up to date through the GitHub or GitLab REST API (IO).

The comment is found again by a hidden marker on its first line, written by the bot the
job runs as: a comment anyone else wrote is never edited, even if it quotes the marker.
A body is cut at a line to fit the platform's limit (GitHub: 65,536 characters), closing
a code fence left open, and says where the whole diff is.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

from gitevals.errors import GitevalsError
from gitevals.jsontypes import JSON, JSONObject

#: The hidden first line that marks gitevals' comment.
MARKER = "<!-- gitevals-diff -->"
#: GitHub refuses a comment body over 65,536 characters; GitLab's note limit is 1,000,000.
GITHUB_LIMIT = 65_536
GITLAB_LIMIT = 1_000_000
#: A step summary may hold 1 MiB (GitHub): the summary body is kept below it, in bytes.
SUMMARY_LIMIT = 1_000_000
#: Pages of 100 comments read at most when looking for ours.
MAX_PAGES = 30

#: The verdict line by the diff's ``--fail-on`` and exit code (2 is the same for all).
VERDICTS = {
    ("regressed", 0): "**gitevals diff: passed.** No scenario or goldens bucket regressed "
                      "beyond noise (exit 0).",
    ("regressed", 1): "**gitevals diff: failed.** A scenario or goldens bucket regressed "
                      "beyond noise (exit 1).",
    ("any-change", 0): "**gitevals diff: passed.** Nothing changed: no rule, grader, golden "
                       "or verdict (`--fail-on any-change`, exit 0).",
    ("any-change", 1): "**gitevals diff: failed.** Something changed (`--fail-on any-change`, "
                       "exit 1).",
    ("never", 0): "**gitevals diff** (`--fail-on never`: it does not gate this job).",
}


def verdict(exit_code: int, fail_on: str = "regressed") -> str:
    """The first line a reader sees: what the diff's exit code means under ``fail_on``."""
    found = VERDICTS.get((fail_on, exit_code))
    if found is not None:
        return found
    return (f"**gitevals diff: could not compare** (exit {exit_code}): a run is missing or a "
            "revision could not be read; see the job log.")


def units(text: str) -> int:
    """Length as GitHub counts it at worst: UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le")) // 2


def body(markdown: str, exit_code: int, limit: int, where: str, marker: str = MARKER,
         fail_on: str = "regressed") -> str:
    """``marker``, the verdict, then the diff's markdown, cut at a line so that the whole
    is at most ``limit`` characters; a cut says so and names ``where`` the whole diff is."""
    line = verdict(exit_code, fail_on)
    head = f"{marker}\n{line}\n\n" if marker else f"{line}\n\n"
    whole = head + markdown
    if units(whole) <= limit:
        return whole
    note = (f"\n\n_The diff was cut to fit the {limit:,}-character limit: the whole diff is "
            f"{where}._\n")
    room = limit - units(head) - units(note) - units("```\n")
    kept: list[str] = []
    used = 0
    for line in markdown.splitlines(keepends=True):
        if used + units(line) > room:
            break
        kept.append(line)
        used += units(line)
    text = "".join(kept)
    if sum(line.lstrip().startswith("```") for line in kept) % 2:
        text += "" if text.endswith("\n") or not text else "\n"
        text += "```\n"  # a fence the cut left open would swallow the note
    return head + text + note


def summary_body(markdown: str, exit_code: int, where: str, fail_on: str = "regressed") -> str:
    """The step summary: the same body without the marker, within 1 MiB in bytes (a
    UTF-16 unit takes at most 3 bytes of UTF-8, so a third of it in units fits)."""
    whole = body(markdown, exit_code, 2**62, where, marker="", fail_on=fail_on)
    if len(whole.encode("utf-8")) <= SUMMARY_LIMIT:
        return whole
    return body(markdown, exit_code, SUMMARY_LIMIT // 3, where, marker="", fail_on=fail_on)


@dataclass(frozen=True)
class Api:
    """A REST API: where it is, how to authenticate, and who the bot is."""

    base: str
    headers: tuple[tuple[str, str], ...]
    author: str

    def call(self, method: str, path: str, doc: JSONObject | None = None) -> JSON:
        data = None if doc is None else json.dumps(doc).encode("utf-8")
        req = urllib.request.Request(self.base.rstrip("/") + path, data=data, method=method,
                                     headers={**dict(self.headers),
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read(50_000_000)
        except urllib.error.HTTPError as exc:
            raise GitevalsError(f"{method} {path}: {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise GitevalsError(f"{method} {path}: {exc}") from None
        try:
            found: JSON = json.loads(raw) if raw.strip() else None
        except ValueError:
            raise GitevalsError(f"{method} {path}: the answer is not JSON") from None
        return found


def github(api_url: str, token: str, author: str = "github-actions[bot]") -> Api:
    return Api(api_url, (("Authorization", f"Bearer {token}"),
                         ("Accept", "application/vnd.github+json"),
                         ("X-GitHub-Api-Version", "2022-11-28"),
                         ("User-Agent", "gitevals")), author)


def gitlab(api_url: str, token: str, author: str) -> Api:
    return Api(api_url, (("PRIVATE-TOKEN", token), ("User-Agent", "gitevals")), author)


def _pages(api: Api, path: str) -> Iterator[JSONObject]:
    for page in range(1, MAX_PAGES + 1):
        items = api.call("GET", f"{path}?per_page=100&page={page}")
        if not isinstance(items, list) or not items:
            return
        yield from (i for i in items if isinstance(i, dict))
        if len(items) < 100:
            return


def _ours(item: JSONObject, who: str, api: Api, marker: str) -> bool:
    user = item.get(who)
    login = user.get("login", user.get("username")) if isinstance(user, dict) else None
    text = item.get("body")
    return login == api.author and isinstance(text, str) and text.startswith(marker)


def upsert_github(api: Api, repo: str, number: int, text: str, marker: str = MARKER) -> str:
    """Update our comment on pull request ``number`` of ``repo`` (owner/name), or create
    it; ``updated`` or ``created``."""
    where = f"/repos/{quote(repo, safe='/')}/issues"
    for item in _pages(api, f"{where}/{number}/comments"):
        if _ours(item, "user", api, marker) and isinstance(item.get("id"), int):
            api.call("PATCH", f"{where}/comments/{item['id']}", {"body": text})
            return "updated"
    api.call("POST", f"{where}/{number}/comments", {"body": text})
    return "created"


def upsert_gitlab(api: Api, project: str, iid: int, text: str, marker: str = MARKER) -> str:
    """As :func:`upsert_github`, for a GitLab merge request's notes."""
    where = f"/projects/{quote(project, safe='')}/merge_requests/{iid}/notes"
    for item in _pages(api, where):
        if _ours(item, "author", api, marker) and isinstance(item.get("id"), int):
            api.call("PUT", f"{where}/{item['id']}", {"body": text})
            return "updated"
    api.call("POST", where, {"body": text})
    return "created"
