"""``gitevals experiment`` end to end: real repos, the real CLI, a deterministic harness
whose pass pattern, token counts and counters are known, so every figure of the report
is checked against a hand computation."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as scipy_stats

from gitevals.diff.stats import two_sided
from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support.experiments import GEO, HARNESS, SETTINGS

MATH = ("scenarios:\n  - id: sum\n    user: What is 2 + 2?\n"
        "    expect:\n      - final_answer_contains: \"4\"\n")
TWO_TURNS = ("scenarios:\n  - id: sum\n    user: [What is 2 + 2?, And 2 + 2 again?]\n"
             "    expect:\n      - final_answer_contains: \"4\"\n")


def _base(repo: Repo, math: str = MATH) -> str:
    return repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                        "evals/cases/geo.yaml": GEO, "evals/cases/math.yaml": math})


def _skill_two(repo: Repo) -> str:
    return repo.commit({"harness.py": HARNESS.replace("SKILL = 1", "SKILL = 2")})


def _report(repo: Repo) -> dict[str, Any]:
    found = sorted((repo.path / "evals/results/experiments").glob("*.json"))
    assert len(found) == 1
    doc: dict[str, Any] = json.loads(found[0].read_text())
    return doc


def _lane(doc: dict[str, Any], name: str) -> dict[str, Any]:
    lane: dict[str, Any] = next(d for d in doc["lanes"] if d["name"] == name)
    return lane


def _stats(values: list[float]) -> dict[str, Any]:
    """n, mean and population variance computed the long way."""
    mean = sum(values) / len(values)
    return {"n": len(values), "missing": 0, "mean": mean,
            "variance": sum((v - mean) ** 2 for v in values) / len(values)}


def test_three_lanes_report_rates_means_and_population_variances(repo: Repo) -> None:
    c1 = _base(repo)
    c2 = _skill_two(repo)
    r = run_cli("experiment", "--lane", f"base={c1[:10]},env:MODEL=a",
                "--lane", "ft=HEAD~1,env:MODEL=b", "--lane", "new=HEAD,env:MODEL=a",
                "--repeat", "5", "--format", "json", "--target-env-public", "MODEL",
                cwd=repo.path)
    assert r.code == 1, r.err  # some samples failed (the controls held)
    doc = json.loads(r.out)
    assert doc == _report(repo)  # what is printed is what is kept
    assert (doc["controls_held"], doc["passed"], doc["conversations"]) == (True, False, 30)
    base, ft, new = (_lane(doc, n) for n in ("base", "ft", "new"))
    assert (base["commit"], ft["commit"], new["commit"]) == (c1, c1, c2)
    assert ft["target_env"] == {"MODEL": {"value": "b"}}
    # pass rates: base all, ft wrong on trials 1 and 3 of each case, new wrong on geo trial 4
    assert [d["pass_rate"]["passes"] for d in (base, ft, new)] == [10, 6, 9]
    assert all(d["pass_rate"]["trials"] == 10 for d in (base, ft, new))
    ci = scipy_stats.binomtest(6, 10).proportion_ci(confidence_level=0.95, method="wilson")
    assert ft["pass_rate"]["low"] == pytest.approx(ci.low, abs=1e-12)
    assert ft["pass_rate"]["high"] == pytest.approx(ci.high, abs=1e-12)
    assert base["pass_rate"]["high"] == 1.0
    verdicts = {(d["name"], s["case"]): (s["verdict"], s["passes"], s["trials"])
                for d in doc["lanes"] for s in d["scenarios"]}
    assert verdicts[("ft", "geo")] == ("flaky", 3, 5)
    assert verdicts[("new", "geo")] == ("flaky", 4, 5)
    assert verdicts[("new", "math")] == ("pass", 5, 5)
    # tokens by hand: trials 0..4 of two cases
    base_prompt = [100.0 + t for t in range(5)] * 2
    ft_prompt = [200.0 + 2 * t for t in range(5)] * 2
    assert base["metrics"]["prompt_tokens"] == _stats(base_prompt)  # mean 102, var 2
    assert base["metrics"]["prompt_tokens"]["variance"] == 2.0
    assert ft["metrics"]["prompt_tokens"] == _stats(ft_prompt)  # mean 204, var 8
    assert ft["metrics"]["completion_tokens"] == _stats([20.0 + t for t in range(5)] * 2)
    assert new["metrics"]["completion_tokens"] == _stats([20.0] * 10)
    assert ft["metrics"]["retries"] == _stats([float(t) for t in range(5)] * 2)
    # a counter no reply of a lane carried is unknown, never a mean of zeros
    assert base["metrics"]["retries"] == {"n": 0, "missing": 10, "mean": None,
                                          "variance": None}
    assert base["metrics"]["iterations"] == _stats([1.0] * 10)
    assert base["metrics"]["errors"] == _stats([0.0] * 10)
    # pairwise, with the exact test diff uses
    pair = next(c for c in doc["comparisons"]
                if (c["a"], c["b"], c["case"]) == ("base", "ft", "geo"))
    assert (pair["a_passes"], pair["b_passes"], pair["change"]) == (5, 3, "regressed")
    assert pair["p"] == two_sided("boschloo", 5, 5, 3, 5)
    assert all(d["controls"] == {"held": True, "problems": []} for d in doc["lanes"])


def test_text_report_and_exit_0_when_every_sample_passed(repo: Repo) -> None:
    c1 = _base(repo)
    _skill_two(repo)
    r = run_cli("experiment", "math", "--lane", f"a={c1}", "--lane", "b=HEAD",
                "--repeat", "3", cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].endswith(": 2 lanes, 1 case, 3 repeats, 6 conversations")
    assert lines[3].split()[:5] == ["a", c1[:12], "-", "3/3", "100.0%"]
    assert "not reported by any reply (missing, not zero): retries" in r.out
    assert lines[-1].startswith("every sample passed; controls held; report evals/results/")


def test_missing_usage_is_counted_never_averaged_as_zero(repo: Repo) -> None:
    _base(repo, math=TWO_TURNS)
    r = run_cli("experiment", "math", "--lane", "quiet=HEAD,env:MODEL=quiet",
                "--repeat", "5", "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    metrics = _lane(json.loads(r.out), "quiet")["metrics"]
    # odd trials (1, 3) omit usage on their second turn: those trials report no total
    assert metrics["prompt_tokens"] == {"n": 3, "missing": 2, "mean": 100.0,
                                        "variance": 0.0}
    assert metrics["completion_tokens"] == {"n": 3, "missing": 2, "mean": 11.0,
                                            "variance": 0.0}
    assert metrics["cost"] == {"n": 0, "missing": 5, "mean": None, "variance": None}
    assert metrics["iterations"] == {"n": 5, "missing": 0, "mean": 2.0, "variance": 0.0}


def test_lanes_whose_cases_differ_are_refused_before_any_target_starts(
        repo: Repo, tmp_path: Path) -> None:
    c1 = _base(repo)
    c2 = repo.commit({"evals/cases/geo.yaml": GEO.replace("Paris", "Paris, France"),
                      "pyproject.toml": SETTINGS + '\n[tool.gitevals.judge]\n'
                      'base_url = "http://127.0.0.1:9/v1"\nmodel = "judge-2026-01-01"\n'})
    marker = tmp_path / "started"
    r = run_cli("experiment", "--lane", f"old={c1}", "--lane", f"new={c2}",
                env={"EXPERIMENT_MARKER": str(marker)}, cwd=repo.path)
    assert r.code == 2
    assert not marker.exists()  # no target ever started
    lines = r.err.splitlines()
    assert any(line.startswith(f"gitevals: lane new ({c2[:12]}) differs from lane old")
               and "evals/cases/geo.yaml: blob" in line for line in lines)
    assert any("setting 'judge' is" in line for line in lines)
    assert lines[-1].startswith("gitevals: error: 2 differences between the lanes besides "
                                "the harness: nothing was run")
    assert "Traceback" not in r.err
    assert not (repo.path / "evals/results").exists()


@pytest.mark.parametrize(("lanes", "message"), [
    (["a=HEAD", "b=main"], "lanes 'a' and 'b' are the same lane"),
    (["a=HEAD,env:MODEL=x", "b=HEAD,env:MODEL=x"], "are the same lane"),
    (["a=HEAD", "a=HEAD,env:MODEL=b"], "two lanes are named 'a'"),
    (["a/b=HEAD"], "the name 'a/b' must be"),
    (["a"], "expected NAME=REV"),
    (["a=HEAD,env:1X=y"], "expected NAME=VALUE"),
    (["a=nope"], "unknown revision 'nope'"),
    (["a=HEAD,MODEL=x"], "'MODEL=x' is not an env: setting"),
    ([], "no lanes"),
], ids=["same-commit-twice", "same-env-twice", "same-name", "bad-name", "no-rev",
        "bad-env", "unknown-rev", "env-without-prefix", "none"])
def test_bad_lanes_are_refused(repo: Repo, tmp_path: Path, lanes: list[str],
                               message: str) -> None:
    _base(repo)
    marker = tmp_path / "started"
    args = [a for lane in lanes for a in ("--lane", lane)]
    r = run_cli("experiment", *args, env={"EXPERIMENT_MARKER": str(marker)}, cwd=repo.path)
    assert r.code == 2
    assert message in r.err
    assert len(r.err.splitlines()) == 1
    assert not marker.exists()


def test_the_matrix_is_bounded_and_the_refusal_says_the_product(repo: Repo) -> None:
    _base(repo)
    r = run_cli("experiment", "--lane", "a=HEAD,env:MODEL=a", "--lane", "b=HEAD,env:MODEL=b",
                "--repeat", "251", cwd=repo.path)
    assert r.code == 2
    assert "2 cases × 2 lanes × 251 repeats = 1,004 conversations, over the bound of " \
           "1,000" in r.err
    assert "--max-samples" in r.err
    r = run_cli("experiment", "geo", "--lane", "a=HEAD", "--repeat", "3",
                "--max-samples", "2", cwd=repo.path)
    assert r.code == 2 and "= 3 conversations, over the bound of 2" in r.err


def test_a_sample_tampered_to_another_commit_fails_control_equivalence(repo: Repo) -> None:
    c1 = _base(repo)
    c2 = _skill_two(repo)
    r = run_cli("experiment", "math", "--lane", f"a={c1}", "--lane", "b=HEAD",
                "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    exp_id = json.loads(r.out)["id"]
    sample = repo.path / "evals/results/experiments" / exp_id / "b.json"
    art = json.loads(sample.read_text())
    assert art["commit"] == c2
    art["commit"] = c1  # another commit, after the run
    sample.write_text(json.dumps(art))
    r = run_cli("experiment", "--recheck", exp_id, "--format", "json", cwd=repo.path)
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["controls_held"] is False and doc["passed"] is True
    assert _lane(doc, "a")["controls"]["held"] is True
    assert _lane(doc, "b")["controls"] == {
        "held": False, "problems": [f"ran commit {c1[:12]}, not the lane's {c2[:12]}"]}
    assert doc == _report(repo)  # the kept report now says so too
    r = run_cli("experiment", "--recheck", exp_id, "--format", "markdown", cwd=repo.path)
    assert r.code == 1
    assert "| lane | commit | env | pass rate \\[95% interval\\] | controls |" in r.out
    assert r.out.rstrip().endswith("**control equivalence FAILED: the lanes' results cannot "
                                   "be compared fairly**")
    r = run_cli("experiment", "--recheck", exp_id, cwd=repo.path)
    assert r.code == 1
    assert f"lane b: ran commit {c1[:12]}, not the lane's {c2[:12]}" in r.out
    assert "control equivalence FAILED" in r.out


def test_an_unreadable_sample_fails_control_equivalence(repo: Repo) -> None:
    _base(repo)
    r = run_cli("experiment", "math", "--lane", "a=HEAD", "--format", "json", cwd=repo.path)
    exp_id = json.loads(r.out)["id"]
    (repo.path / "evals/results/experiments" / exp_id / "a.json").write_text("{")
    r = run_cli("experiment", "--recheck", exp_id, "--format", "json", cwd=repo.path)
    assert r.code == 1
    lane = _lane(json.loads(r.out), "a")
    assert lane["controls"]["held"] is False
    assert "not a gitevals run artifact: not JSON" in lane["controls"]["problems"][0]
    assert lane["pass_rate"]["trials"] == 0


def test_recheck_of_an_unknown_experiment_is_one_line(repo: Repo) -> None:
    _base(repo)
    r = run_cli("experiment", "--recheck", "20261130T000000Z-abcdef", cwd=repo.path)
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert "cannot read" in r.err
    r = run_cli("experiment", "--recheck", "../../x", cwd=repo.path)
    assert r.code == 2 and "an experiment id looks like" in r.err


def test_run_target_env_reaches_the_target_and_hides_secrets(repo: Repo) -> None:
    _base(repo)
    r = run_cli("run", "math", "--format", "json", "--no-note", "--target-env", "MODEL=b",
                "--target-env", "API_KEY=hunter2", "--target-env-public", "MODEL",
                cwd=repo.path)
    assert r.code == 0, r.err  # MODEL=b is wrong on odd trials only; this is trial 0
    art = json.loads(r.out)
    shown = run_cli("show", "--format", "json", cwd=repo.path)  # the kept run validates
    assert shown.code == 0, shown.err
    assert art["target_env"]["MODEL"] == {"value": "b"}
    import hashlib

    assert art["target_env"]["API_KEY"] == {"sha256": hashlib.sha256(b"hunter2").hexdigest()}
    assert "hunter2" not in r.out
    turns = art["cases"][0]["scenarios"][0]["results"][0]["transcript"]["turns"]
    assert turns[0]["usage"]["prompt_tokens"] == 200  # MODEL=b's numbers: the env arrived
    title = run_cli("show", cwd=repo.path).out.splitlines()[0]
    assert title.endswith(", target env API_KEY=sha256:f52fbd32b2b3… MODEL=b")


@pytest.mark.parametrize(("flags", "message"), [
    (["--target-env", "MODEL"], "--target-env 'MODEL': expected NAME=VALUE"),
    (["--target-env", "A=1", "--target-env", "A=2"], "--target-env A is given twice"),
], ids=["no-value", "twice"])
def test_bad_target_env_is_one_line(repo: Repo, flags: list[str], message: str) -> None:
    _base(repo)
    r = run_cli("run", *flags, cwd=repo.path)
    assert (r.code, r.err.count("\n")) == (2, 1)
    assert message in r.err


def test_an_interrupted_experiment_keeps_its_report_and_exits_130(
        repo: Repo, tmp_path: Path) -> None:
    import os

    _base(repo)
    marker = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitevals", "experiment", "math", "--format", "json",
         "--lane", "stuck=HEAD,env:MODEL=hang", "--lane", "later=HEAD,env:MODEL=a"],
        cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **GIT_ENV, "EXPERIMENT_MARKER": str(marker)})
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc == _report(repo)
    stuck, later = _lane(doc, "stuck"), _lane(doc, "later")
    assert (stuck["interrupted"], later["interrupted"], doc["passed"]) == (True, True, False)
    assert later["controls"]["problems"] == [
        "not run: the experiment was interrupted before this lane"]
    assert stuck["pass_rate"]["trials"] == 0  # an abandoned conversation is not a sample


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_a_signal_between_lanes_keeps_the_report_and_runs_no_other_lane(
        repo: Repo, monkeypatch: pytest.MonkeyPatch, signum: int) -> None:
    """^C or SIGTERM as a lane has been kept, before the next starts (the real handlers
    take it): the lanes left are not run, the report is kept and printed, exit 130. It
    used to end in a bare "interrupted" with no report at all."""
    import os

    from gitevals import api

    _base(repo)
    real = api._run_lane

    def then_signalled(*args: Any, **kwargs: Any) -> Any:
        done = real(*args, **kwargs)
        os.kill(os.getpid(), signum)
        return done

    monkeypatch.setattr(api, "_run_lane", then_signalled)
    r = run_cli("experiment", "math", "--format", "json", "--lane", "first=HEAD,env:MODEL=a",
                "--lane", "second=HEAD,env:MODEL=b", cwd=repo.path)
    assert r.code == 130, r.err
    doc = json.loads(r.out)
    assert doc == _report(repo)
    said = r.err.splitlines()
    assert [line.split(" (")[0] for line in said[:-1]] == ["gitevals: lane first"]  # alone
    assert said[-1].startswith("gitevals: interrupted; what finished is in ")
    first, second = _lane(doc, "first"), _lane(doc, "second")
    assert first["interrupted"] is False and first["pass_rate"]["trials"] > 0
    assert second["interrupted"] is True
    assert second["controls"]["problems"] == [
        "not run: the experiment was interrupted before this lane"]


def test_samples_that_cannot_be_kept_in_results_go_to_a_temp_dir(repo: Repo) -> None:
    import re
    import shutil

    _base(repo)
    (repo.path / "evals/results").write_text("a file where the directory should be\n")
    r = run_cli("experiment", "math", "--lane", "a=HEAD", "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    kept = re.findall(r"/a\.json is in (\S+) instead", r.err)
    report = re.findall(rf"{doc['id']}\.json is in (\S+) instead", r.err)
    try:
        assert len(kept) == 1 and len(report) == 1
        assert json.loads(Path(kept[0]).read_text())["commit"] == doc["lanes"][0]["commit"]
        assert json.loads(Path(report[0]).read_text()) == doc
        assert doc["lanes"][0]["artifact"] == kept[0]  # the report says where it really is
    finally:
        shutil.rmtree(Path(kept[0]).parent.parent if kept else "/nonexistent",
                      ignore_errors=True)


def _kept(repo: Repo, exp_id: str, **changes: Any) -> None:
    """A kept report written by hand, as a forger (or a bad disk) could leave it."""
    lane = {"name": "a", "rev": "HEAD", "commit": "0" * 40, "tree": "1" * 40,
            "target_env": {"MODEL": {"value": "m"}},
            "pins": {"files": {}, "timing": {"math/sum": [1, 60.0]}}}
    doc = {"format": "gitevals-experiment/1", "id": exp_id, "tool_version": "0",
           "root": "evals", "cases": ["math"], "repeat": 1, "jobs": 1, "conversations": 1,
           "max_samples": None, "settings": {}, "started_at": "2026-11-30T00:00:00Z",
           "finished_at": "2026-11-30T00:00:01Z", "lanes": [lane]}
    for key, value in changes.items():
        where, _, field = key.partition("__")
        if field:  # lane__pins: a field of the lane
            lane[field] = value
        elif value is None:
            del doc[where]
        else:
            doc[where] = value
    kept = repo.path / "evals/results/experiments"
    kept.mkdir(parents=True, exist_ok=True)
    (kept / f"{exp_id}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("damage", [
    {"lanes": None}, {"lanes": {"a": 1}}, {"id": "../../../outside"},
    {"lane__pins": {"files": {}, "timing": [[1, 60]]}},
    {"lane__pins": {"files": {}, "timing": {"math/sum": [1]}}},
    {"lane__target_env": {"MODEL": 5}}, {"lane__name": "../a"}, {"lane__commit": 7},
    {"repeat": "3"}, {"cases": "math"}, {"settings": None},
], ids=lambda d: ",".join(d))
def test_recheck_of_a_damaged_report_is_one_line(repo: Repo, damage: dict[str, Any]) -> None:
    """The kept report is read back as untrusted JSON: each damage is refused in one line
    (exit 2), never a traceback nor a lane file read from outside the experiment."""
    _base(repo)
    exp_id = "20261130T000000Z-abcdef"
    _kept(repo, exp_id)  # intact: it is re-checked (its lane file is missing: exit 1)
    r = run_cli("experiment", "--recheck", exp_id, "--format", "json", cwd=repo.path)
    assert r.code == 1, r.err
    assert _lane(json.loads(r.out), "a")["controls"]["held"] is False
    _kept(repo, exp_id, **damage)
    r = run_cli("experiment", "--recheck", exp_id, cwd=repo.path)
    assert r.code == 2 and r.out == "", (r.code, r.out, r.err)
    assert len(r.err.splitlines()) == 1 and "the experiment report is damaged" in r.err
