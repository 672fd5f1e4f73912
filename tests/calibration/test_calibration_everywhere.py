"""Judge calibration counts the same everywhere (#12, #13): the goldens gate, its lint,
``doctor`` and experiment lanes decide an advisory judge grader as ``run`` and ``score``
do. Real repositories, the real CLI, and the judge of ``test_judge`` on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, git, run_cli
from tests.support import judges
from tests.support.calibration import ONE_JOB, answer
from tests.support.calibration_records import record
from tests.support.doctor import JUDGE_TONE, complete_tree
from tests.support.doctor import SETTINGS as DOCTOR_SETTINGS
from tests.support.experiments import GEO
from tests.support.experiments import HARNESS as LANE_HARNESS
from tests.support.experiments import SETTINGS as LANE_SETTINGS
from tests.support.gate import HARNESS, SUITE, goldens
from tests.support.judges import FakeJudge

# one judge server a module (its repositories are built once), fresh for each test
module_judge = judges.module_judge
judge = judges.module_judge_fresh

MODEL = "judge-2026-01-15"
#: Two job slots for the 40-golden runs: the grader workers (a Python start each) stay
#: about two, where the default 16 slots started up to 16 for 40 quick conversations. No
#: test here is about concurrency; every golden's answer is the same either way.
JOBS = ("--jobs", "2")
CHECKS = 'def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n'
JUDGED = ('def tone(t, case, run):\n'
          '    return t.judge("Is this polite? PASS or FAIL.\\n" + run["final_answer"])\n')


def _judge_table(judge: FakeJudge) -> str:
    return f'\n[tool.gitevals.judge]\nbase_url = "{judge.url}"\nmodel = "{MODEL}"\nretries = 1\n'


def _goldens_settings(judge: FakeJudge) -> str:
    return ('[tool.gitevals.target]\npython = "harness:respond"\n\n'  # gate's HARNESS
            '[tool.gitevals.goldens]\n'
            'graders = {format = "checks.exact", tone = "judged.tone"}\n'
            + _judge_table(judge))


def _calibrated(repo: Repo, grader: str, final: bool = True, fail_judged_pass: float = 0.0,
                **changes: Any) -> None:
    """Commit a calibration record of ``grader`` at HEAD's blob, dated now, consistent
    with the items it lists (what `gitevals calibrate --final` writes when the judge
    meets the bar; ``fail_judged_pass`` lowers TNR)."""
    doc = record(repo, grader, MODEL, final=final, fail_judged_pass=fail_judged_pass)
    doc.update(changes)
    repo.commit({f"evals/calibration/{grader}.json": json.dumps(doc)}, msg="calibrated")


# -- the goldens gate ------------------------------------------------------------------


def _goldens_repo(repo: Repo, judge: FakeJudge, n: int = 20) -> None:
    """``n`` goldens a bucket: format passes the first three quarters (15/20, 3/5) by the
    deterministic grader, so a goldens run fails; tone is graded by the judge."""
    repo.commit({"harness.py": HARNESS, "pyproject.toml": _goldens_settings(judge),
                 "passes.json": json.dumps({"f": n * 3 // 4, "t": n}),
                 "evals/graders/checks.py": CHECKS, "evals/graders/judged.py": JUDGED,
                 "evals/goldens.jsonl": goldens(n), "evals/drift-suite.yaml": SUITE})


def _goldens_run(repo: Repo, note: bool = False) -> Path:
    res = run_cli("run", "--goldens-only", *(() if note else ("--no-note",)), *JOBS,
                  cwd=repo.path)
    assert res.code in (0, 1), res.err
    return max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)


#: Goldens a bucket in the gate tests' repo: the judge's tone drops from all of them to
#: none (-100 pts, beyond the hard fail and beyond noise at 5 as at 20: one-sided
#: Boschloo p < 0.01 for 0/5 against 5/5); format passes 3 of them on both sides.
BUCKET = 5


def _based(repo: Repo, judge: FakeJudge) -> None:
    _goldens_repo(repo, judge, n=BUCKET)
    answer(judge, "PASS")  # the base model's tone: every golden
    # noted: a baseline is checked against its run, read from the run's git note
    res = run_cli("baseline", str(_goldens_run(repo, note=True)), "--model", "base-7b",
                  cwd=repo.path)
    assert res.code == 0, res.err
    repo.commit(msg="baseline")


@pytest.fixture(scope="module")
def based_once(module_judge: FakeJudge, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The goldens repo with its baseline (a noted 40-golden run), made once a module."""
    path = tmp_path_factory.mktemp("based") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    _based(Repo(path), module_judge)
    return path


