"""``gitevals show`` and the verdict reporters: exact text, JSON, JUnit, Markdown."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from gitevals.report.runs import render, rich_text, summary
from gitevals.report.runs import rows as table_rows
from tests.conftest import Repo, run_cli
from tests.support.artifacts import PARIS, artifact, result, sample, scenario, transcript

SHA = "1" * 40
TITLE = f"run 20261129T220000Z-{SHA[:12]}-a1b2c3 of HEAD ({SHA[:12]})"
TEXT = f"""\
{TITLE}
case   scenario  verdict  passes  duration  first failure
tone   capital   pass     2/2     6 ms
tone   flaky     flaky    1/2     6 ms      final_answer_contains 'Paris': not in the answer 'Lyon'
tone   wrong     fail     0/2     6 ms      final_answer_contains 'Paris': not in the answer 'Lyon'
tools  crashes   broken   0/1     3 ms      target_crash: exited with status 1
underpowered: 2 of 4 scenarios cannot show a 20-point drop beyond noise with their trials \
(`gitevals plan` says how many they need)
1 pass, 1 flaky, 1 fail, 1 broken
"""
MARKDOWN = f"""\
**gitevals** {TITLE}

**1 pass, 1 flaky, 1 fail, 1 broken**

| case | scenario | verdict | passes | duration | first failure |
|---|---|---|---|---|---|
| tone | capital | ✅ pass | 2/2 | 6 ms |  |
| tone | flaky | ⚠️ flaky | 1/2 | 6 ms | final_answer_contains 'Paris': not in the answer 'Lyon' |
| tone | wrong | ❌ fail | 0/2 | 6 ms | final_answer_contains 'Paris': not in the answer 'Lyon' |
| tools | crashes | 💥 broken | 0/1 | 3 ms | target_crash: exited with status 1 |
"""
LYON = "final_answer_contains 'Paris': not in the answer 'Lyon'"


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, sort_keys=True, indent=1))
    return path


# -- reporters ---------------------------------------------------------------------


def test_text() -> None:
    assert render(sample(), "text") == TEXT


def test_markdown() -> None:
    assert render(sample(), "markdown") == MARKDOWN


def test_json_is_the_sorted_verdict_table() -> None:
    out = render(sample(), "json")
    doc = json.loads(out)
    assert out == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert doc["summary"] == {"pass": 1, "flaky": 1, "fail": 1, "broken": 1, "not_run": 0}
    assert doc["scenarios"][3] == {"case": "tools", "scenario": "crashes", "verdict": "broken",
                                   "passes": 0, "trials": 1, "errors": {"target_crash": 1},
                                   "duration_ms": 3,
                                   "first_failure": "target_crash: exited with status 1",
                                   "usage": nothing_reported(1), "underpowered": False}
    assert doc["scenarios"][0]["first_failure"] is None
    assert doc["scenarios"][0]["underpowered"]  # 2 trials cannot show a 20-point drop
    assert (doc["run_id"], doc["commit"], doc["interrupted"]) == (sample()["run_id"], SHA, False)


def nothing_reported(trials: int) -> dict[str, Any]:
    return {"prompt_tokens": None, "completion_tokens": None, "cost": None, "trials": trials,
            "reported": {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0}}


def with_not_run() -> dict[str, Any]:
    art = sample()
    art["cases"][1]["scenarios"].append(scenario("later", PARIS, []))
    return art


def test_junit_loads_in_junitparser(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(render(with_not_run(), "junit"))
    suites = {s.name: s for s in JUnitXml.fromfile(str(path))}
    assert sorted(suites) == ["tone", "tools"]
    tone = {c.name: c for c in suites["tone"]}
    assert suites["tone"].tests == 3 and suites["tone"].failures == 2
    assert tone["capital"].is_passed
    flaky = tone["flaky"].result[0]
    assert isinstance(flaky, Failure)
    assert (flaky.message, flaky.type) == (LYON, "flaky")
    assert isinstance(tone["wrong"].result[0], Failure)
    tools = {c.name: c for c in suites["tools"]}
    broken = tools["crashes"].result[0]
    assert isinstance(broken, Error)
    assert broken.message == "target_crash: exited with status 1"
    assert isinstance(tools["later"].result[0], Skipped)
    assert suites["tools"].errors == 1 and suites["tools"].skipped == 1


def test_junit_loads_in_elementtree() -> None:
    root = ET.fromstring(render(with_not_run(), "junit"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"),
            root.get("skipped")) == ("5", "2", "1", None)  # junit-10.xsd: no "skipped" here
    cases = {(tc.get("classname"), tc.get("name")): [c.tag for c in tc]
             for tc in root.iter("testcase")}
    assert cases == {("tone", "capital"): [], ("tone", "flaky"): ["failure"],
                     ("tone", "wrong"): ["failure"], ("tools", "crashes"): ["error"],
                     ("tools", "later"): ["skipped"]}
    failure = root.find("testsuite/testcase[@name='wrong']/failure")
    assert failure is not None
    assert failure.text == f"fail: 0/2 trials passed\nfirst failure: {LYON}"


HOSTILE = "a|b <script>\n\x1b[31mred\x1b[0m \x00"


def hostile() -> dict[str, Any]:
    expect = [{"final_answer_contains": "Paris"}]
    crash = {"kind": "target_protocol", "message": HOSTILE}
    return artifact({"x|y": [scenario("s", expect, [result(0, expect, transcript(),
                                                           error=crash)])]})


def test_markdown_escapes_pipes_and_html() -> None:
    out = render(hostile(), "markdown")
    assert ("| x\\|y | s | 💥 broken | 0/1 | 3 ms | target_protocol: a\\|b \\<script> \\[31mred "
            "\\[0m |") in out


def test_text_and_junit_carry_no_control_characters() -> None:
    text = render(hostile(), "text")
    assert "\x1b" not in text and "\x00" not in text
    assert "target_protocol: a|b <script> [31mred [0m" in text
    root = ET.fromstring(render(hostile(), "junit"))  # XML 1.0 would refuse \x00 and \x1b
    assert root.find(".//error") is not None


def test_rich_text_on_a_terminal_colours_verdicts() -> None:
    out = rich_text(sample(), width=120)
    assert "\x1b[" in out
    assert "1 pass, 1 flaky, 1 fail, 1 broken" in out
    for verdict in ("pass", "flaky", "fail", "broken"):
        assert verdict in out


def test_rich_text_in_80_columns_keeps_the_first_failure_readable() -> None:
    """Long scenario names fold; the failure keeps a readable width (it was squeezed to
    three characters a line)."""
    bad = transcript("Lyon")
    long_id = "uses-the-shell-rather-than-guessing-the-answer"
    art = artifact({"basics": [scenario(long_id, PARIS, [result(0, PARIS, bad)])]})
    out = re.sub(r"\x1b\[[0-9;]*m", "", rich_text(art, width=80))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("case"))
    assert header.rstrip().endswith("first failure")
    column = header.index("first failure")
    failure = " ".join(line[column:].strip() for line in lines[lines.index(header) + 1:]
                       if len(line) > column and line[column:].strip()
                       and not line.startswith(("1 pass", "0 pass", "underpowered",
                                                "calibration", "their")))
    assert "final_answer_contains 'Paris': not in the answer 'Lyon'" in failure
    assert len(header) - column >= 24


def test_summary_mentions_not_run_only_when_some() -> None:
    assert summary(table_rows(sample())) == "1 pass, 1 flaky, 1 fail, 1 broken"
    assert summary(table_rows(with_not_run())).endswith(", 1 not run")


def test_interrupted_and_empty_runs() -> None:
    art = artifact({})
    art["interrupted"] = True
    assert render(art, "text") == f"{TITLE}, interrupted\nno scenarios\n0 pass, 0 flaky, " \
        "0 fail, 0 broken\n"
    assert ET.fromstring(render(art, "junit")).get("tests") == "0"


# -- gitevals show --------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "expected"), [("text", TEXT), ("markdown", MARKDOWN)])
def test_show_artifact_path(repo: Repo, fmt: str, expected: str) -> None:
    path = write(repo.path / "run.json", sample())
    res = run_cli("show", str(path), "--format", fmt, cwd=repo.path)
    assert (res.code, res.out, res.err) == (1, expected, "")


def test_show_all_pass_exits_zero(repo: Repo) -> None:
    ok = artifact({"a": [scenario("s", PARIS, [result(0, PARIS, transcript())])]})
    path = write(repo.path / "run.json", ok)
    res = run_cli("show", str(path), "--format", "json", cwd=repo.path)
    assert res.code == 0
    assert json.loads(res.out)["summary"]["pass"] == 1


def pinned(sha: str, answer: str, started: str, finished: str, run_hex: str) -> dict[str, Any]:
    """A run of ``sha`` started/finished at ``hh:mm`` on 2026-11-29."""
    run_id = f"20261129T{started.replace(':', '')}00Z-{sha[:12]}-{run_hex}"
    results = [result(0, PARIS, transcript(answer))]
    doc = artifact({"tone": [scenario("capital", PARIS, results)]}, commit=sha, run_id=run_id,
                   finished_at=f"2026-11-29T{finished}:00Z")
    doc["started_at"] = f"2026-11-29T{started}:00Z"
    return doc


def test_show_revision_picks_the_run_that_finished_last(repo: Repo) -> None:
    old = repo.commit({"evals/cases/a.yaml": "scenarios: []\n"})
    head = repo.commit({"README": "x"})
    results = repo.path / "evals/results"
    long_run = pinned(head, "Lyon", "21:00", "23:30", "aaaaaa")
    short_run = pinned(head, "Paris", "22:00", "22:05", "bbbbbb")
    other = pinned(old, "Paris", "23:00", "23:59", "cccccc")
    for doc in (long_run, short_run, other):
        write(results / f"{doc['run_id']}.json", doc)
    res = run_cli("show", cwd=repo.path)
    assert res.code == 1, res.err
    assert long_run["run_id"] in res.out
    res = run_cli("show", "HEAD~1", cwd=repo.path)
    assert (res.code, other["run_id"] in res.out) == (0, True)


def test_show_revision_reads_the_git_note(repo: Repo) -> None:
    head = repo.commit({"README": "x"})
    doc = pinned(head, "Lyon", "21:00", "21:10", "dddddd")
    # a note's run is evidence only when pinned to the commit it is on: tree and files
    doc["tree"], doc["files"] = repo.git("rev-parse", "HEAD^{tree}").strip(), {}
    repo.git("notes", "--ref=refs/notes/gitevals", "add", "-F", "-", head,
             input=json.dumps(doc))
    res = run_cli("show", "main", "--format", "json", cwd=repo.path)
    assert res.code == 1, res.err
    assert json.loads(res.out)["run_id"] == doc["run_id"]


def test_show_without_a_run_says_how_to_make_one(repo: Repo) -> None:
    head = repo.commit({"README": "x"})
    res = run_cli("show", cwd=repo.path)
    assert res.code == 2
    assert res.out == ""
    assert res.err == (f"gitevals: error: no run of HEAD ({head[:12]}) in evals/results/ or "
                       f"its git note: make one with `gitevals run --rev {head}`\n")


def test_show_bad_artifact_is_one_line(repo: Repo) -> None:
    (repo.path / "x.json").write_text('{"format": "gitevals-run/1"}')
    res = run_cli("show", "x.json", cwd=repo.path)
    assert res.code == 2
    assert res.err == ("gitevals: error: x.json: not a gitevals run artifact: at $: "
                       "'run_id' is a required property; see schemas/result.schema.json\n")


def test_show_unknown_revision(repo: Repo) -> None:
    repo.commit({"README": "x"})
    res = run_cli("show", "nope", cwd=repo.path)
    assert res.code == 2
    assert "unknown revision 'nope'" in res.err
