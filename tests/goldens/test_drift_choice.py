"""Multiple-choice drift slices (issue 23, item 8): log-probability scoring when the target
reports it, generate-and-extract otherwise with one retry at the larger token budget."""

from __future__ import annotations

import json
import re
import sys

import pytest

from gitevals.goldens import choice
from tests.conftest import Repo, run_cli
from tests.support import fake_openai
from tests.support.gate import SETTINGS, commit, goldens

# A command target (the choices and the token budget travel in its JSON lines), started
# with -S (it imports the standard library only). Goldens are answered as by the harness
# of test_goldens_gate; a drift row's text ends with its correct label and its id says how
# the target answers: lp* reports log-probabilities (its text a preamble), pre* preambles
# under 100 tokens and states the answer with more, never* never gives one.
MCQ_HARNESS = """\
import json, sys
passes = json.load(open("passes.json"))
for line in sys.stdin:
    msg = json.loads(line)
    sid = msg["scenario"]
    if msg["case"].startswith("drift:"):
        want, budget = msg["text"].split()[-1], msg.get("max_tokens", 0)
        wrong = "A" if want != "A" else "B"
        reply = {"final_answer": "The energy levels of the atom", "tool_calls": [],
                 "hooks": [], "error": None, "asked": [msg.get("choices"), budget]}
        if sid.startswith("lp"):   # right on lp0-lp2, wrong on lp3; E is not a choice
            pick = want if sid < "lp3" else wrong
            reply["choice_logprobs"] = {"E": -0.01, pick: -0.2,
                                        **{k: -3.0 for k in "ABCD" if k != pick}}
        elif sid.startswith("pre") and budget >= 100:
            reply["final_answer"] = f"Levels are quantized, so the answer is ({want})."
        elif sid.startswith("tie"):
            reply["choice_logprobs"] = {"A": -1.0, "B": -1.0}
        print(json.dumps(reply), flush=True)
        continue
    ok = int(sid[1:]) < passes.get(sid[0], 0)
    print(json.dumps({"final_answer": "ok" if ok else "no", "tool_calls": [], "hooks": [],
                      "error": None}), flush=True)
"""
MCQ_SETTINGS = SETTINGS.replace('python = "harness:respond"',
                                f'command = ["{sys.executable}", "-S", "harness.py"]')
assert MCQ_SETTINGS != SETTINGS

SUITE = """\
frozen_benchmarks:
  - name: mcq
    source: bench/mcq.jsonl
    split: test
    n_items: 8   # sized for a 50-point smoke test
    seed: 3
    choices: [A, B, C, D]
    max_tokens: [16, 256]
drift_budget:
  noise_tolerance_pts: 2
  hard_fail_threshold_pts: 60
"""


def mcq_rows() -> str:
    ids = ["lp0", "lp1", "lp2", "lp3", "pre0", "pre1", "never0", "tie0"]
    rows = [{"id": i, "split": "test", "input": f"Which level? {'ABCD'[n % 4]}",
             "expected": "ABCD"[n % 4]} for n, i in enumerate(ids)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_choice_rows_are_scored_by_logprob_else_extracted_with_one_retry(repo: Repo) -> None:
    # 6 goldens a bucket, not 20: this test reads the mcq slice (f04 and f05 still fail)
    commit(repo, 4, 12, {"harness.py": MCQ_HARNESS, "pyproject.toml": MCQ_SETTINGS,
                         "evals/drift-suite.yaml": SUITE, "evals/goldens.jsonl": goldens(6),
                         "bench/mcq.jsonl": mcq_rows()})
    assert not re.search(r"GE63\d", run_cli("lint", cwd=repo.path).out)  # the suite lints
    res = run_cli("run", "--goldens-only", cwd=repo.path)
    assert res.code == 1, res.err  # never0 and tie0 fail, and goldens beyond f03
    (path,) = (repo.path / "evals/results").glob("*.json")
    part = json.loads(path.read_text())["goldens"]
    items = {it["id"]: it for it in part["items"] if it["slice"] == "mcq"}
    assert {k: (it["passed"], [(a["max_tokens"], a["method"], a["chosen"])
                               for a in it["choice"]["attempts"]])
            for k, it in items.items()} == {
        "lp0": (True, [(16, "logprob", "A")]), "lp1": (True, [(16, "logprob", "B")]),
        "lp2": (True, [(16, "logprob", "C")]), "lp3": (False, [(16, "logprob", "A")]),
        "pre0": (True, [(16, "unparsed", None), (256, "extract", "A")]),
        "pre1": (True, [(16, "unparsed", None), (256, "extract", "B")]),
        "never0": (False, [(16, "unparsed", None), (256, "unparsed", None)]),
        "tie0": (False, [(16, "tie", None)])}
    pre = items["pre0"]
    assert pre["grader"] == "choice" and pre["choice"]["expected"] == "A"
    assert pre["choice"]["attempts"][0]["final_answer"] == "The energy levels of the atom"
    assert [t["asked"] for t in pre["choice"]["attempts"][0]["turns"]] == [
        [["A", "B", "C", "D"], 16]]
    assert [t["asked"] for t in pre["transcript"]["turns"]] == [[["A", "B", "C", "D"], 256]]
    assert pre["outcome"]["message"] == ("grader choice: judged pass")
    assert items["never0"]["answer"]["raw"]["why"] == (
        "no choice of A/B/C/D in the answer (retried at max_tokens 256: the first answer "
        "did not parse): scored wrong (expected C)")
    assert items["lp3"]["answer"]["raw"]["why"] == (
        "chose A by log-probability (-0.2; next B -3), expected D")
    assert items["tie0"]["answer"]["raw"]["why"].startswith(
        "A and B share the highest log-probability")
    rate = next(s for s in part["slices"] if s["name"] == "mcq")
    assert (rate["passed"], rate["total"], rate["errors"], rate["grader"]) == (5, 8, 0, "choice")
    # `score --regrade` re-asks the tree's graders: a choice row keeps gitevals' own score
    again = run_cli("score", str(path), "--regrade", "--format", "json", cwd=repo.path)
    assert again.code == 1, again.err
    assert "benchmark mcq" in run_cli("show", str(path), cwd=repo.path).out


@pytest.mark.parametrize(("entry", "code", "words"), [
    ("    grader: checks.exact\n", "GE630", "a slice with choices is scored by gitevals"),
    ("", "GE635", "has no \"expected\" among the choices A/B/C/D"),
], ids=["choices-and-grader", "expected-not-a-choice"])
def test_lint_refuses_what_a_choice_slice_cannot_score(repo: Repo, entry: str, code: str,
                                                        words: str) -> None:
    rows = mcq_rows() if entry else mcq_rows().replace('"expected": "B"', '"expected": "Z"')
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE.replace("    seed: 3\n",
                                                                 "    seed: 3\n" + entry),
                         "bench/mcq.jsonl": rows})
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1 and code in lint.out and words in lint.out, lint.out
    run = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path)
    assert run.code == 1 and "the goldens do not lint" in run.err


