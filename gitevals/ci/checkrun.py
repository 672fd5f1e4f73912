"""The JUnit results as a GitHub check run: its conclusion and title from the diff's exit
code and the JUnit counts, the diff as its summary, and an annotation on the case file
at each scenario that regressed (or failed, or could not run), through the Checks API.

Pure: reading our JUnit files into results, turning them into annotations and the
requests' bodies within GitHub's limits (50 annotations a request, 65,535 characters of
summary). The IO (files, the case files' lines, the API) is :func:`publish`.

Why our own step rather than a test-reporter action: a reporter maps a testcase to a
source file by its class name, which for gitevals is a case name, not a path; here each
annotation lands on the scenario's line in its case file. And no third party's code runs
with a token that can write checks.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gitevals.ci import comment
from gitevals.errors import UsageError
from gitevals.jsontypes import JSON, JSONObject

#: The Checks API takes at most 50 annotations a request; more go in later updates.
PER_REQUEST = 50
#: Annotations sent at most (20 requests); the summary says how many were left out.
MAX_ANNOTATIONS = 1000
#: ``output.summary`` and ``output.text`` hold at most 65,535 characters.
SUMMARY_LIMIT = 65_535
#: An annotation's message is cut to this many characters (the API allows 64 KB).
MESSAGE_LIMIT = 4_000
#: A JUnit file larger than this is refused rather than read.
MAX_JUNIT = 64 * 1024 * 1024
#: The annotation level of each kind of result, by the file it came from.
LEVELS = {("diff", "failure"): "failure", ("run", "failure"): "notice",
          ("run", "error"): "warning"}


@dataclass(frozen=True)
class Result:
    """One JUnit testcase that did not pass: where it came from (``diff`` or ``run``), its
    suite (a case name, or ``suite``), its name (a scenario), failure or error, and what
    it said."""

    source: str
    suite: str
    name: str
    outcome: str
    message: str


@dataclass(frozen=True)
class Counts:
    tests: int
    failures: int
    errors: int
    skipped: int


def read_junit(text: str, path: str) -> tuple[str, Counts, list[Result]]:
    """Which file it is (``diff``: ``gitevals diff --format junit``'s, whose root is named
    ``gitevals diff A..B``; else ``run``), its counts and its failing testcases."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UsageError(f"{path}: not JUnit XML ({exc}): give the file `gitevals diff "
                         "--format junit` or `gitevals run --format junit` wrote") from None
    source = "diff" if root.get("name", "").startswith("gitevals diff ") else "run"
    results: list[Result] = []
    tests = skipped = 0
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            tests += 1
            skipped += case.find("skipped") is not None
            for outcome in ("failure", "error"):
                found = case.find(outcome)
                if found is not None:
                    said = found.get("message") or (found.text or "").strip() or outcome
                    results.append(Result(source, suite.get("name", ""), case.get("name", ""),
                                          outcome, said))
    failures = sum(r.outcome == "failure" for r in results)
    return source, Counts(tests, failures, len(results) - failures, skipped), results


def scenario_line(text: str, scenario: str) -> int:
    """The line of ``- id: <scenario>`` in a case file's text (1 when not found)."""
    wanted = re.compile(r"^\s*(?:-\s+)?id:\s*(['\"]?)" + re.escape(scenario) + r"\1\s*(#.*)?$")
    for number, line in enumerate(text.splitlines(), 1):
        if wanted.match(line):
            return number
    return 1


def annotation(result: Result, where: tuple[str, int]) -> JSONObject:
    """One annotation at ``where`` (path, line) in the Checks API's shape."""
    path, line = where
    what = {"diff": "regressed beyond noise", "run": "failed in the head's run"}[result.source]
    if result.outcome == "error":
        what = "could not run in the head's run"
    message = result.message
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT] + "..."
    return {"path": path, "start_line": line, "end_line": line,
            "annotation_level": LEVELS[(result.source, result.outcome)],
            "title": f"{result.suite}/{result.name}: {what}"[:255], "message": message}


def annotate(results: Sequence[Result],
                locate: Callable[[str, str], tuple[str, int] | None]) -> list[JSONObject]:
    """An annotation per result that names a scenario of a case file ``locate`` finds;
    the diff's first, each scenario once (the diff's result wins over the run's)."""
    seen: set[tuple[str, str]] = set()
    out: list[JSONObject] = []
    for r in sorted(results, key=lambda r: r.source != "diff"):
        where = locate(r.suite, r.name) if r.suite not in ("suite", "goldens slices") else None
        if where is None or (r.suite, r.name) in seen:
            continue
        seen.add((r.suite, r.name))
        out.append(annotation(r, where))
    return out


def conclusion(exit_code: int) -> str:
    return "success" if exit_code == 0 else "failure"


def title(exit_code: int, diff: Counts | None, run: Counts | None) -> str:
    """One line: the verdict, and what the JUnit files counted."""
    head = {0: "passed", 1: "failed"}.get(exit_code, "could not compare")
    parts = []
    if diff is not None:
        parts.append(f"{diff.failures} of {diff.tests} diff results regressed beyond noise")
    if run is not None:
        parts.append(f"head run: {run.tests - run.failures - run.errors - run.skipped} of "
                     f"{run.tests} scenarios passed")
    return f"gitevals diff {head}" + (f": {'; '.join(parts)}" if parts else "")


def summary(markdown: str, exit_code: int, where: str, fail_on: str, left_out: int) -> str:
    """The verdict line and the diff's markdown within the 65,535-character limit."""
    note = (f"\n\n_{left_out:,} more annotations were left out (at most "
            f"{MAX_ANNOTATIONS:,} are sent)._\n") if left_out else ""
    room = SUMMARY_LIMIT - comment.units(note)
    return comment.body(markdown, exit_code, room, where, marker="", fail_on=fail_on) + note


def requests(name: str, sha: str, exit_code: int, title_line: str, summary_text: str,
             notes: Sequence[JSONObject]) -> Iterator[JSONObject]:
    """The bodies to send: the check run's creation with the first 50 annotations, then
    an update per further 50; the last one completes it with its conclusion."""
    batches = [list(notes[i:i + PER_REQUEST]) for i in range(0, len(notes), PER_REQUEST)]
    batches = batches or [[]]
    for i, batch in enumerate(batches):
        last = i == len(batches) - 1
        items: list[JSON] = list(batch)
        output: JSONObject = {"title": title_line, "summary": summary_text,
                              "annotations": items}
        body: JSONObject = {"output": output}
        if i == 0:
            body.update(name=name, head_sha=sha)
        if last:
            body.update(status="completed", conclusion=conclusion(exit_code))
        else:
            body["status"] = "in_progress"
        yield body


def head_sha(event: Mapping[str, JSON], env: Mapping[str, str]) -> str:
    """The commit the check belongs to: a pull request's head (GITHUB_SHA is its merge
    commit, which the pull request does not show), else GITHUB_SHA."""
    pr = event.get("pull_request")
    head = pr.get("head") if isinstance(pr, dict) else None
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha if isinstance(sha, str) and sha else env.get("GITHUB_SHA", "")
