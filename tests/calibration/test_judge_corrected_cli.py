"""Judge-corrected rates (#21 item 5) through the real CLI: a judge grader calibrated with
`gitevals calibrate --final` against the OpenAI-compatible judge of ``test_judge`` on
127.0.0.1, whose PASS rate on a run differs from the rate corrected for its errors.

The judge echoes the prompt; the grader reads the answer back from the echo, so the
judge's verdict on an answer is fixed: ``good`` and ``meh`` are PASS, ``bad`` and
``nope`` FAIL. The labels call ``nope`` a pass (a false negative) and ``meh`` a fail (a
false positive): the calibration's TPR and TNR are below 1 by counts this file sets.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitevals.calibration.metrics import split_of
from gitevals.stats.judge_correction import Calibration, corrected
from tests.conftest import Repo, git, run_cli
from tests.support.judges import FakeJudge, fake_judge

MODEL = "judge-2026-01-15"
#: Answers ``good`` to the first N trials of a scenario (N from passes.json by scenario
#: id) or to the first N goldens of a bucket (ids t00..), ``bad`` to the rest. A python
#: target: imported once per run, forked per conversation (60 a run).
HARNESS = """\
import json

passes = json.load(open("passes.json"))


def respond(messages):
    msg = messages[-1]
    sid = msg["scenario"]
    ok = msg["trial"] < passes[sid] if sid in passes else int(sid[1:]) < passes["t"]
    return {"final_answer": "good" if ok else "bad", "tool_calls": [], "hooks": [],
            "error": None}
"""
GRADER = """\
def tone(t, case, run):
    said = t.llm("Is this polite? " + (run["final_answer"] or ""))
    return said.endswith(("good", "meh"))
"""
#: ``tone`` is decided by the judge alone; ``mixed`` also needs the word "good", which
#: fails on its ``bad`` trials: a failure no judge decided, so it gets no correction.
CASE = """\
defaults: {trials: 20, timeout: 20s}
scenarios:
  - id: tone
    user: Say something.
    expect:
      - no_error: true
      - grader: {name: judged.tone}
  - id: mixed
    user: Say something else.
    expect:
      - final_answer_contains: good
      - grader: {name: judged.tone}
"""
SUITE = "drift_budget:\n  noise_tolerance_pts: 2\n  hard_fail_threshold_pts: 10\n"
#: Labelled items; in the sealed test split, the first FN of those labelled pass answer
#: ``nope`` and the first FP of those labelled fail answer ``meh``.
ITEMS, FN, FP = 250, 10, 5


def _labels() -> tuple[str, Calibration]:
    rows, pos, neg = [], 0, 0
    for i in range(ITEMS):
        label = i < 175
        test = split_of(f"item-{i}") == "test"
        if label:
            output = "nope" if test and pos < FN else "good"
            pos += test
        else:
            output = "meh" if test and neg < FP else "bad"
            neg += test
        rows.append({"id": f"item-{i}", "input": "hi", "output": output,
                     "label": "pass" if label else "fail"})
    text = "".join(json.dumps(r) + "\n" for r in rows)
    return text, Calibration(pos - FN, pos, neg - FP, neg)


def _settings(judge: FakeJudge) -> str:
    return ('[tool.gitevals.target]\npython = "harness:respond"\n\n'
            '[tool.gitevals.goldens]\ngraders = {tone = "judged.tone"}\n\n'
            f'[tool.gitevals.judge]\nbase_url = "{judge.url}"\nmodel = "{MODEL}"\n'
            "retries = 1\nmin_tpr = 0.8\nmin_tnr = 0.8\n")


def _goldens(n: int = 20) -> str:
    return "".join(json.dumps({"id": f"t{i:02d}", "bucket": "tone", "input": f"q{i}",
                               "expected": "good"}) + "\n" for i in range(n))


def _run(repo: Repo) -> Path:
    # --jobs 1: one slot, so one grader worker (a Python start each, and the judge
    # client's imports) per pool; --jobs 2 started three, the default 16 slots up to 16
    # for these 60-80 quick conversations. No test here is about concurrency, and what
    # each conversation answers does not depend on it.
    res = run_cli("run", "--goldens", "--no-note", "--jobs", "1", cwd=repo.path)
    assert res.code in (0, 1), res.out + res.err
    return max((repo.path / "evals/results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)


@pytest.fixture(scope="module")
def module_judge() -> Iterator[FakeJudge]:
    """One judge for the module: it only echoes, and no test reads its requests."""
    with fake_judge() as state:
        yield state


@dataclass(frozen=True)
class Built:
    """The module's calibrated repo, once before and once after its first run (tone 6/20,
    bucket tone 6/20): each test copies the one it starts from."""

    calibrated: Path
    ran: Path
    artifact: str  # the first run's artifact, relative to the repo
    cal: Calibration


def _calibrate(repo: Repo, judge: FakeJudge) -> Calibration:
    """Calibrate the judge grader (final, committed) below 1 on both rates."""
    labels, cal = _labels()
    repo.commit({"harness.py": HARNESS, "pyproject.toml": _settings(judge),
                 "evals/graders/judged.py": GRADER, "evals/cases/polite.yaml": CASE,
                 "evals/goldens.jsonl": _goldens(), "evals/drift-suite.yaml": SUITE,
                 "labels.jsonl": labels,
                 "passes.json": json.dumps({"tone": 6, "mixed": 6, "t": 6})})
    # --jobs 1: one grader worker asks the judge about every item; what is checked is
    # the record's counts, the same whichever worker asked (parallel grading: tests/run)
    res = run_cli("calibrate", "--jobs", "1", "judged.tone", "--labels", "labels.jsonl",
                  "--final", "--no-preflight", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    record = json.loads((repo.path / "evals/calibration/judged.tone.json").read_text())
    assert (record["tpr"]["hits"], record["tpr"]["of"], record["tnr"]["hits"],
            record["tnr"]["of"]) == (cal.tp, cal.n_pos, cal.tn, cal.n_neg)
    repo.commit(msg="calibrated")
    return cal


@pytest.fixture(scope="module")
def built(module_judge: FakeJudge, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Calibrated and run once a module (the calibration and a 60-conversation run are
    the costly part; every test used to make the same ones)."""
    root = tmp_path_factory.mktemp("corrected")
    repo = Repo(root / "repo")
    repo.path.mkdir()
    git(repo.path, "init", "-q", "-b", "main")
    cal = _calibrate(repo, module_judge)
    shutil.copytree(repo.path, root / "calibrated", symlinks=True)
    artifact = _run(repo).relative_to(repo.path)
    return Built(root / "calibrated", repo.path, str(artifact), cal)


