"""Goldens as the regression suite, end to end: the real CLI on real repositories."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo, run_cli
from tests.support.goldens_run import GOLDENS, SETTINGS, artifacts, golden, rates, setup


def test_a_run_of_every_case_sends_the_goldens_and_rates_each_bucket(repo: Repo) -> None:
    commit = setup(repo)
    res = run_cli("run", cwd=repo.path)
    assert res.code == 1, res.err  # f3 and t2 fail
    (artifact,) = artifacts(repo)
    assert rates(artifact) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}
    part = artifact["goldens"]
    assert part["graders"] == {"format": "checks.exact", "tone": "checks.polite"}
    blob = repo.git("rev-parse", f"{commit}:evals/goldens.jsonl")
    assert part["files"]["evals/goldens.jsonl"] == blob == artifact["files"]["evals/goldens.jsonl"]
    by_id = {it["id"]: it for it in part["items"]}
    assert by_id["f4"]["transcript"]["final_answer"] == "answer: d"
    sent = [t["echo"] for t in by_id["f4"]["transcript"]["turns"]]
    assert [(m["text"], m["turn"], m["case"], m["scenario"]) for m in sent] == [
        ("x", 0, "goldens", "f4"), ("d", 1, "goldens", "f4")]
    assert by_id["t1"]["answer"]["raw"]["why"] == "t1"  # the row reached the grader as `case`
    assert not by_id["f3"]["passed"] and "judged fail" in by_id["f3"]["outcome"]["message"]
    assert "bucket format" in res.out and "3/4" in res.out and "75.0%" in res.out
    assert "bucket tone" in res.out and "1/2" in res.out and "50.0%" in res.out
    # the case ran too, and its verdict is there beside the buckets
    assert artifact["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "pass"


def test_bucket_and_goldens_only_select_what_is_sent(repo: Repo) -> None:
    setup(repo)
    res = run_cli("run", "--goldens-only", "--bucket", "tone", "--no-note", cwd=repo.path)
    assert res.code == 1, res.err
    (artifact,) = artifacts(repo)
    assert artifact["cases"] == [] and artifact["options"]["goldens_only"] is True
    assert rates(artifact) == {"bucket:tone": (1, 2)}
    assert artifact["goldens"]["buckets"] == ["tone"]


def test_junit_has_a_testsuite_per_bucket(repo: Repo) -> None:
    import xml.etree.ElementTree as ET

    setup(repo)
    res = run_cli("run", "--goldens-only", "--no-note", "--format", "junit", cwd=repo.path)
    assert res.code == 1, res.err
    suites = {s.get("name"): s for s in ET.fromstring(res.out).iter("testsuite")}
    assert {n: (s.get("tests"), s.get("failures")) for n, s in suites.items()} == {
        "bucket format": ("4", "1"), "bucket tone": ("2", "1")}
    failed = [tc.get("name") for tc in suites["bucket format"].iter("testcase")
              if tc.find("failure") is not None]
    assert failed == ["f3"]


def test_named_cases_send_no_goldens_unless_asked(repo: Repo) -> None:
    setup(repo)
    assert run_cli("run", "basics", "--no-note", cwd=repo.path).code == 0
    assert "goldens" not in artifacts(repo)[0]
    res = run_cli("run", "basics", "--goldens", "--no-note", cwd=repo.path)
    assert res.code == 1
    assert rates(artifacts(repo)[-1]) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}


def test_an_unknown_bucket_is_one_line_and_exit_2(repo: Repo) -> None:
    setup(repo)
    res = run_cli("run", "--bucket", "nope", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        "gitevals: error: unknown bucket 'nope': mapped buckets are format, tone"]


def test_a_bucket_without_a_grader_is_a_finding_and_is_not_run(repo: Repo) -> None:
    goldens = GOLDENS + golden("s1", "safety", "hi", "answer: hi") + "\n"
    setup(repo, goldens)
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1
    assert ("evals/goldens.jsonl:7:1: GE610 bucket 'safety' has no grader: map it in "
            "[tool.gitevals.goldens] graders") in lint.out
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 1
    assert "the goldens do not lint and were not run" in res.err
    assert "goldens" not in artifacts(repo)[0]


def test_mapping_lint_row_without_bucket_and_unresolved_grader(repo: Repo) -> None:
    settings = SETTINGS.replace("checks.polite", "checks.polit")
    goldens = GOLDENS + golden("n1", None, "hi", "x") + "\n" + json.dumps(
        {"id": "n2", "bucket": "format", "input": 3}) + "\n"
    setup(repo, goldens, settings)
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert "evals/goldens.jsonl:7:1: GE611 row has no \"bucket\"" in res.out
    assert "evals/goldens.jsonl:8:1: GE613 \"input\" is not a string" in res.out
    line = next(ln for ln in res.out.splitlines() if "GE504" in ln)
    assert line.startswith("pyproject.toml:5:44: GE504 no function 'polit' in "
                           "evals/graders/checks.py"), line


def test_a_mapped_bucket_without_rows_warns_and_no_goldens_file_is_an_error(repo: Repo) -> None:
    settings = SETTINGS.replace('tone = "checks.polite"',
                                'tone = "checks.polite", safety = "checks.exact"')
    setup(repo, settings=settings)
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out
    assert ("pyproject.toml:5:70: GE612 (warning) bucket 'safety' is mapped to a grader but "
            "no golden is in it") in res.out
    repo.remove("evals/goldens.jsonl")
    repo.commit()
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    assert "pyproject.toml:5:21: GE614 graders are mapped to buckets but " in res.out


def test_tree_data_in_the_bucket_table_is_escaped(repo: Repo) -> None:
    goldens = golden("\x1b]0;pwned\x07x", "format\x1b[2J", "a", "nope") + "\n"
    settings = SETTINGS.replace('format = "checks.exact"', '"format\\u001b[2J" = "checks.exact"')
    setup(repo, goldens, settings.replace(', tone = "checks.polite"', ""))
    res = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path)
    assert res.code == 1, res.err
    assert "\x1b" not in res.out
    assert "bucket format\\x1b[2J" in res.out
    assert "not passed: bucket format\\x1b[2J id \\x1b]0;pwned\\x07x" in res.out


def test_goldens_without_a_mapping_is_one_line_and_exit_2(repo: Repo) -> None:
    setup(repo, settings=SETTINGS.split("[tool.gitevals.goldens]")[0])
    res = run_cli("run", "--goldens", cwd=repo.path)
    assert res.code == 2
    assert res.err.startswith("gitevals: error: no goldens to run in HEAD")
    assert len(res.err.strip().splitlines()) == 1


def test_a_python_target_is_imported_once_for_the_cases_and_the_goldens(
        repo: Repo, tmp_path: Path) -> None:
    """The goldens share the run's supervisor and the python target's warm worker: the
    import the preflight paid serves the cases and every golden (the goldens started a
    supervisor and a worker of their own, importing the module a second time)."""
    imports = tmp_path / "imports.txt"
    agent = (f"import os\nwith open({str(imports)!r}, 'a') as f:\n"
             "    f.write(str(os.getpid()) + '\\n')\n\n\n"
             "def respond(messages):\n"
             "    return {'final_answer': 'answer: ' + messages[-1]['text']}\n")
    settings = SETTINGS.replace(SETTINGS.split("\n\n")[0],
                                '[tool.gitevals.target]\npython = "agent:respond"')
    setup(repo, settings=settings, extra={"agent.py": agent, ".gitignore": ".venv/\n"})
    for options in ((), ("--goldens-only",)):
        imports.write_text("")
        res = run_cli("run", *options, "--no-note", cwd=repo.path)
        assert res.code == 1, res.err  # f3 and t2 fail, as with the command harness
        assert rates(artifacts(repo)[-1]) == {"bucket:format": (3, 4), "bucket:tone": (1, 2)}
        assert len(imports.read_text().split()) == 1, options
