"""Issue #23 item 6: one grader mapped to several buckets is a lint warning (GE615), and
doctor says so; a warning never fails lint."""

from __future__ import annotations

import json

from tests.conftest import Repo, run_cli

GRADERS = ('def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n\n\n'
           'def polite(t, case, run):\n    return "please" in run["final_answer"]\n')


def _goldens() -> str:
    rows = [{"id": f"{b}-{i}", "bucket": b, "input": f"q{i}", "expected": "ok"}
            for b in ("format", "tone", "facts") for i in range(3)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def _commit(repo: Repo, mapping: str) -> None:
    repo.commit({"pyproject.toml": f"[tool.gitevals.goldens.graders]\n{mapping}",
                 "evals/graders/checks.py": GRADERS, "evals/goldens.jsonl": _goldens()})


def test_a_grader_of_several_buckets_is_a_warning_at_the_second(repo: Repo) -> None:
    _commit(repo, 'format = "checks.exact"\nfacts = "checks.exact"\ntone = "checks.polite"\n')
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out + res.err  # a warning, never a failure
    # buckets in name order: facts (line 3) then format (line 2)
    assert ("pyproject.toml:2:10: GE615 (warning) grader checks.exact is mapped to 2 buckets "
            "(facts, format): one grader per bucket") in res.out, res.out
    assert res.out.endswith("1 warning\n")
    doctor = run_cli("doctor", "--format", "json", cwd=repo.path)
    [item] = [i for i in json.loads(doctor.out)["items"] if i["name"] == "graders"]
    assert item["status"] == "ok"
    assert item["detail"] == ("3 buckets, each mapped to a grader; checks.exact grades more "
                              "than one (lint GE615: one grader per bucket)")


def test_one_grader_per_bucket_says_nothing(repo: Repo) -> None:
    _commit(repo, 'format = "checks.exact"\nfacts = "checks.polite"\ntone = "checks.tone"\n')
    repo.commit({"evals/graders/checks.py": GRADERS + "\n\ndef tone(t, case, run):\n"
                                                      "    return True\n"})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0 and "GE615" not in res.out, res.out
