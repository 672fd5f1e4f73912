"""Verdicts of the runs pinned to A and B: regressed, improved, new, gone, beyond noise or not."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from gitevals.diff.verdicts import Tally, VerdictRow, compare_verdicts
from tests.conftest import Repo, run_cli
from tests.support.diffs import (
    HARNESS,
    RANDOM_HARNESS,
    RANDOM_SETTINGS,
    SETTINGS,
    case,
    commit_and_run,
)

DURATION = "duration A -> B"


def untimed(table: str) -> str:
    """``table`` without its last column, the measured durations (``timed`` checks them)."""
    lines = table.splitlines()
    at = next(line.index(DURATION) for line in lines if DURATION in line)
    return "\n".join(line[:at].rstrip() for line in lines)


# -- pure ------------------------------------------------------------------------------


def _artifact(**verdicts: tuple[int, int]) -> dict[str, Any]:
    scenarios = [{"id": k, "verdict": {"verdict": "pass" if p == n else "flaky" if p else "fail",
                                       "passes": p, "trials": n}}
                 for k, (p, n) in verdicts.items()]
    return {"cases": [{"name": "geo", "scenarios": scenarios}]}


def test_compare_verdicts_rows() -> None:
    a = _artifact(down=(10, 10), noise=(3, 5), up=(1, 10), same=(4, 5), gone=(1, 1))
    b = _artifact(down=(2, 10), noise=(2, 5), up=(10, 10), same=(8, 10), new=(1, 1))
    rows = {r.scenario: r for r in compare_verdicts(a, b, test="fisher")}
    assert rows["down"] == VerdictRow("geo", "down", Tally("pass", 10, 10), Tally("flaky", 2, 10),
                                      "regressed", pytest.approx(90 / 125970), True,
                                      underpowered=True)  # 10 trials miss a 20-point drop
    assert (rows["noise"].change, rows["noise"].beyond_noise) == ("regressed", False)
    assert (rows["up"].change, rows["up"].beyond_noise) == ("improved", True)
    assert (rows["same"].change, rows["same"].p) == ("unchanged", None)  # 4/5 == 8/10
    assert (rows["gone"].change, rows["gone"].b) == ("gone", None)
    assert (rows["new"].change, rows["new"].a) == ("new", None)
    assert [r.scenario for r in compare_verdicts(a, b)] == sorted(rows)


def test_noise_end_to_end_through_compare_verdicts() -> None:
    """100 simulated scenarios at an unchanged true rate, 10 trials: <= 5 called regressed."""
    rng = random.Random(42)
    a: dict[str, tuple[int, int]] = {}
    b: dict[str, tuple[int, int]] = {}
    for i in range(100):
        rate = rng.choice([0.2, 0.5, 0.7, 0.9])
        a[f"s{i:03d}"] = (sum(rng.random() < rate for _ in range(10)), 10)
        b[f"s{i:03d}"] = (sum(rng.random() < rate for _ in range(10)), 10)
    rows = compare_verdicts(_artifact(**a), _artifact(**b))
    assert sum(r.change == "regressed" for r in rows) > 20  # plenty of movement...
    assert sum(r.change == "regressed" and r.beyond_noise for r in rows) <= 5  # ...but noise


# -- through the CLI, real runs ----------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, str, str]:
    """Two commits, each run once, shared by the tests that only read them."""
    repo = Repo(tmp_path_factory.mktemp("two-runs"))
    repo.git("init", "-q", "-b", "main")
    a = commit_and_run(repo, {"capital": 10, "steady": 3, "better": 1, "retired": 4},
                       case(10), "a")
    b = commit_and_run(repo, {"capital": 2, "steady": 2, "better": 10, "fresh": 5},
                       case(10, ("capital", "steady", "better", "fresh")), "b")
    return repo, a, b


def test_cli_verdict_table_and_exit_code(two_runs: tuple[Repo, str, str]) -> None:
    repo, a, b = two_runs
    r = run_cli("diff", a[:10], "HEAD", cwd=repo.path)
    assert r.code == 1, r.err
    lines = r.out.splitlines()
    assert lines[0] == ("1 regressed beyond noise, 1 regressed within noise, 1 improved, "
                        "1 new, 1 gone, 2 rules changed")
    # one case is one cluster: no suite test; the scenarios' "regressed" family keeps
    # its alpha / 2 (one-sided), so no row is called more easily than before
    assert lines[1] == "suite: not tested (fewer than 2 clusters of scenarios both sides ran)"
    assert lines[2].startswith("noise: scenarios by the boschloo exact test under "
                               "Benjamini-Hochberg false discovery rate at 0.025 over 3 "
                               "scenarios")
    assert lines[3].startswith(f"A  {a[:10]}  {a}  run ")
    assert lines[4].startswith(f"B  HEAD  {b}  run ")
    table = r.out.split("\n\n")[1]
    assert untimed(table) == """\