def test_a_retry_budget_not_above_the_first_is_refused(repo: Repo) -> None:
    commit(repo, 4, 12, {"evals/drift-suite.yaml": SUITE.replace("[16, 256]", "[64, 64]"),
                         "bench/mcq.jsonl": mcq_rows()})
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 1
    assert ("evals/drift-suite.yaml:8:17: GE630 max_tokens [64, 64]: the retry of an unparsed "
            "answer must have the larger budget") in lint.out, lint.out


@pytest.mark.parametrize(("text", "label"), [
    ("B", "B"), ("(B)", "B"), ("B.", "B"), ("B) Paris", "B"), ("**C**", "C"), ("[D]", "D"),
    ("The answer is B.", "B"), ("Answer: (C)", "C"), ("final answer is **D**", "D"),
    ("A cat sat", None), ("Because", None), ("The energy levels of", None),
    ("The answer is not A", None), ("b", None), ("Answer: A, no wait, the answer is C", "C"),
], ids=lambda v: repr(v))
def test_extract_reads_a_stated_label_never_one_inside_prose(text: str,
                                                             label: str | None) -> None:
    assert choice.extract(text, ("A", "B", "C", "D")) == label


def test_logprobs_are_argmaxed_over_the_allowed_labels_only() -> None:
    labels = ("A", "B")
    assert choice.score({"final_answer": "", "choice_logprobs": {"C": -0.1, "B": -0.5,
                                                                 "A": -0.9}}, labels).label == "B"
    # no allowed label reported: the text is read instead
    assert choice.score({"final_answer": "A", "choice_logprobs": {"C": -0.1}}, labels) == \
        choice.Scored("A", choice.EXTRACT, "extracted A from the answer")
    assert choice.score({"final_answer": None}, labels).method == choice.UNPARSED


def test_the_openai_endpoint_target_passes_the_token_budget_on(repo: Repo) -> None:
    suite = SUITE.replace("n_items: 8", "n_items: 1").replace("    max_tokens: [16, 256]\n", "")
    with fake_openai.serve() as fake:
        commit(repo, 4, 12, {  # a golden a bucket: this test reads the mcq row's budgets
            "evals/drift-suite.yaml": suite, "bench/mcq.jsonl": mcq_rows(),
            "evals/goldens.jsonl": goldens(1),
            "pyproject.toml": (f'[tool.gitevals.target]\nopenai = {{ base_url = "{fake.url}", '
                               'model = "m-1" }\n[tool.gitevals.goldens]\n'
                               'graders = {format = "checks.exact", tone = "checks.exact"}\n')})
        res = run_cli("run", "--goldens-only", "--no-note", cwd=repo.path)
        assert res.code == 1, res.err  # the fake only echoes: nothing parses
        budgets = [r.get("max_tokens") for r in fake.requests
                   if r["messages"][-1]["content"].startswith("Which level?")]
    # the default budgets: an echo holds no label, so it is asked once more with more
    assert budgets == [64, 1024]
    (path,) = (repo.path / "evals/results").glob("*.json")
    (item,) = [it for it in json.loads(path.read_text())["goldens"]["items"]
               if it["slice"] == "mcq"]
    assert [a["method"] for a in item["choice"]["attempts"]] == ["unparsed", "unparsed"]
