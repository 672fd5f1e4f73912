"""Sequential runs: the design's exact size, its calls, and `run --against` end to end."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import product

import pytest

from gitevals.run.artifact import load
from gitevals.stats import sequential as sq
from tests.conftest import Repo, run_cli
from tests.support.sequential import CASE

#: tests/support/sequential.py's harness (trial t passes when t % 10 < rate * 10, rates
#: per scenario from rates.json), as a python target: imported once a run and forked per
#: conversation, where the command harness started a Python for each of the 192
#: conversations. These tests are about sequential runs, not command targets (which
#: test_ray's sequential run on the cluster keeps).
HARNESS = """\
import json

rates = json.load(open("rates.json"))


def respond(messages):
    msg = messages[-1]
    ok = msg["trial"] % 10 < round(rates[msg["scenario"]] * 10)
    return {"final_answer": "Paris" if ok else "Lyon", "tool_calls": [], "hooks": [],
            "error": None}
"""
SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'


def _brute_crossing(design: sq.Design, p: Fraction) -> Fraction:
    """P[ever called regressed] at common rate p, over every sequence of outcomes."""
    bounds = sq.efficacy_bounds(design)
    schedule, na, n = design.schedule(), design.base_trials, design.max_trials
    total = Fraction(0)
    for xa in range(na + 1):
        from math import comb

        weight_a = comb(na, xa) * p ** xa * (1 - p) ** (na - xa)
        for seq in product((0, 1), repeat=n):
            w = weight_a
            for bit in seq:
                w *= p if bit else 1 - p
            if any(sum(seq[:m]) <= bounds[k][xa] for k, m in enumerate(schedule)):
                total += w
    return total


def test_crossing_probability_is_exact_on_a_small_design() -> None:
    design = sq.Design(base_trials=5, max_trials=6, looks=3)
    for p in (Fraction(1, 5), Fraction(1, 2), Fraction(9, 10)):
        assert sq._crossing(design, sq.efficacy_bounds(design), float(p)) == pytest.approx(
            float(_brute_crossing(design, p)), abs=1e-12)


@pytest.mark.parametrize(("na", "n", "looks"), [(10, 10, 2), (40, 40, 5), (20, 60, 4)])
def test_false_regressed_rate_is_at_most_half_alpha(na: int, n: int, looks: int) -> None:
    design = sq.Design(base_trials=na, max_trials=n, looks=looks)
    assert sq.size(design) <= design.alpha / 2
    # and it is not needlessly conservative: looser bounds would break the guarantee
    assert sq.size(design) > design.alpha / 2 * 0.5


def test_calls_at_a_look() -> None:
    design = sq.Design(base_trials=40, max_trials=40)
    assert design.schedule() == (8, 16, 24, 32, 40)
    assert sq.decide(design, 40, 0, 3) == "regressed"      # 40/40 then 3/8
    assert sq.decide(design, 40, 0, 8) == "continue"       # 8/8 cannot yet rule 20 pts out
    assert sq.decide(design, 40, 1, 16) == "ruled_out"     # 16/16 can
    assert sq.decide(design, 28, 4, 24) == "no_regression"  # the last look calls nothing else
    assert sq.Design.from_dict(design.as_dict()) == design


def test_run_against_stops_settled_scenarios_and_diff_calls_the_drop(repo: Repo) -> None:
    files = {"harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/cases/geo.yaml": CASE}
    a = repo.commit({**files, "rates.json": json.dumps(
        {"stable": 1.0, "dropped": 1.0, "uncertain": 0.7})}, "A")
    assert run_cli("run", "--jobs", "8", cwd=repo.path, timeout=300).code == 1  # A is flaky
    b = repo.commit({"rates.json": json.dumps(
        {"stable": 1.0, "dropped": 0.3, "uncertain": 0.6})}, "B")
    r = run_cli("run", "--against", a, "--format", "json", "--jobs", "8", cwd=repo.path,
                timeout=300)
    assert r.code == 1, r.err  # B's run has failing trials
    run = load(r.out.encode())
    assert run["sequential"]["against"] == a
    got = {s["id"]: s for s in run["cases"][0]["scenarios"]}
    assert len(got["stable"]["results"]) == 16          # ruled out at the second look
    assert got["stable"]["sequential"]["stopped"] == "ruled_out"
    # regressed at the second look: at the first, 3 of 8 is not yet beyond the family's
    # level (alpha / 3, one design per scenario) against 40 of 40
    assert len(got["dropped"]["results"]) == 16
    assert got["dropped"]["sequential"]["stopped"] == "regressed"
    assert got["dropped"]["sequential"]["looks"] == [
        {"trials": 8, "passes": 3, "call": "continue"},
        {"trials": 16, "passes": 6, "call": "regressed"}]
    # the family of 3 designs is held by Bonferroni under the default control (issue 21)
    assert got["dropped"]["sequential"]["design"]["alpha"] == 0.05 / 3
    assert len(got["uncertain"]["results"]) == 40       # kept running to the maximum
    assert got["uncertain"]["sequential"]["stopped"] == "max_trials"
    assert [lk["trials"] for lk in got["uncertain"]["sequential"]["looks"]] == [8, 16, 24, 32, 40]
    assert got["uncertain"]["sequential"]["base"] == {"passes": 28, "trials": 40}
    assert run["cases"][0]["scenarios"][0]["trials"] == len(run["cases"][0]["scenarios"][0]
                                                           ["results"])
    d = run_cli("diff", a, b, "--format", "json", cwd=repo.path)
    assert d.code == 1, d.err
    doc = json.loads(d.out)
    rows = {row["scenario"]: row for row in doc["verdicts"]}
    assert doc["counts"]["regressed_beyond_noise"] == 1
    assert rows["dropped"]["beyond_noise"] and rows["dropped"]["p"] is None
    assert rows["dropped"]["sequential"].startswith("regressed at look 2 of 5")
    assert not rows["uncertain"]["beyond_noise"]
    assert rows["uncertain"]["sequential"] == ("within noise: not called at the last look "
                                               "(40 trials, sequential bound)")
    assert b  # B is HEAD: the sequential run is pinned to it
    text = run_cli("diff", a, b, cwd=repo.path).out
    assert "regressed at look 2 of 5, 16 trials (sequential bound)" in text
    # a row never contradicts itself: "regressed ... no regression" (issue 23 item 16)
    assert "no regression" not in text


def test_sequential_options_need_a_base(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/cases/geo.yaml": CASE,
                 "rates.json": json.dumps({"stable": 1.0, "dropped": 1.0, "uncertain": 1.0})},
                "A")
    r = run_cli("run", "--looks", "3", cwd=repo.path)
    assert r.code == 2 and "--against" in r.err and "Traceback" not in r.err
    r = run_cli("run", "--against", "HEAD", cwd=repo.path)
    assert r.code == 2 and "no run of HEAD" in r.err
    r = run_cli("run", "--against", "HEAD", "--drop", "0", cwd=repo.path)
    assert r.code == 2 and "Traceback" not in r.err
