"""Issue #23 item 5: a judge is pinned by what its API answers. Every call records the
model the reply named; a run whose judge answered as another model than the configured
snapshot, or changed model mid-run, has no calibrated judge grader (GE517). A fake
OpenAI-compatible judge on 127.0.0.1 names the model of each reply."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.calibration import CASE, HARNESS, JUDGED, ONE_JOB, SETTINGS
from tests.support.calibration_records import record

MODEL = "judge-2026-01-15"


@dataclass
class Judge:
    """Answers PASS; call ``i`` names ``models[min(i, len - 1)]`` (None: no model field)."""

    url: str = ""
    models: list[str | None] = field(default_factory=lambda: [MODEL])
    calls: int = 0


@pytest.fixture
def judge() -> Iterator[Judge]:
    state = Judge()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                model = state.models[min(state.calls, len(state.models) - 1)]
                state.calls += 1
            reply: dict[str, Any] = {"choices": [{"message": {"role": "assistant",
                                                             "content": "PASS"}}]}
            if model is not None:
                reply["model"] = model
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # the preflight
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _calibrated_tree(repo: Repo, judge: Judge) -> None:
    settings = (SETTINGS + f'\n[tool.gitevals.judge]\nbase_url = "{judge.url}"\n'
                f'model = "{MODEL}"\nretries = 1\n')
    repo.commit({"harness.py": HARNESS, "pyproject.toml": settings,
                 "evals/cases/polite.yaml": CASE, "evals/graders/q.py": JUDGED})
    repo.commit({"evals/calibration/q.tone.json": json.dumps(record(repo, "q.tone", MODEL))},
                msg="calibrated")


def _run(repo: Repo) -> dict[str, Any]:
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code in (0, 1), res.err
    [path] = (repo.path / "evals/results").glob("*.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    return doc


def _answered(doc: dict[str, Any]) -> list[str | None]:
    return [m for s in doc["cases"][0]["scenarios"] for t in s["results"]
            for g in t["graders"] for m in g["usage"]["models"]]


def test_a_judge_answering_as_its_pinned_snapshot_keeps_it_calibrated(
        repo: Repo, judge: Judge) -> None:
    _calibrated_tree(repo, judge)
    doc = _run(repo)
    assert _answered(doc) == [MODEL, MODEL]  # recorded on every call
    assert doc["judge_calibration"]["q.tone"]["status"] == "calibrated"


def test_an_alias_is_refused_by_the_model_the_api_answered_with(
        repo: Repo, judge: Judge) -> None:
    # the configured name says nothing floating; the endpoint serves another model
    judge.models = ["judge-2026-03-09"]
    _calibrated_tree(repo, judge)
    doc = _run(repo)
    assert _answered(doc) == ["judge-2026-03-09"] * 2
    status = doc["judge_calibration"]["q.tone"]
    assert (status["status"], status["code"]) == ("advisory", "GE517")
    assert status["reason"].startswith(
        "the judge answered as 'judge-2026-03-09', not the configured 'judge-2026-01-15'")


def test_a_judge_that_changes_model_mid_run_fails_the_calibration_status(
        repo: Repo, judge: Judge) -> None:
    judge.models = [MODEL, "judge-2026-02-01"]
    _calibrated_tree(repo, judge)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 0, res.err  # advisory: its failures would be shown, not counted
    # trials run in parallel: either model may have answered first
    line = next(ln for ln in res.out.splitlines() if ln.startswith("calibration: q.tone"))
    assert "during the run: its model changed mid-run" in line, res.out
    assert "'judge-2026-01-15'" in line and "'judge-2026-02-01'" in line
    [path] = (repo.path / "evals/results").glob("*.json")
    status = json.loads(path.read_text())["judge_calibration"]["q.tone"]
    assert (status["status"], status["code"]) == ("advisory", "GE517")


def test_a_reply_naming_no_model_proves_nothing_either_way(repo: Repo, judge: Judge) -> None:
    judge.models = [None]
    _calibrated_tree(repo, judge)
    doc = _run(repo)
    assert _answered(doc) == [None, None]
    assert doc["judge_calibration"]["q.tone"]["status"] == "calibrated"


# -- an unset judge or target family is a warning, in lint and doctor -------------------


def _family_tree(repo: Repo, judge_family: str = "", target_family: str = "") -> None:
    target = f'family = "{target_family}"\n' if target_family else ""
    judged = f'family = "{judge_family}"\n' if judge_family else ""
    repo.commit({"harness.py": HARNESS, "evals/cases/polite.yaml": CASE,
                 "evals/graders/q.py": JUDGED,
                 "pyproject.toml": SETTINGS + target + '\n[tool.gitevals.judge]\nbase_url = '
                 f'"http://127.0.0.1:9/v1"\nmodel = "{MODEL}"\n' + judged})


def test_an_unset_family_is_a_lint_warning_at_its_table(repo: Repo) -> None:
    _family_tree(repo, judge_family="claude")
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    found = [ln for ln in res.out.splitlines() if "GE706" in ln]
    assert found == ['pyproject.toml:1:1: GE706 (warning) target family is not set: nothing '
                     "checks that the judge comes from another model family than the model "
                     'under test (GE704); set family = "..." in [tool.gitevals.target]']
    _family_tree(repo, judge_family="claude", target_family="llama")
    assert "GE706" not in run_cli("lint", cwd=repo.path).out


def _judges_item(repo: Repo) -> tuple[int, dict[str, Any]]:
    res = run_cli("doctor", "--format", "json", cwd=repo.path)
    [item] = [i for i in json.loads(res.out)["items"] if i["name"] == "judges"]
    return res.code, item


def test_doctor_states_the_judge_pin_and_warns_of_unset_families(repo: Repo) -> None:
    from tests.support.doctor import SETTINGS as BUCKETS

    _family_tree(repo)
    text = (repo.path / "pyproject.toml").read_text()
    repo.commit({"pyproject.toml": text + BUCKETS.replace("tone.polite", "q.tone")})
    _, item = _judges_item(repo)
    assert item["detail"].endswith(
        f"; judge model {MODEL!r}, families: judge unset, target unset"), item
    assert item["warnings"] == [
        "judge and target family not set, so nothing checks the judge comes from another "
        'family than the model under test (GE706): set family = "..." in the judge and '
        "target tables of the settings",
        "the judge's snapshot is not checked yet: no run of this commit recorded the model "
        f"its API answered as (a run checks it against {MODEL!r}, GE517): `gitevals run`"]
    out = run_cli("doctor", cwd=repo.path).out
    assert "  warning: judge and target family not set" in out
    _family_tree(repo, judge_family="claude", target_family="llama")
    text = (repo.path / "pyproject.toml").read_text()
    repo.commit({"pyproject.toml": text + BUCKETS.replace("tone.polite", "q.tone")})
    _, item = _judges_item(repo)
    assert item["detail"].endswith("families: judge claude, target llama")
    assert not any("family" in w for w in item["warnings"])


def _mapped(repo: Repo, judge: Judge) -> None:
    """A calibrated q.tone, mapped to a goldens bucket, with both families set."""
    from tests.support.doctor import SETTINGS as BUCKETS

    _calibrated_tree(repo, judge)
    text = (repo.path / "pyproject.toml").read_text().replace(
        "[tool.gitevals.judge]\n", '[tool.gitevals.judge]\nfamily = "claude"\n')
    text = text.replace("[tool.gitevals.target]\n", '[tool.gitevals.target]\nfamily = "llama"\n')
    repo.commit({"pyproject.toml": text + BUCKETS.replace("tone.polite", "q.tone")})


def test_doctor_checks_the_snapshot_by_what_the_commits_run_recorded(
        repo: Repo, judge: Judge) -> None:
    judge.models = ["judge-2026-03-09"]  # the configured name is served by another model
    _mapped(repo, judge)
    _, item = _judges_item(repo)  # no run yet: calibrated, the snapshot unchecked
    assert item["status"] == "ok", item
    assert item["detail"].startswith("judges calibrated: q.tone calibrated"), item
    assert [w for w in item["warnings"] if "snapshot is not checked yet" in w], item
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code in (0, 1), res.err
    [path] = (repo.path / "evals/results").glob("*.json")
    run_id = json.loads(path.read_text())["run_id"]
    _, item = _judges_item(repo)
    assert item["status"] == "missing" and item["warnings"] == []
    assert item["detail"].endswith(
        f"; run {run_id}: the judge answered as 'judge-2026-03-09', not the configured "
        f"{MODEL!r}: the configured name is an alias of another model, so the calibration "
        "does not measure it; set judge.model = 'judge-2026-03-09' (the snapshot it "
        "answered as), calibrate it, and run again"), item
    assert item["fix"].startswith("set judge.model to the dated snapshot the endpoint answers")


def test_doctor_finds_the_judge_pinned_when_it_answered_as_its_snapshot(
        repo: Repo, judge: Judge) -> None:
    _mapped(repo, judge)
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code in (0, 1), res.err
    _, item = _judges_item(repo)
    assert (item["status"], item["warnings"]) == ("ok", []), item
    assert item["detail"].endswith(f"judge model {MODEL!r}, families: judge claude, "
                                   "target llama")


# -- calibrate records nothing of a judge that is not the pinned snapshot ---------------


def test_calibrate_records_nothing_when_the_judge_answers_as_another_model(
        repo: Repo, judge: Judge) -> None:
    from tests.support.calibration import setup as _setup

    judge.models = ["judge-2026-03-09"]  # the configured name is an alias of this one
    _setup(repo, judge)  # type: ignore[arg-type]  # a Judge: only its url is read
    res = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                  cwd=repo.path)
    assert res.code == 1 and len(res.err.strip().splitlines()) == 1, res.err
    assert res.err.startswith(
        "gitevals: error: nothing was recorded of the test split: the judge answered as "
        f"'judge-2026-03-09', not the configured {MODEL!r}"), res.err
    assert "TPR" not in res.out and not (repo.path / "evals/calibration").exists()
    # no rate was shown: the test split is not spent, and the pinned snapshot measures it
    judge.models = [MODEL]
    res = run_cli("calibrate", *ONE_JOB, "q.fair", "--labels", "labels.jsonl", "--final",
                  cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert (repo.path / "evals/calibration/q.fair.json").is_file()
