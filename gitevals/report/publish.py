"""Reporters for a finished ``publish-check``: the checked commits, then the passed refs.

``REPORTERS`` maps a ``--format`` name to its function; each takes the checked
commits (in check order) and the refs that passed without a check (deletions), and
returns the text to print. Findings are printed as ``gitevals lint`` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gitevals.report.findings import annotation
from gitevals.text import visible

if TYPE_CHECKING:
    from gitevals.jsontypes import JSONObject
    from gitevals.lint.publish import Checked
    from gitevals.report.sarif import Log


def text(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """``refused``/``ok`` per commit with its refs, each finding as ``path:line:col: CODE msg``."""
    lines = []
    for c in checked:
        lines.append(_verdict(c))
        lines.extend(f"  {f}" for f in sorted(c.result.findings))
    lines.extend(f"ok: {visible(p)}" for p in passed)
    lines.append(summary(checked))
    return "\n".join(lines) + "\n"


def _verdict(c: Checked) -> str:
    refs = visible(", ".join(c.publication.refs))  # a ref name is data from the push
    if c.ok:
        return f"ok: {refs} at {c.publication.commit} ({c.result.files} eval files)"
    n = c.result.errors
    return f"refused: {refs} at {c.publication.commit}: {n} error{'s' if n != 1 else ''}"


def summary(checked: Sequence[Checked]) -> str:
    """``publish check: 2 revision(s) ok`` or how many were refused and what to do."""
    refused = sum(1 for c in checked if not c.ok)
    if not checked:
        return "publish check: nothing to check"
    if not refused:
        return f"publish check: {len(checked)} revision(s) ok"
    return (f"publish check: {refused} of {len(checked)} revision(s) refused; fix the "
            "findings and commit: the commit is what is published, not the working tree")


def as_json(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """A stable document: revisions in check order, findings sorted, keys sorted."""
    doc: JSONObject = {
        "ok": all(c.ok for c in checked),
        "revisions": [
            {"commit": c.publication.commit, "refs": list(c.publication.refs), "ok": c.ok,
             "files": c.result.files,
             "findings": [f.as_dict() for f in sorted(c.result.findings)]}
            for c in checked
        ],
        "passed": list(passed),
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def github(checked: Sequence[Checked], passed: Sequence[str]) -> str:
    """GitHub workflow annotations, one per finding, naming the commit and its refs."""
    lines: list[str] = []
    for c in checked:
        where = f"{', '.join(c.publication.refs)} at {c.publication.commit[:12]}"
        lines.extend(annotation(f, f"{f.message} ({where})") for f in sorted(c.result.findings))
    lines.append(summary(checked))
    return "\n".join(lines) + "\n"


def sarif_log(checked: Sequence[Checked]) -> Log:
    """SARIF for code scanning: each finding a result naming its commit and refs (in its
    message, as ``github`` does, and as properties)."""
    from gitevals.report.sarif import Located, render

    return render([Located(f, f" ({', '.join(c.publication.refs)} at "
                              f"{c.publication.commit[:12]})",
                           {"commit": c.publication.commit, "refs": list(c.publication.refs)})
                   for c in checked for f in sorted(c.result.findings)])


REPORTERS: dict[str, Callable[[Sequence[Checked], Sequence[str]], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}
