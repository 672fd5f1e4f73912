"""``gitevals calibrate`` and what its record does to lint and runs: a real repo, the real
CLI, and the OpenAI-compatible judge of ``test_judge`` on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitevals.calibration.metrics import split_of, wilson
from tests.conftest import Repo, run_cli
from tests.support.calibration import (
    CASE,
    FAIR,
    JUDGED,
    ONE_JOB,
    answer,
    judge_settings,
    labels,
    setup,
)
from tests.support.calibration_records import record
from tests.support.judges import FakeJudge


def _split_counts(n: int, split: str, pass_share: float = 0.9) -> tuple[int, int]:
    """(labelled pass, labelled fail) among ``labels(n)`` items in ``split``."""
    pos = neg = 0
    for i in range(n):
        if split_of(f"item-{i}") == split:
            if i < round(n * pass_share):
                pos += 1
            else:
                neg += 1
    return pos, neg


def test_an_always_pass_judge_shows_tpr_1_and_tnr_0_never_an_accuracy(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, " pass\n")  # case and whitespace are tolerated
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", cwd=repo.path)
    pos, neg = _split_counts(200, "dev")
    assert pos > 0 and neg > 0
    lo_p, hi_p = wilson(pos, pos) or (0, 0)
    lo_n, hi_n = wilson(0, neg) or (0, 0)
    assert f"TPR 1.00 [{lo_p:.2f}, {hi_p:.2f}]  {pos} of {pos} labelled pass judged PASS" \
        in res.out, res.out + res.err
    assert f"TNR 0.00 [{lo_n:.2f}, {hi_n:.2f}]  0 of {neg} labelled fail judged FAIL" in res.out
    assert "accura" not in (res.out + res.err).lower()
    record = json.loads((repo.path / "evals/calibration/q.tone.json").read_text())
    assert record["tpr"]["value"] == 1.0 and record["tnr"]["value"] == 0.0
    assert (record["tpr"]["hits"], record["tpr"]["of"]) == (pos, pos)
    assert record["final"] is False and record["split"] == "dev"
    assert record["judge_model"] == "judge-2026-01-15" and record["base_url"] == judge.url
    assert record["grader_blob"] == repo.git("rev-parse", "HEAD:evals/graders/q.py")
    assert sum(record["splits"].values()) == 200
    assert "accura" not in json.dumps(record).lower()
    assert res.code == 1  # dev numbers below the bar: said, and the exit code says so
    doc = json.loads(run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl",
                             "--format",
                             "json", cwd=repo.path).out)
    assert doc["record"]["tnr"]["of"] == neg and doc["status"]["status"] == "advisory"


def test_fewer_than_100_labels_are_refused_saying_how_many_more(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    (repo.path / "few.jsonl").write_text(labels(93) + '{"id": "x", "note": "no label"}\n')
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "few.jsonl", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip() == ("gitevals: error: few.jsonl: 93 labelled items; calibration "
                               "needs at least 100: label 7 more")
    assert not judge.requests


@pytest.mark.parametrize(("line", "where"), [
    ('{"id": 1, "label": "maybe"}', "bad.jsonl:2:1: label 'maybe' is neither pass nor fail"),
    ('{"id": 1, "label": "pass"', "bad.jsonl:2:"),
    ('{"id": "item-0", "label": "fail"}', "bad.jsonl:2:1: id 'item-0' is already used on line 1"),
], ids=["bad-label", "not-json", "duplicate-id"])
def test_a_bad_labels_file_is_one_line_with_its_position(
        repo: Repo, judge: FakeJudge, line: str, where: str) -> None:
    setup(repo, judge)
    rows = labels(120).splitlines()
    (repo.path / "bad.jsonl").write_text("\n".join([rows[0], line, *rows[1:]]) + "\n")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "bad.jsonl", cwd=repo.path)
    assert res.code == 2 and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert where in res.err


def test_a_second_final_is_refused_and_the_record_kept(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "PASS")
    first = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                    cwd=repo.path)
    assert first.code == 0, first.out + first.err
    assert "status: calibrated" in first.out
    (status,) = [x for x in first.out.splitlines() if x.startswith("status: ")]
    assert re.fullmatch(r"status: calibrated: measured \d{4}-\d\d-\d\d: TPR 1\.00, TNR 1\.00",
                        status), status
    path = repo.path / "evals/calibration/q.fair.json"
    before = path.read_bytes()
    record = json.loads(before)
    pos, neg = _split_counts(200, "test")
    assert record["final"] is True and record["split"] == "test"
    assert (record["tpr"]["of"], record["tnr"]["of"]) == (pos, neg)
    calls = len(judge.requests)
    again = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                    cwd=repo.path)
    assert again.code == 2
    assert "the sealed test split was already measured" in again.err
    assert len(judge.requests) == calls and path.read_bytes() == before
    # a dev run afterwards neither replaces the final numbers nor reopens the test split
    dev = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", cwd=repo.path)
    assert dev.code == 0 and "keeps the final measurement" in dev.out
    assert path.read_bytes() == before


def _lint_codes(repo: Repo) -> list[str]:
    res = run_cli("lint", cwd=repo.path)
    return re.findall(r"(GE5\d+) \(warning\)", res.out + res.err)  # the judge graders'


def test_calibrated_then_a_new_blob_or_judge_model_makes_it_advisory_again(
        repo: Repo, judge: FakeJudge) -> None:
    case = CASE.replace("q.tone", "q.fair")
    setup(repo, judge)
    repo.commit({"evals/cases/polite.yaml": case})
    answer(judge, "PASS")
    assert _lint_codes(repo) == ["GE510"]
    res = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                  cwd=repo.path)
    assert res.code == 0, res.err
    repo.commit(msg="calibration record")
    assert _lint_codes(repo) == []
    ran = run_cli("run", *ONE_JOB, "--no-note", cwd=repo.path)
    assert "calibration: q.fair calibrated" in ran.out, ran.out + ran.err
    # a new blob: the grader file changed
    repo.commit({"evals/graders/q.py": JUDGED + "\n\n" + FAIR + "\n# reworded\n"})
    assert _lint_codes(repo) == ["GE513"]
    # the old blob back, but another judge model
    repo.commit({"evals/graders/q.py": JUDGED + "\n\n" + FAIR,
                 "pyproject.toml": judge_settings(judge, model="judge-2026-02-01")})
    assert _lint_codes(repo) == ["GE514"]
    ran = run_cli("run", *ONE_JOB, "--no-note", cwd=repo.path)
    assert "calibration: q.fair advisory (it was calibrated with judge model" in ran.out


def test_a_failing_advisory_judge_exits_0_with_the_failure_shown_as_advisory(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "FAIL")
    res = run_cli("run", *ONE_JOB, "--no-note", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert "advisory, not counted: grader q.tone: judged fail" in res.out
    assert "calibration: q.tone advisory (it is not calibrated" in res.out
    [path] = (repo.path / "evals/results").glob("*.json")
    art = json.loads(path.read_text())
    assert art["judge_calibration"]["q.tone"]["status"] == "advisory"
    assert art["judge_calibration"]["q.tone"]["code"] == "GE510"
    (scenario,) = art["cases"][0]["scenarios"]
    assert scenario["verdict"]["verdict"] == "pass"
    grader = scenario["results"][0]["assertions"][1]
    assert grader["advisory"] is True and grader["passed"] is False
    shown = run_cli("show", cwd=repo.path)
    assert shown.code == 0 and "advisory, not counted" in shown.out
    trial = run_cli("show", "--trial", "polite/ok-polite", cwd=repo.path)
    assert trial.code == 0, trial.out + trial.err
    assert "polite/ok-polite/0: passed" in trial.out
    assert "  FAIL  advisory, not counted: grader q.tone: judged fail" in trial.out
    assert "  pass  " in trial.out and trial.out.count("advisory, not counted") == 1
    # a failure that is not the advisory grader's still fails the run
    repo.commit({"evals/cases/polite.yaml": CASE.replace("contains: Paris", "contains: Lyon")})
    assert run_cli("run", *ONE_JOB, "--no-note", cwd=repo.path).code == 1


def test_a_sequential_run_does_not_count_an_advisory_judge_at_its_looks(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    a = repo.commit({"evals/cases/polite.yaml": CASE.replace("trials: 2", "trials: 20")})
    answer(judge, "PASS")
    assert run_cli("run", *ONE_JOB, cwd=repo.path, timeout=300).code == 0
    repo.commit({"notes.txt": "B\n"})
    answer(judge, "FAIL")  # every trial of B fails the judge, which is advisory
    r = run_cli("run", *ONE_JOB, "--against", a, "--format", "json", cwd=repo.path,
                timeout=300)
    assert r.code == 0, r.err
    (scenario,) = json.loads(r.out)["cases"][0]["scenarios"]
    looks = scenario["sequential"]["looks"]
    assert looks and all(lk["passes"] == lk["trials"] for lk in looks), looks
    assert scenario["sequential"]["stopped"] != "regressed"
    assert scenario["verdict"]["verdict"] == "pass"
    assert all(t["assertions"][1]["advisory"] for t in scenario["results"])


def test_show_states_calibration_na_when_no_grader_asks_the_judge(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge, graders={"q": "def tone(t, case, run):\n    return True\n"})
    assert run_cli("run", *ONE_JOB, "--no-note", cwd=repo.path).code == 0
    shown = run_cli("show", cwd=repo.path)
    assert "calibration: N/A (no grader calls t.llm or t.judge)" in shown.out
    refused = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", cwd=repo.path)
    assert refused.code == 2 and "needs no calibration" in refused.err


MIXED = """\
def mixed(t, case, run):
    if run["final_answer"] == "good":
        return True
    return t.judge("Is this good? " + run["final_answer"])