Verdicts (boschloo test, beyond noise when q < 0.05)
  case  scenario  A           A by B's rules  B           change     p        q       noise
  geo   better    flaky 1/10  flaky 1/10      pass 10/10  improved   4.0e-05  0.0001  beyond noise
  geo   capital   pass 10/10  pass 10/10      flaky 2/10  regressed  0.0002   0.0006  beyond noise
  geo   fresh     -           not_run 0/0     flaky 5/10  new        -        -
  geo   retired   flaky 4/10  flaky 4/10      -           gone       -        -
  geo   steady    flaky 3/10  flaky 3/10      flaky 2/10  regressed  0.8238   1.0000  within noise \
(underpowered)"""
    assert run_cli("diff", a, b, "--fail-on", "never", cwd=repo.path).code == 0
    strict = run_cli("diff", a, b, "--alpha", "0.0001", cwd=repo.path)
    assert strict.code == 0 and strict.out.startswith("0 regressed beyond noise, 2 regressed")


def test_cli_json_verdicts(two_runs: tuple[Repo, str, str]) -> None:
    repo, a, b = two_runs
    r = run_cli("diff", a, b, "--format", "json", "--test", "fisher", cwd=repo.path)
    doc = json.loads(r.out)
    capital = next(v for v in doc["verdicts"] if v["scenario"] == "capital")
    assert capital["a"] == {"verdict": "pass", "passes": 10, "trials": 10}
    assert capital["b"] == {"verdict": "flaky", "passes": 2, "trials": 10}
    assert capital["p"] == pytest.approx(90 / 125970)
    # each side's duration: what its artifact's trials of the scenario took, summed
    for side, sha in (("a", a), ("b", b)):
        [art] = [json.loads(p.read_text()) for p in (repo.path / "evals/results").glob("*.json")
                 if json.loads(p.read_text())["commit"] == sha]
        [sc] = [s for c in art["cases"] for s in c["scenarios"] if s["id"] == "capital"]
        assert capital[f"ms_{side}"] == sum(t["transcript"]["duration_ms"] for t in sc["results"])
    assert capital["ms_a"] > 0
    assert doc["a"]["commit"] == a and doc["b"]["commit"] == b
    assert doc["a"]["run_source"] == "results" and doc["test"] == "fisher"
    assert r.out == run_cli("diff", a, b, "--format", "json", "--test", "fisher",
                            cwd=repo.path).out  # byte-stable


def test_cli_rescored_by_b_rules_separates_rules_from_harness(repo: Repo) -> None:
    same = {"capital": 10, "steady": 3, "better": 10, "retired": 10}
    a = commit_and_run(repo, same, case(10), "a")
    # Same harness; B's rules now expect "Lyon" for steady: only the rules changed.
    b = commit_and_run(repo, same, case(10, steady="Lyon"), "b")
    r = run_cli("diff", a, b, cwd=repo.path)
    assert r.code == 0, r.out + r.err
    rows = untimed(r.out.split("\n\n")[1]).splitlines()
    assert rows[1].split() == ["case", "scenario", "A", "A", "by", "B's", "rules", "B", "change",
                               "p", "q", "noise"]
    # As run: 3/10 -> 7/10 looks like an improvement; by B's rules A was already 7/10.
    # q: Benjamini-Hochberg over the 4 scenarios both ran (3 did not move: p 1), one-sided
    # p x 4, x 2 (the family's half of alpha)
    assert rows[2].split() == ["geo", "steady", "flaky", "3/10", "flaky", "7/10", "flaky",
                               "7/10", "improved", "0.1153", "0.4613", "within", "noise",
                               "(underpowered)"]


def test_cli_explicit_run_files(two_runs: tuple[Repo, str, str], tmp_path: Path) -> None:
    repo, a, b = two_runs
    # Run ids start with the second they ran in: two runs in one second sort by commit,
    # so tell them apart by the commit each artifact records.
    by_commit = {json.loads(p.read_text())["commit"]: str(p)
                 for p in (repo.path / "evals" / "results").glob("*.json")}
    run_a, run_b = by_commit[a], by_commit[b]
    r = run_cli("diff", a, b, "--a-run", run_b, "--b-run", run_a, "--format", "json",
                cwd=repo.path)
    doc = json.loads(r.out)
    assert doc["a"]["run_source"] == "file"
    assert f"note: the run given for A ran commit {b}, not A ({a})" in doc["notes"]
    assert r.code == 1  # swapped: "better" went 10/10 -> 1/10

    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gitevals-run/1"}')
    r = run_cli("diff", a, b, "--a-run", str(bad), cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith(f"gitevals: error: {bad}: not a gitevals run artifact")
    missing = run_cli("diff", a, b, "--b-run", str(tmp_path / "nope.json"), cwd=repo.path)
    assert missing.code == 2 and len(missing.err.splitlines()) == 1
    assert "nope.json: cannot read" in missing.err


def test_cli_side_without_a_run_names_the_command(repo: Repo) -> None:
    a = commit_and_run(repo, {"capital": 10}, case(2), "a")
    b = repo.commit({"passes.json": json.dumps({"capital": 1})}, "b")
    r = run_cli("diff", a, b, cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "verdicts not compared"
    assert lines[2] == f"B  {b}  {b}  no run: make one with `gitevals run --rev {b}`"
    # a CI gate asks for both runs: a missing one is then an error, not a silent pass
    gated = run_cli("diff", a, b, "--require-runs", cwd=repo.path)
    assert gated.code == 2
    assert gated.err.strip() == (f"gitevals: error: no run of {b} ({b[:12]}): make one with "
                                 f"`gitevals run --rev {b}` (--require-runs)")
    assert run_cli("diff", a, a, "--require-runs", cwd=repo.path).code == 0


def test_cli_corrupt_note_is_one_line(repo: Repo) -> None:
    a = repo.commit({"evals/cases/geo.yaml": case(1)}, "a")
    repo.git("notes", "--ref", "gitevals", "add", "-m", "{not json", a)
    r = run_cli("diff", a, "HEAD", cwd=repo.path)
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        f"gitevals: error: git note refs/notes/gitevals on {a[:12]}: not a gitevals run "
        "artifact: not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)); give the .json file `gitevals run` wrote"]



def _random_commit(repo: Repo, rates: dict[str, float], trials: int, seed: str) -> str:
    ids = tuple(sorted(rates))
    sha = repo.commit({"harness.py": RANDOM_HARNESS, "pyproject.toml": RANDOM_SETTINGS,
                       "rates.json": json.dumps(rates), "seed.txt": seed,
                       "evals/cases/sim.yaml": case(trials, ids)}, seed)
    r = run_cli("run", cwd=repo.path)
    assert r.code in (0, 1), r.err
    return sha


def _called(repo: Repo, a: str, b: str) -> tuple[int, int]:
    doc = json.loads(run_cli("diff", a, b, "--format", "json", cwd=repo.path).out)
    regressed = [v for v in doc["verdicts"] if v["change"] == "regressed"]
    return len(regressed), sum(v["beyond_noise"] for v in regressed)


def test_noise_end_to_end_unchanged_rate(repo: Repo) -> None:
    """A real harness, 100 scenarios x 10 trials, same true rate at both commits."""
    rng = random.Random(11)
    rates = {f"s{i:03d}": rng.choice([0.3, 0.5, 0.7, 0.9]) for i in range(100)}
    a = _random_commit(repo, rates, 10, "commit-a")
    b = _random_commit(repo, rates, 10, "commit-b")
    regressed, beyond = _called(repo, a, b)
    assert regressed > 20 and beyond <= 5, (regressed, beyond)


def test_true_drop_end_to_end(repo: Repo) -> None:
    """0.9 -> 0.3 with 20 trials a side, 20 scenarios: at least 90 % called."""
    a = _random_commit(repo, {f"s{i:02d}": 0.9 for i in range(20)}, 20, "commit-a")
    b = _random_commit(repo, {f"s{i:02d}": 0.3 for i in range(20)}, 20, "commit-b")
    regressed, beyond = _called(repo, a, b)
    assert beyond >= 18, (regressed, beyond)


def test_cli_verdict_rows_name_the_changed_graders_they_use(repo: Repo) -> None:
    judged = ("defaults: {trials: 6, timeout: 10s}\nscenarios:\n"
              "  - id: judged\n    user: What is the capital of France?\n"
              "    expect: [{grader: {name: quality.ok}}]\n"
              "  - id: plain\n    user: What is the capital of France?\n"
              "    expect: [{final_answer_contains: Paris}]\n")
    files: dict[str, str | bytes] = {
        "harness.py": HARNESS, "pyproject.toml": SETTINGS,
        "passes.json": json.dumps({"judged": 6, "plain": 6}), "evals/cases/geo.yaml": judged,
        "evals/graders/quality.py": "def ok(t, case, run):\n    return True\n"}
    a = repo.commit(files, "a")
    assert run_cli("run", cwd=repo.path).code == 0
    b = repo.commit({"evals/graders/quality.py":
                     "def ok(t, case, run):\n    return 'Paris' not in run['final_answer']\n"})
    assert run_cli("run", cwd=repo.path).code == 1
    r = run_cli("diff", a, b, cwd=repo.path)
    assert r.code == 1, r.err
    rows = untimed(r.out.split("\n\n")[1]).splitlines()
    assert rows[1].split()[-2:] == ["changed", "graders"]
    assert rows[2].split() == ["geo", "judged", "pass", "6/6", "fail", "0/6", "regressed",
                               "0.0005", "0.0010", "beyond", "noise", "quality.ok"]
    assert len(rows) == 3  # "plain" did not move
