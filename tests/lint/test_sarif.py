"""``gitevals lint --format sarif`` and ``publish-check --format sarif``: one run, a rule
per lint code, a result per finding at its file/line/column, within GitHub's ingestion
limits (25,000 results a run, 10 MB gzipped), cut with a note when they would be crossed.
Validation against the SARIF schema itself: test_sarif_schema.py."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from gitevals import jsontext
from gitevals.findings import Finding
from gitevals.lint.codes import CODES
from gitevals.report import sarif
from tests.conftest import Repo, run_cli
from tests.support.lint import GOOD, GRADER, MISSING, case

#: RFC 3986: what a URI reference may hold (unreserved, reserved, and ``%XX``).
URI_REF = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-F]{2})*$")


def run_of(text: str) -> Any:
    """The one run of a SARIF log."""
    doc = json.loads(text)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    return doc["runs"][0]


def test_lint_sarif_has_every_rule_and_the_finding_where_it_is(repo: Repo) -> None:
    repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers"),
                 "evals/cases/b.yaml": case("quality.answers").replace("trials: 2", "trials: 1")})
    r = run_cli("lint", "--format", "sarif", cwd=repo.path)
    assert (r.code, r.err) == (1, "")  # the exit code is lint's: an error is a failure
    run = run_of(r.out)
    driver = run["tool"]["driver"]
    assert driver["name"] == "gitevals"
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == [c.code for c in CODES]
    for rule, code in zip(rules, CODES, strict=True):
        assert code.fix in rule["help"]["text"] and code.meaning in rule["help"]["text"]
        assert rule["defaultConfiguration"]["level"] == code.severity
    results = run["results"]
    assert [(x["ruleId"], x["level"]) for x in results] == [("GE502", "error"),
                                                           ("GE405", "warning")]
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == "GE502"
    assert first["message"] == {"text": MISSING}
    [loc] = first["locations"]
    assert loc["physicalLocation"] == {
        "artifactLocation": {"uri": "evals/cases/a.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 6, "startColumn": 24}}
    assert "invocations" not in run  # nothing was cut


def test_a_clean_tree_is_a_run_without_results(repo: Repo) -> None:
    repo.commit(GOOD)
    r = run_cli("lint", "--format", "sarif", cwd=repo.path)
    assert (r.code, r.err) == (0, "")
    assert run_of(r.out)["results"] == []


def test_more_findings_than_a_run_may_hold_keep_the_errors_first(repo: Repo) -> None:
    """25,010 duplicate ids (errors) and one warning: GitHub refuses a run over 25,000
    results, so the log keeps 25,000 errors, leaves the warning out, and says so."""
    rows = '{"id": 1}\n' * 25_011
    repo.commit({"evals/cases/a.yaml": case().replace("trials: 2", "trials: 1"),
                 "evals/graders/quality.py": GRADER, "evals/goldens.jsonl": rows})
    r = run_cli("lint", "--format", "sarif", cwd=repo.path, timeout=300)
    assert r.code == 1
    run = run_of(r.out)
    results = run["results"]
    assert len(results) == sarif.MAX_RESULTS == 25_000
    assert {x["ruleId"] for x in results} == {"GE606"}
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    note = ("the SARIF log holds 25,000 of 25,011 findings (errors first): GitHub code "
            "scanning refuses a run of more than 25,000 results or 10,000,000 bytes gzipped; "
            "fix these and lint again, or lint fewer paths")
    assert r.err == f"gitevals: {note}\n"
    [invocation] = run["invocations"]
    assert invocation["toolExecutionNotifications"] == [
        {"level": "warning", "message": {"text": note}}]


def test_a_log_over_10_mb_gzipped_is_cut_to_fit() -> None:
    """Findings whose messages do not compress: the full log would be about 10.6 MB
    gzipped; the log written is under 10,000,000 bytes gzipped (fastest and default
    levels), and says what it left out."""
    findings = [Finding(f"evals/cases/c{i:05}.yaml", 1 + i % 50, 1, "GE201",
                        base64.b64encode(os.urandom(5_250)).decode())
                for i in range(2_000)]
    log = sarif.render([sarif.Located(f) for f in findings])
    assert 0 < log.kept < log.total == 2_000
    raw = log.text.encode("utf-8")
    assert len(gzip.compress(raw, compresslevel=6)) <= sarif.MAX_GZIPPED
    fastest = len(gzip.compress(raw, compresslevel=1))  # deterministic: compressed once
    assert 0.9 * sarif.MAX_GZIPPED < fastest <= sarif.MAX_GZIPPED  # fits, and not cut far
    run = run_of(log.text)
    assert len(run["results"]) == log.kept
    assert log.note is not None and f"holds {log.kept:,} of 2,000 findings" in log.note
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"] == log.note


def test_hostile_paths_and_messages_stay_inert() -> None:
    names = ["evals/cases/a b#c?d.yaml", "evals/cases/x:y.yaml", "evals/cases/é\x1b[31m.yaml",
             "evals/cases/\udcff.yaml", "evals/cases/100%.yaml"]
    findings = [Finding(n, 3, 4, "GE201", "unknown key '[click](https://evil.example)'\x1b[2J")
                for n in names]
    run = run_of(sarif.render([sarif.Located(f) for f in findings]).text)
    uris = [x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for x in run["results"]]
    for name, uri in zip(names, uris, strict=True):
        assert URI_REF.match(uri), uri
        parts = urlsplit(uri)
        assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", "")
        assert unquote(parts.path, errors="surrogateescape") == name
    message = run["results"][0]["message"]["text"]
    assert message == r"unknown key '\[click\](https://evil.example)'\\x1b\[2J"
    assert "\x1b" not in message
    plain = sarif.message_text("unknown key 'bogus' in scenarios[0]")
    assert plain == "unknown key 'bogus' in scenarios[0]"  # no link possible: as written


def test_an_unregistered_code_gets_a_rule() -> None:
    run = run_of(sarif.render([sarif.Located(Finding("x.yaml", 1, 1, "GE999", "m"))]).text)
    rules = run["tool"]["driver"]["rules"]
    assert rules[-1]["id"] == "GE999" and run["results"][0]["ruleIndex"] == len(rules) - 1


def test_publish_check_sarif_names_the_commit(repo: Repo) -> None:
    sha = repo.commit({**GOOD, "evals/cases/a.yaml": case("nope.answers")})
    repo.git("tag", "v1")
    r = run_cli("publish-check", "v1", "--format", "sarif", cwd=repo.path)
    assert (r.code, r.err) == (1, "")
    [result] = run_of(r.out)["results"]
    assert result["ruleId"] == "GE502"
    assert result["message"]["text"] == f"{MISSING} (v1 at {sha[:12]})"
    assert result["properties"] == {"commit": sha, "refs": ["v1"]}



#: What the log's writer must spell as the standard library does: empty and nested
#: containers, booleans (integers in Python), null, integers, floats with NaN and the
#: infinities, and strings with quotes, backslashes, controls, non-ASCII and surrogates.
JSON_VALUES: list[Any] = [
    {}, [], "", 0, -7, 10**30, True, False, None, 1.5, -0.0, 1e300, float("nan"),
    float("inf"), float("-inf"), 'a"b\\c\n\t\x00\x1f\x7f é ☃ \ud800 \udcff',
    {"a": [], "b": {}, "c": [{}], "d": [[1, [2, {"e": None}]], True], "": {"": ""}},
    [1, "x", [True, False, None, [], {}], {"k": [1.25, {"z": "\u2028"}]}],
]


def test_the_log_is_written_as_json_dumps_would_indent_it() -> None:
    """The log's writer (``jsontext.dumps`` at indent 2, keys in the order built) gives
    the standard library's text, byte for byte."""
    for value in [*JSON_VALUES, JSON_VALUES]:
        assert jsontext.dumps(value, indent=2, sort_keys=False) == json.dumps(
            value, indent=2, ensure_ascii=False), value


def test_a_real_log_is_written_as_json_dumps_would_indent_it() -> None:
    findings = [Finding("evals/cases/\udcffa b.yaml", 3, 4, "GE999", "é\x1b[31m [x](1) \ud800"),
                Finding("evals/goldens.jsonl", 2, 1, "GE606", "duplicate id 1")]
    log = sarif.render([sarif.Located(f, " (at abc)", {"tags": [], "n": 1.5, "x": None})
                        for f in findings])
    doc = json.loads(log.text)
    assert log.text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
