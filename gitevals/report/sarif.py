"""Findings as a SARIF 2.1.0 log, for GitHub code scanning (``--format sarif``).

One run, one rule per lint code (help text from :mod:`gitevals.lint.codes`, so a finding
is explained where it is shown), one result per finding with its file, line and column.
GitHub refuses a run of more than 25,000 results and a file over 10 MB gzipped: a log
that would cross either keeps the errors first and as many findings as fit, and says in
the run (a tool notification) and in :attr:`Log.note` how many it left out, rather than
being refused whole.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from gitevals import __version__, jsontext
from gitevals.findings import Finding
from gitevals.jsontypes import JSON, JSONObject
from gitevals.lint.codes import BY_CODE, CODES, FAMILIES, Code
from gitevals.text import visible

#: What the log says it follows: SchemaStore's copy of the OASIS schema, as GitHub's docs use.
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
#: GitHub code scanning's documented limits for an upload: results in a run, and the
#: gzipped size of the file (taken as 10,000,000 bytes, the smaller reading of "10 MB").
MAX_RESULTS = 25_000
MAX_GZIPPED = 10_000_000


@dataclass(frozen=True)
class Located:
    """A finding and what the report adds to it: text after its message (publish-check's
    commit and refs) and properties of its result."""

    finding: Finding
    suffix: str = ""
    properties: JSONObject | None = None


@dataclass(frozen=True)
class Log:
    """The SARIF text and how many of the findings it holds."""

    text: str
    kept: int
    total: int

    @property
    def note(self) -> str | None:
        """One line for stderr when findings were left out, else None."""
        return None if self.kept == self.total else _truncation_note(self.kept, self.total)


def _truncation_note(kept: int, total: int) -> str:
    return (f"the SARIF log holds {kept:,} of {total:,} findings (errors first): GitHub code "
            f"scanning refuses a run of more than {MAX_RESULTS:,} results or "
            f"{MAX_GZIPPED:,} bytes gzipped; fix these and lint again, or lint fewer paths")


def render(items: Sequence[Located]) -> Log:
    """The log of ``items``, cut to GitHub's limits when they would be crossed."""
    ordered = sorted(items, key=lambda i: i.finding.severity != "error")  # stable: errors first
    kept = min(len(ordered), MAX_RESULTS)
    while True:
        text = _dump(_log(ordered[:kept], len(ordered)))
        size = len(gzip.compress(text.encode("utf-8"), compresslevel=1, mtime=0))
        if size <= MAX_GZIPPED or kept == 0:
            return Log(text, kept, len(ordered))
        # Shrink in proportion, a little more, so that one or two more tries suffice.
        kept = min(kept - 1, int(kept * MAX_GZIPPED / size * 0.98))


def _dump(doc: JSONObject) -> str:
    """``json.dumps(doc, indent=2, ensure_ascii=False)``'s text, written without json's
    pure-Python indent encoder: a log of 25,000 results took most of a large lint's time
    (and is written again each time it is cut to fit)."""
    return jsontext.dumps(doc, indent=2, sort_keys=False) + "\n"


def _log(items: Sequence[Located], total: int) -> JSONObject:
    """Rules: every registered code, then any code a finding carries that the registry
    lacks (the log stays valid and says so)."""
    extra = sorted({i.finding.code for i in items} - BY_CODE.keys())
    rules: list[JSON] = [*map(_rule, CODES), *map(_unregistered, extra)]
    index = {code: i for i, code in enumerate([*BY_CODE, *extra])}
    run: JSONObject = {
        "tool": {"driver": {"name": "gitevals", "version": __version__,
                            "semanticVersion": __version__, "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(item, index) for item in items],
    }
    if len(items) < total:
        note: JSONObject = {"level": "warning",
                            "message": {"text": _truncation_note(len(items), total)}}
        run["invocations"] = [{"executionSuccessful": True,
                               "toolExecutionNotifications": [note]}]
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _rule(code: Code) -> JSONObject:
    family = FAMILIES.get(code.family, "")
    return {
        "id": code.code,
        "shortDescription": {"text": _first_sentence(code.meaning)},
        "fullDescription": {"text": code.meaning},
        "help": {"text": f"{code.meaning}. How to fix: {code.fix}.",
                 "markdown": f"**{code.code}**: {code.meaning}\n\n**How to fix**: {code.fix}"
                             f"\n\n{code.family}: {family} (gitevals docs/lint-codes.md)"},
        "defaultConfiguration": {"level": code.severity},
        "properties": {"tags": ["gitevals", code.family]},
    }


def _unregistered(code: str) -> JSONObject:
    text = f"{code}: see gitevals docs/lint-codes.md"
    return {"id": code, "shortDescription": {"text": text}, "help": {"text": text},
            "properties": {"tags": ["gitevals"]}}


def _first_sentence(text: str) -> str:
    """The meaning up to its first parenthesis or semicolon: a one-line title."""
    head = re.split(r" \(|; ", text, maxsplit=1)[0]
    return head if len(head) >= 12 else text


def _result(item: Located, index: dict[str, int]) -> JSONObject:
    f = item.finding
    region: JSONObject = {"startLine": max(f.line, 1), "startColumn": max(f.col, 1)}
    result: JSONObject = {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": f.severity,
        "message": {"text": message_text(f.message + item.suffix)},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(f.path), "uriBaseId": "%SRCROOT%"},
            "region": region}}],
    }
    if item.properties:
        result["properties"] = item.properties
    return result


#: What a SARIF viewer reads as an embedded link in a plain-text message: ``[text](target)``.
_EMBEDDED_LINK = re.compile(r"\[[^\]]*\]\(")


def message_text(message: str) -> str:
    """A SARIF plain-text message: control characters as escapes (the text comes from the
    tree); when a quoted value could read as an embedded link (``[x](1)``), every ``\\``,
    ``[`` and ``]`` escaped with a backslash, as SARIF spells literal ones, so none does.
    Brackets that cannot form a link (``scenarios[0]``) are left as written."""
    text = visible(message)
    if _EMBEDDED_LINK.search(text) is None:
        return text
    return re.sub(r"[\\\[\]]", lambda m: "\\" + m.group(), text)


def artifact_uri(path: str) -> str:
    """A repository path as a relative URI reference: every byte but unreserved characters
    and ``/`` percent-encoded, so no name reads as a scheme, query or fragment."""
    try:
        raw = path.encode("utf-8", "surrogateescape")  # a file name's undecodable bytes
    except UnicodeEncodeError:
        raw = path.encode("utf-8", "backslashreplace")
    return quote(raw, safe="/")