def _copy(src: Path, tmp_path: Path) -> Repo:
    shutil.copytree(src, tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo")


@pytest.fixture
def ran(built: Built, tmp_path: Path) -> tuple[Repo, Calibration, Path]:
    """The calibrated repo after its first run (the test's own copy) and that run's
    artifact."""
    repo = _copy(built.ran, tmp_path)
    return repo, built.cal, repo.path / built.artifact


#: A second case whose scenario ``tone2`` the calibrated judge alone decides, as ``tone``.
SECOND = CASE.split("  - id: mixed")[0].replace("id: tone", "id: tone2")


@dataclass(frozen=True)
class Compared:
    """The calibrated repo with a second case (``SECOND``), run at A (every scenario and
    the bucket 6/20) and at B (``tone``, ``tone2`` and the bucket 15/20, ``mixed`` still
    6/20): the two runs the diff tests compare, made once a module."""

    path: Path
    a: str
    b: str
    a_artifact: str  # relative to the repo
    b_artifact: str


@pytest.fixture(scope="module")
def compared(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    root = tmp_path_factory.mktemp("compared")
    repo = _copy(built.calibrated, root)
    a = repo.commit({"evals/cases/polite2.yaml": SECOND,
                     "passes.json": json.dumps({"tone": 6, "mixed": 6, "tone2": 6, "t": 6})})
    a_artifact = _run(repo).relative_to(repo.path)
    b = repo.commit({"passes.json": json.dumps({"tone": 15, "mixed": 6, "tone2": 15,
                                                "t": 15})}, msg="tone 15")
    b_artifact = _run(repo).relative_to(repo.path)
    return Compared(repo.path, a, b, str(a_artifact), str(b_artifact))


def test_show_corrects_the_scenario_one_calibrated_judge_decided(
        ran: tuple[Repo, Calibration, Path]) -> None:
    repo, cal, artifact = ran
    recorded = json.loads(artifact.read_text())["judge_calibration"]["judged.tone"]
    assert recorded["status"] == "calibrated"
    assert recorded["tpr"] == {"hits": cal.tp, "of": cal.n_pos}
    want = corrected(6, 20, cal)
    assert want.rate is not None and want.low is not None and want.high is not None
    assert abs(want.rate - 0.3) > 0.05  # the correction moves the rate visibly
    res = run_cli("show", str(artifact), cwd=repo.path)
    lines = res.out.splitlines()
    assert lines[1].split()[:6] == ["case", "scenario", "verdict", "passes", "duration",
                                    "judge-corrected"]
    tone = next(ln for ln in lines if ln.split()[1:2] == ["tone"])
    assert tone.split()[3] == "6/20"
    # right after the duration ("146 ms", "5.5 s" or "12.0 s": the column's padding
    # varies with it, and a scenario under a second is shown in ms)
    shown = re.escape(f"{want.rate:.2f} [{want.low:.2f}, {want.high:.2f}]  ")
    assert re.search(r"\d m?s +" + shown, tone), tone
    mixed = next(ln for ln in lines if ln.split()[1:2] == ["mixed"])
    assert "[" not in mixed  # failed by a deterministic check too: nothing shown
    assert ("judge-corrected: 1 scenario decided by a calibrated judge alone, pass rate "
            "corrected for its errors (Rogan-Gladen") in res.out
    doc = json.loads(run_cli("show", str(artifact), "--format", "json", cwd=repo.path).out)
    rows = {r["scenario"]: r for r in doc["scenarios"]}
    assert rows["tone"]["corrected_rate"] == pytest.approx(want.rate)
    assert rows["tone"]["corrected_ci"] == pytest.approx([want.low, want.high])
    assert rows["tone"]["correction"]["method"] == "rogan-gladen"
    assert (rows["tone"]["correction"]["n_pos"], rows["tone"]["correction"]["n_neg"]) == \
        (cal.n_pos, cal.n_neg)
    assert rows["tone"]["correction"]["tpr"] == pytest.approx(cal.tpr)
    assert "corrected_rate" not in rows["mixed"]
    # the goldens bucket the same judge grades: 6 of 20 judged PASS, corrected alike
    bucket = next(ln for ln in lines if ln.startswith("bucket tone"))
    assert bucket.endswith(f"  {want.rate:.2f} [{want.low:.2f}, {want.high:.2f}]")
    (slice_,) = doc["goldens"]["slices"]
    assert slice_["corrected_ci"] == pytest.approx([want.low, want.high])
    md = run_cli("show", str(artifact), "--format", "markdown", cwd=repo.path).out
    # brackets made inert, as every cell of data is
    assert "| judge-corrected |" in md
    assert f"| {want.rate:.2f} \\[{want.low:.2f}, {want.high:.2f}\\] |" in md
    assert f"| 0 | {want.rate:.2f} \\[" in md  # the goldens table: errors, then corrected


def test_forged_calibration_counts_show_nothing_or_are_refused_in_one_line(
        ran: tuple[Repo, Calibration, Path]) -> None:
    repo, _, artifact = ran
    doc = json.loads(artifact.read_text())
    doc["judge_calibration"]["judged.tone"]["tnr"] = {"hits": 90, "of": 26}  # hits > of
    forged = repo.path / "forged.json"
    forged.write_text(json.dumps(doc))
    res = run_cli("show", "forged.json", cwd=repo.path)
    assert res.code == 1 and "judge-corrected" not in res.out and "[" not in res.out
    doc["judge_calibration"]["judged.tone"]["tnr"] = {"hits": 0, "of": 0}
    forged.write_text(json.dumps(doc))
    res = run_cli("show", "forged.json", cwd=repo.path)
    assert res.code == 2 and res.out == ""
    assert res.err.strip() == (
        "gitevals: error: forged.json: not a gitevals run artifact: at "
        "$.judge_calibration.judged.tone.tnr.of: 0 is less than the minimum of 1; see "
        "schemas/result.schema.json")


def test_diff_gate_and_report_show_each_sides_corrected_rate(
        built: Built, compared: Compared, tmp_path: Path) -> None:
    # A: tone 6/20, bucket tone 6/20; B: tone 15/20, bucket tone 15/20 (mixed 6/20 on
    # both sides, failed by its deterministic check: no correction)
    repo, cal, a, b = _copy(compared.path, tmp_path), built.cal, compared.a, compared.b
    a_artifact, b_artifact = repo.path / compared.a_artifact, repo.path / compared.b_artifact
    res = run_cli("baseline", str(a_artifact), "--model", "base-7b", cwd=repo.path)
    assert res.code == 0, res.err
    repo.commit(msg="baseline")
    ca, cb = corrected(6, 20, cal), corrected(15, 20, cal)
    assert ca.rate is not None and cb.rate is not None
    assert abs(cb.rate - 0.75) > 0.05

    # diff: the scenario row and the bucket row each carry A's and B's corrected rate
    res = run_cli("diff", a, b, cwd=repo.path)
    lines = res.out.splitlines()
    head = next(ln for ln in lines if ln.lstrip().startswith("case "))
    assert head.split()[-8:] == ["judge-corrected", "A", "->", "B", "duration", "A", "->", "B"]
    tone = next(ln for ln in lines if ln.split()[1:2] == ["tone"])
    from gitevals.calibration.corrected import cell
    assert f"{cell(ca)} -> {cell(cb)}  " in tone  # the durations follow
    bucket = next(ln for ln in lines if ln.lstrip().startswith("bucket tone"))
    assert bucket.rstrip().endswith(f"{cell(ca)} -> {cell(cb)}")
    # under the header and the suite's lines (issue 21), the column is said in one line
    assert sum(ln.startswith("judge-corrected: pass rates corrected for the errors")
               for ln in lines[:10]) == 1
    doc = json.loads(run_cli("diff", a, b, "--format", "json", cwd=repo.path).out)
    row = next(r for r in doc["verdicts"] if r["scenario"] == "tone")
    assert row["corrected_a"]["corrected_rate"] == pytest.approx(ca.rate)
    assert row["corrected_b"]["corrected_ci"] == pytest.approx([cb.low, cb.high])
    assert row["corrected_b"]["correction"]["n_neg"] == cal.n_neg
    mixed = next(r for r in doc["verdicts"] if r["scenario"] == "mixed")
    assert mixed["corrected_a"] is None and mixed["corrected_b"] is None
    (slice_,) = doc["slices"]
    assert slice_["corrected_b"]["corrected_rate"] == pytest.approx(cb.rate)

    # gate: the bucket the calibrated judge grades shows the run's corrected rate
    res = run_cli("gate", str(b_artifact), "--baseline", "base-7b", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    row_line = next(ln for ln in res.out.splitlines() if ln.startswith("bucket tone"))
    assert row_line.rstrip().endswith(cell(cb))
    assert "judge-corrected run: the run's pass rate corrected" in res.out
    gate = json.loads(run_cli("gate", str(b_artifact), "--baseline", "base-7b", "--format",
                              "json", cwd=repo.path).out)
    assert gate["slices"][0]["corrected_rate"] == pytest.approx(cb.rate)
    assert gate["slices"][0]["correction"]["method"] == "rogan-gladen"

    # the HTML report: the overview's case table and the diff's tables
    out = repo.path / "report.html"
    res = run_cli("report", f"{a}..{b}", "-o", str(out), cwd=repo.path)
    assert res.code == 0, res.err
    page = out.read_text()
    assert "<th>judge-corrected</th>" in page
    assert f"<span class=\"num\">{cell(cb)}</span>" in page
    assert f"<td>{cell(cb)}</td>" in page  # the goldens table's bucket tone
    assert f"{cell(ca)} -&gt; {cell(cb)}" in page


def test_the_suite_line_carries_the_judge_corrected_change(
        built: Built, compared: Compared, tmp_path: Path) -> None:
    """Two cases (two clusters) whose scenarios ``tone`` and ``tone2`` the calibrated
    judge alone decides, each 6/20 -> 15/20: the suite's raw change over them is 45
    points, the judge-corrected one 45 / (TPR + TNR - 1), with an interval that carries
    the calibration's uncertainty; every format shows it on the suite's line."""
    from gitevals.stats import paired
    from gitevals.stats.judge_correction import corrected_change

    repo, cal, a, b = _copy(compared.path, tmp_path), built.cal, compared.a, compared.b
    raw = paired.compare([paired.Pair(6, 20, 15, 20, "polite"),
                          paired.Pair(6, 20, 15, 20, "polite2")], 0.05)
    assert raw is not None
    want = corrected_change(raw.estimate, (raw.high - raw.low) / 2, 0.95, cal)
    assert want is not None
    est, low, high = (100 * x for x in want)
    assert abs(est - 45.0) > 5  # the correction moves the change visibly

    doc = json.loads(run_cli("diff", a, b, "--format", "json", cwd=repo.path).out)
    fixed = doc["suite"]["corrected"]
    assert fixed["scenarios"] == 2 and fixed["raw_pts"] == pytest.approx(45.0)
    assert fixed["estimate_pts"] == pytest.approx(est, abs=1e-6)
    assert fixed["ci_pts"] == pytest.approx([low, high], abs=1e-6)
    assert fixed["method"] == "rogan-gladen"
    assert (fixed["calibration"]["tp"], fixed["calibration"]["n_neg"]) == (cal.tp, cal.n_neg)
    assert doc["suite"]["scenarios"] == 3  # mixed is in the suite, not in the correction
    text = run_cli("diff", a, b, cwd=repo.path).out.splitlines()
    assert text[1].startswith("suite: +")
    assert (f"judge-corrected over the 2 scenarios a calibrated judge alone decided: "
            f"{est:+.1f} pts [{low:+.1f}, {high:+.1f}] (raw +45.0 over them; Rogan-Gladen, "
            f"TPR {cal.tpr:.2f}, TNR {cal.tnr:.2f})") in text[1]
    md = run_cli("diff", a, b, "--format", "markdown", cwd=repo.path).out.splitlines()
    assert md[2].startswith("- suite: ") and f"{est:+.1f} pts" in md[2]
    junit = run_cli("diff", a, b, "--format", "junit", cwd=repo.path).out
    assert f'<property name="suite.judge_corrected_pts" value="{round(est, 6)}"' in junit
