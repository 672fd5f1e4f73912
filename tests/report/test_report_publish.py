"""publish-check reporters: exact strings for text, json and github."""

from __future__ import annotations

import json

from gitevals.findings import Finding
from gitevals.git.pushes import Publication
from gitevals.lint import LintResult
from gitevals.lint.publish import Checked
from gitevals.report.publish import REPORTERS

SHA = "0123456789abcdef0123456789abcdef01234567"
BAD = Finding("evals/cases/a.yaml", 2, 3, "GE201", "bad: a,b")
REFUSED = Checked(Publication(SHA, ("refs/heads/main", "v1")), LintResult((BAD,), 4))
OK = Checked(Publication(SHA, ("HEAD",)), LintResult((), 4))


def test_text() -> None:
    assert REPORTERS["text"]([REFUSED, OK], ["refs/heads/gone"]) == (
        f"refused: refs/heads/main, v1 at {SHA}: 1 error\n"
        "  evals/cases/a.yaml:2:3: GE201 bad: a,b\n"
        f"ok: HEAD at {SHA} (4 eval files)\n"
        "ok: refs/heads/gone\n"
        "publish check: 1 of 2 revision(s) refused; fix the findings and commit: "
        "the commit is what is published, not the working tree\n")


def test_text_nothing_to_check() -> None:
    assert REPORTERS["text"]([], []) == "publish check: nothing to check\n"


def test_github_names_the_commit_and_its_refs() -> None:
    assert REPORTERS["github"]([REFUSED, OK], []) == (
        "::error file=evals/cases/a.yaml,line=2,col=3,title=GE201::"
        "bad: a,b (refs/heads/main, v1 at 0123456789ab)\n"
        "publish check: 1 of 2 revision(s) refused; fix the findings and commit: "
        "the commit is what is published, not the working tree\n")


def test_json_is_stable() -> None:
    out = REPORTERS["json"]([OK], ["refs/tags/x"])
    assert json.loads(out) == {
        "ok": True, "passed": ["refs/tags/x"],
        "revisions": [{"commit": SHA, "refs": ["HEAD"], "ok": True, "files": 4,
                       "findings": []}]}
    assert out.startswith('{\n  "ok": true,\n  "passed": [')