def _copy(src: Path, tmp_path: Path, name: str = "repo") -> Repo:
    shutil.copytree(src, tmp_path / name, symlinks=True)
    return Repo(tmp_path / name)


@dataclass(frozen=True)
class Failed:
    """A repo after a noted goldens run in which the judge failed every tone golden: the
    repo, that run's exit code and its artifact (relative to the repo)."""

    path: Path
    code: int
    artifact: str

    def copy(self, tmp_path: Path, name: str = "repo") -> tuple[Repo, Path]:
        """The test's own copy of the repo and the run's artifact in it."""
        repo = _copy(self.path, tmp_path, name)
        return repo, repo.path / self.artifact


def _failed_run(repo: Repo, judge: FakeJudge) -> Failed:
    answer(judge, "FAIL")  # tone drops from 5/5 to 0/5: beyond the 10 pt hard fail
    res = run_cli("run", "--goldens-only", *JOBS, cwd=repo.path)  # noted: publish-check
    assert res.code in (0, 1), res.err                             # reads it from its note
    artifact = max((repo.path / "evals/results").glob("*.json"),
                   key=lambda p: p.stat().st_mtime_ns)
    return Failed(repo.path, res.code, artifact.relative_to(repo.path).as_posix())


@dataclass(frozen=True)
class FailedRuns:
    """The baseline's repo after the judge failed every tone golden, uncalibrated
    (``advisory``), then after the same run once the judge was calibrated (``calibrated``,
    which starts from ``advisory``): the runs several tests read, made once a module."""

    advisory: Failed
    calibrated: Failed


@pytest.fixture(scope="module")
def failed_runs(based_once: Path, module_judge: FakeJudge,
                tmp_path_factory: pytest.TempPathFactory) -> FailedRuns:
    root = tmp_path_factory.mktemp("failed")
    advisory = _failed_run(_copy(based_once, root, "advisory"), module_judge)
    repo = _copy(advisory.path, root, "calibrated")
    _calibrated(repo, "judged.tone")
    return FailedRuns(advisory, _failed_run(repo, module_judge))