"""


def test_an_unparseable_answer_is_an_error_never_a_fail(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge, graders={"q": JUDGED + "\n\n" + MIXED})
    answer(judge, "Maybe")
    res = run_cli("calibrate", *ONE_JOB, "q.mixed", "--labels", "labels.jsonl", cwd=repo.path)
    pos, neg = _split_counts(200, "dev")
    assert "TPR 1.00" in res.out and f"{pos} of {pos} labelled pass" in res.out, res.err
    assert "TNR n/a [no items]  0 of 0 labelled fail judged FAIL" in res.out
    assert f"errors {neg} (not counted" in res.out
    assert "judge_unparseable: grader q.mixed raised JudgeParseError: the judge answered " \
           "'Maybe', not PASS or FAIL (asked 2 times)" in res.out
    assert "bar: not met: TNR not measured" in res.out and res.code == 1
    record = json.loads((repo.path / "evals/calibration/q.mixed.json").read_text())
    assert record["errors"]["count"] == neg and record["tnr"]["of"] == 0
    # retried per the judge's retry setting (retries = 1: two asks per item); the preflight
    # asks once more (GET, not counted here: only POSTs are)
    assert len(judge.requests) == 2 * neg
    # in a run: an error of the grader, not a judged fail
    ran = run_cli("run", "--no-note", "--trials", "1", cwd=repo.path)
    [path] = (repo.path / "evals/results").glob("*.json")
    outcome = json.loads(path.read_text())["cases"][0]["scenarios"][0]["results"][0][
        "assertions"][1]
    assert outcome["error"]["kind"] == "judge_unparseable", ran.out
    assert "judged fail" not in outcome["message"]


def test_when_no_item_is_judged_nothing_is_recorded_and_the_test_split_stays_sealed(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "Maybe")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", "--final",
                  cwd=repo.path)
    assert res.code == 1
    assert "no item of the test split was judged" in res.err and "nothing was recorded" in res.err
    assert not (repo.path / "evals/calibration").exists()
    answer(judge, "PASS")
    again = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", "--final",
                    cwd=repo.path)
    assert "sealed test, measured once" in again.out, again.err


def test_an_unreachable_judge_is_refused_before_anything_is_asked(repo: Repo) -> None:
    fake = FakeJudge("http://127.0.0.1:9/v1")
    setup(repo, fake)
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", "--final",
                  cwd=repo.path)
    assert res.code == 2, res.err
    assert "the judge at http://127.0.0.1:9/v1 does not answer" in res.err
    assert not (repo.path / "evals/calibration").exists()


def test_the_same_family_for_judge_and_target_is_a_lint_error(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge, extra='family = "Llama"\n')
    text = (repo.path / "pyproject.toml").read_text()
    repo.commit({"pyproject.toml": text.replace("[tool.gitevals.target]\n",
                                                '[tool.gitevals.target]\nfamily = "llama"\n')})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 1
    lines = (repo.path / "pyproject.toml").read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.startswith('family = "Llama"'))
    assert f"pyproject.toml:{line}:1: GE704 judge family 'Llama' is the target's family" in res.out
    repo.commit({"pyproject.toml": text.replace("[tool.gitevals.target]\n",
                                                '[tool.gitevals.target]\nfamily = "qwen"\n')})
    assert "GE704" not in run_cli("lint", cwd=repo.path).out


def test_wilson_matches_scipy() -> None:
    from scipy.stats import binomtest

    for k, n in ((0, 8), (8, 8), (37, 40), (1, 3), (50, 100)):
        ci = binomtest(k, n).proportion_ci(method="wilson")
        lo, hi = wilson(k, n) or (0, 0)
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)
    assert wilson(0, 0) is None


def test_the_split_is_stable_and_near_its_ratios() -> None:
    ids = [f"id-{i}" for i in range(5000)]
    splits = [split_of(i) for i in ids]
    assert splits == [split_of(i) for i in ids]
    share = {s: splits.count(s) / len(ids) for s in ("train", "dev", "test")}
    assert share["train"] == pytest.approx(0.2, abs=0.03)
    assert share["dev"] == pytest.approx(0.4, abs=0.03)
    assert share["test"] == pytest.approx(0.4, abs=0.03)


def test_record_is_written_atomically_and_unreadable_records_are_never_overwritten(
        repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "PASS")
    bad = repo.path / "evals/calibration/q.tone.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{ not json")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", cwd=repo.path)
    assert res.code == 2 and "cannot read the calibration record" in res.err
    assert bad.read_text() == "{ not json"
    assert [p.name for p in bad.parent.iterdir()] == ["q.tone.json"]


def test_an_uncommitted_grader_is_refused(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    Path(repo.path / "evals/graders/q.py").write_text(JUDGED + "\n# edited\n")
    res = run_cli("calibrate", *ONE_JOB, "q.tone", "--labels", "labels.jsonl", cwd=repo.path)
    assert res.code == 2 and "has uncommitted changes" in res.err
    Path(repo.path / "evals/graders/fresh.py").write_text(JUDGED)
    res = run_cli("calibrate", *ONE_JOB, "fresh.tone", "--labels", "labels.jsonl", cwd=repo.path)
    assert res.code == 2
    assert re.fullmatch(r"gitevals: error: evals/graders/fresh\.py is not in HEAD "
                        r"\([0-9a-f]{12}\): commit the grader first\n", res.err), res.err


def test_diff_marks_the_advisory_judge_of_each_side(repo: Repo, judge: FakeJudge) -> None:
    setup(repo, judge)
    answer(judge, "PASS")
    a = repo.git("rev-parse", "HEAD")
    assert run_cli("run", *ONE_JOB, cwd=repo.path).code == 0
    repo.commit({"harness2.txt": "b\n"})
    answer(judge, "FAIL")
    assert run_cli("run", *ONE_JOB, cwd=repo.path).code == 0  # the judge's failures are not counted
    res = run_cli("diff", a, "HEAD", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert "A: grader q.tone is advisory, its failures shown but not counted" in res.out
    assert "B: grader q.tone is advisory, its failures shown but not counted" in res.out


def test_a_stale_or_unreadable_record_leaves_the_judge_advisory(
        repo: Repo, judge: FakeJudge) -> None:
    from datetime import UTC, datetime, timedelta

    setup(repo, judge)
    fresh = record(repo, "q.tone", "judge-2026-01-15")  # consistent with its items
    old = (datetime.now(UTC) - timedelta(days=91)).strftime("%Y-%m-%dT%H:%M:%SZ")
    repo.commit({"evals/calibration/q.tone.json": json.dumps({**fresh, "date": old})})
    assert _lint_codes(repo) == ["GE516"]
    repo.commit({"evals/calibration/q.tone.json": json.dumps(fresh)})
    assert _lint_codes(repo) == []
    low = record(repo, "q.tone", "judge-2026-01-15", fail_judged_pass=0.5)
    repo.commit({"evals/calibration/q.tone.json": json.dumps(low)})
    assert _lint_codes(repo) == ["GE515"]
    repo.commit({"evals/calibration/q.tone.json": "{ not json"})
    assert _lint_codes(repo) == ["GE511"]