def test_gate_reports_an_advisory_judge_bucket_but_never_counts_it(
        failed_runs: FailedRuns, tmp_path: Path) -> None:
    repo, artifact = failed_runs.advisory.copy(tmp_path)  # the judge failed every tone
    recorded = json.loads(artifact.read_text())["judge_calibration"]
    assert recorded["judged.tone"]["status"] == "advisory"
    assert recorded["judged.tone"]["code"] == "GE510"
    assert "checks.exact" not in recorded  # deterministic: nothing to calibrate
    res = run_cli("gate", str(artifact), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    lines = res.out.splitlines()
    assert lines[0] == "gate: PASSED against baseline base-7b (1 advisory slice not counted)"
    rows = {ln.split()[1]: ln for ln in lines if ln.startswith("bucket ")}
    assert rows["tone"].rstrip().endswith("  hard fail (advisory, not counted)")
    assert rows["tone"].split()[6] == "-100.0"
    assert f"{BUCKET}/{BUCKET} 100.0%" in rows["tone"] and f"0/{BUCKET} 0.0%" in rows["tone"]
    assert rows["format"].rstrip().endswith("unchanged")
    assert lines[-1].startswith("advisory, not counted: bucket tone: grader judged.tone is "
                                "advisory: it is not calibrated; run `gitevals calibrate "
                                "judged.tone --labels FILE --final`")
    doc = json.loads(run_cli("gate", str(artifact), "--baseline", "base-7b", "--format",
                             "json", cwd=repo.path).out)
    assert doc["passed"] is True
    slices = {s["name"]: s for s in doc["slices"]}
    assert slices["tone"]["status"] == "hard_fail"
    assert slices["tone"]["advisory"].startswith("grader judged.tone is advisory: it is not "
                                                 "calibrated")
    assert slices["format"]["advisory"] is None
    md = run_cli("gate", str(artifact), "--baseline", "base-7b", "--format", "markdown",
                 cwd=repo.path).out
    assert "| hard fail (advisory, not counted) |" in md
    assert "- advisory, not counted: bucket tone: grader judged\\.tone is advisory" in md


def test_once_the_judge_is_calibrated_its_bucket_fails_the_gate(
        failed_runs: FailedRuns, judge: FakeJudge, tmp_path: Path) -> None:
    # calibrated, then the judge failed every tone golden
    repo, artifact = failed_runs.calibrated.copy(tmp_path)
    assert json.loads(artifact.read_text())["judge_calibration"]["judged.tone"]["status"] \
        == "calibrated"
    res = run_cli("gate", str(artifact), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 1, res.out + res.err
    assert res.out.startswith("gate: FAILED against baseline base-7b: bucket tone -100.0 pts "
                              "(a drop beyond 10 pts in any slice fails, whatever else "
                              "improved)\n")
    assert "advisory" not in res.out
    # a calibration below the bar makes it advisory again: the same drop is not counted
    _calibrated(repo, "judged.tone", fail_judged_pass=0.5)
    answer(judge, "FAIL")
    again = run_cli("gate", str(_goldens_run(repo)), "--baseline", "base-7b", cwd=repo.path)
    assert again.code == 0, again.out + again.err
    assert "grader judged.tone is advisory: it is below the bar: TNR 0.52 < 0.9" in again.out


def test_publish_check_require_gate_leaves_an_advisory_bucket_out(
        failed_runs: FailedRuns, tmp_path: Path) -> None:
    # the judge failed every tone golden in a noted run, uncalibrated
    repo, _ = failed_runs.advisory.copy(tmp_path, "advisory")
    assert failed_runs.advisory.code == 1  # a golden failed
    ok = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert ok.code == 0, ok.out + ok.err
    assert "GE639" not in ok.out
    # the same repo after `_calibrated(repo, "judged.tone")` and the same noted run
    repo, _ = failed_runs.calibrated.copy(tmp_path, "calibrated")
    assert failed_runs.calibrated.code == 1
    bad = run_cli("publish-check", "--require-gate", "base-7b", cwd=repo.path)
    assert bad.code == 1
    assert ("evals/baseline-base-7b.json:1:1: GE639 --require-gate base-7b: gate: FAILED "
            "against baseline base-7b: bucket tone -100.0 pts") in bad.out


# -- lint: at the bucket's grader in the settings ------------------------------------------


def test_lint_warns_at_the_bucket_line_of_an_advisory_judge(repo: Repo, judge: FakeJudge
                                                            ) -> None:
    _goldens_repo(repo, judge)
    text = _goldens_settings(judge)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("graders"))
    col = text.splitlines()[line - 1].index('"judged.tone"') + 1
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out + res.err  # a warning: the settings still lint
    found = [ln for ln in (res.out + res.err).splitlines() if "GE51" in ln]
    assert found == [f"pyproject.toml:{line}:{col}: GE510 (warning) grader judged.tone asks "
                     "the judge and is advisory (the pass rate of the bucket it grades here "
                     "will not count in the goldens gate): it is not calibrated; run "
                     "`gitevals calibrate judged.tone --labels FILE --final` and commit the "
                     "record"], res.out + res.err
    _calibrated(repo, "judged.tone")
    assert "GE51" not in (lambda r: r.out + r.err)(run_cli("lint", cwd=repo.path))
    _calibrated(repo, "judged.tone", judge_model="judge-2025-06-01")
    other = run_cli("lint", cwd=repo.path)
    assert f"pyproject.toml:{line}:{col}: GE514 (warning)" in other.out + other.err


# -- doctor ----------------------------------------------------------------------------------


def _doctor(repo: Repo) -> dict[str, Any]:
    res = run_cli("doctor", "--format", "json", cwd=repo.path)
    assert res.err == "", res.err
    item: dict[str, Any] = next(i for i in json.loads(res.out)["items"]
                                if i["name"] == "judges")
    return {**item, "code": res.code}


def test_doctor_lists_each_judge_graders_status(repo: Repo, judge: FakeJudge) -> None:
    files = complete_tree(JUDGE_TONE)
    files["pyproject.toml"] = DOCTOR_SETTINGS + _judge_table(judge)
    repo.commit(files)
    item = _doctor(repo)
    assert (item["code"], item["status"]) == (1, "missing")
    assert item["detail"].startswith("judges calibrated: tone.polite advisory (it is not "
                                     "calibrated; run `gitevals calibrate tone.polite")
    assert "evals/calibration/tone.polite.json" in item["fix"]
    _calibrated(repo, "tone.polite", final=False)
    item = _doctor(repo)
    assert item["status"] == "missing"
    assert item["detail"].startswith("judges calibrated: tone.polite advisory (it was "
                                     "measured on the dev split only")
    _calibrated(repo, "tone.polite")
    item = _doctor(repo)
    assert (item["code"], item["status"]) == (0, "ok")
    today = datetime.now(UTC).date().isoformat()
    assert item["detail"] == (f"judges calibrated: tone.polite calibrated (measured "
                              f"{today}: TPR 1.00, TNR 1.00); judge model {MODEL!r}, "
                              "families: judge unset, target unset")
    assert any(w.startswith("judge and target family not set") and "(GE706)" in w
               for w in item["warnings"]), item
    text = run_cli("doctor", cwd=repo.path).out
    assert "judges calibrated: tone.polite calibrated" in text


def test_doctor_states_judges_calibrated_na_without_a_judge_grader(repo: Repo) -> None:
    repo.commit(complete_tree())
    item = _doctor(repo)
    assert (item["code"], item["status"]) == (0, "n/a")
    assert item["detail"].startswith("judges calibrated: N/A")


# -- experiment lanes -----------------------------------------------------------------------


LANE_CASE = GEO + "      - grader: {name: q.tone}\n"


def _lanes(repo: Repo, judge: FakeJudge) -> str:
    settings = LANE_SETTINGS + _judge_table(judge)  # the harness started with -S
    return repo.commit({"harness.py": LANE_HARNESS, "pyproject.toml": settings,
                        "evals/cases/geo.yaml": LANE_CASE,
                        "evals/graders/q.py": JUDGED})


def _experiment(repo: Repo, commit: str) -> tuple[int, dict[str, Any]]:
    res = run_cli("experiment", "--lane", f"a={commit},env:MODEL=a",
                  "--lane", f"b={commit},env:MODEL=b", "--repeat", "4", "--format", "json",
                  *ONE_JOB, cwd=repo.path)
    assert res.code in (0, 1), res.out + res.err
    return res.code, json.loads(res.out)


def test_the_experiment_text_report_says_which_judge_was_advisory_per_lane(
        repo: Repo, judge: FakeJudge) -> None:
    commit = _lanes(repo, judge)
    answer(judge, "FAIL")
    res = run_cli("experiment", "--lane", f"a={commit},env:MODEL=a",
                  "--lane", f"b={commit},env:MODEL=b", "--repeat", "2", *ONE_JOB,
                  cwd=repo.path)
    assert res.code == 1, res.out + res.err  # lane b's wrong answers still count
    lines = res.out.splitlines()
    assert [ln.split(" (")[0] for ln in lines if ": calibration: " in ln] == [
        "lane a: calibration: q.tone advisory", "lane b: calibration: q.tone advisory"]
    assert lines[-1].startswith("some samples failed; controls held")
    rechecked = run_cli("experiment", "--recheck", _report_id(repo), "--format", "markdown",
                        cwd=repo.path)
    assert r"- lane a: calibration: q\.tone advisory (it is not calibrated" in rechecked.out


def _report_id(repo: Repo) -> str:
    [found] = (repo.path / "evals/results/experiments").glob("*.json")
    return found.stem


def _passes(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {d["name"]: (d["pass_rate"]["passes"], d["pass_rate"]["trials"])
            for d in doc["lanes"]}


def test_an_advisory_judges_failures_do_not_count_in_experiment_lanes(
        repo: Repo, judge: FakeJudge) -> None:
    commit = _lanes(repo, judge)
    answer(judge, "FAIL")
    code, doc = _experiment(repo, commit)
    # lane a always answers Paris; lane b is wrong on odd trials: only that counts
    assert _passes(doc) == {"a": (4, 4), "b": (2, 4)}
    assert code == 1
    [pair] = doc["comparisons"]
    assert (pair["a_passes"], pair["b_passes"]) == (4, 2)
    for lane in doc["lanes"]:
        assert lane["judge_calibration"]["q.tone"]["code"] == "GE510"
        kept = json.loads((repo.path / lane["artifact"]).read_text())
        assert kept["judge_calibration"]["q.tone"]["code"] == "GE510"
        grader = kept["cases"][0]["scenarios"][0]["results"][0]["assertions"][1]
        assert grader["advisory"] is True and grader["passed"] is False


def test_a_calibrated_judges_failures_count_in_experiment_lanes(
        repo: Repo, judge: FakeJudge) -> None:
    _lanes(repo, judge)
    _calibrated(repo, "q.tone")
    commit = repo.git("rev-parse", "HEAD")
    answer(judge, "FAIL")
    code, doc = _experiment(repo, commit)
    assert _passes(doc) == {"a": (0, 4), "b": (0, 4)}
    assert code == 1
    [pair] = doc["comparisons"]
    assert (pair["a_passes"], pair["b_passes"]) == (0, 0)
    for lane in doc["lanes"]:
        kept = json.loads((repo.path / lane["artifact"]).read_text())
        assert kept["judge_calibration"]["q.tone"]["status"] == "calibrated"


def test_a_goldens_run_does_not_fail_on_an_advisory_judges_answers(
        repo: Repo, judge: FakeJudge) -> None:
    # 5 goldens a bucket: whether the run fails turns on every tone golden the judge
    # fails being counted or not, whatever their number (the gate tests above use 20)
    _goldens_repo(repo, judge, n=5)
    repo.commit({"passes.json": json.dumps({"f": 20, "t": 20})})  # format: every golden ok
    answer(judge, "FAIL")  # tone: the judge, not calibrated, fails every golden
    res = run_cli("run", "--goldens-only", "--no-note", *JOBS, cwd=repo.path)
    assert res.code == 0, res.out + res.err
    shown = [ln for ln in res.out.splitlines() if "not passed:" in ln]
    assert shown and all(ln.startswith("advisory, not counted: not passed: bucket tone ")
                         for ln in shown)
    doc = json.loads(run_cli("show", "--format", "json", cwd=repo.path).out)
    assert doc["goldens"]["failed"] and all(f["advisory"] for f in doc["goldens"]["failed"])
    # calibrated, the same answers fail the run
    _calibrated(repo, "judged.tone")
    res = run_cli("run", "--goldens-only", "--no-note", *JOBS, cwd=repo.path)
    assert res.code == 1, res.out + res.err
    assert "\nnot passed: bucket tone " in res.out and "advisory, not counted" not in res.out
