"""``gitevals goldens stats``: counts per bucket, split and tag, and the seed's floors,
through the real CLI on a real repository."""

from __future__ import annotations

import json

import pytest

from gitevals.goldens.stats import buckets_floor, stats_of
from tests.conftest import Repo, run_cli

G = "evals/goldens.jsonl"


def goldens(n: int, buckets: list[str], *, splits: tuple[str, ...] = ("train", "holdout"),
            tag_every: int = 0) -> str:
    out = []
    for i in range(n):
        row: dict[str, object] = {"id": f"g-{i}", "input": f"q{i}",
                                  "bucket": buckets[i % len(buckets)],
                                  "split": splits[i % len(splits)]}
        if tag_every and i % tag_every == 0:
            row["tags"] = ["drift-suite", "smoke"] if i % (2 * tag_every) == 0 else ["smoke"]
        out.append(json.dumps(row))
    return "\n".join(out) + "\n"


def test_counts_equal_a_hand_count_and_floors_hold(repo: Repo) -> None:
    repo.write({G: goldens(120, ["format", "tone", "tools", "refusal", "facts"], tag_every=10)
                + '{"id": "x", "tag": "smoke"}\n{oops\n'})
    res = run_cli("goldens", "stats", "--format", "json", cwd=repo.path)
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["items"] == 121 and doc["unreadable"] == 1
    assert doc["buckets"] == {"facts": 24, "format": 24, "refusal": 24, "tone": 24, "tools": 24,
                              "": 1}
    assert doc["splits"] == {"holdout": 60, "train": 60, "": 1}
    assert doc["tags"] == {"drift-suite": 6, "smoke": 13}
    assert [(f["name"], f["ok"]) for f in doc["floors"]] == [("items", True), ("buckets", True)]
    assert doc["floors_met"] is True


def test_text_says_which_floors_are_not_met(repo: Repo) -> None:
    repo.write({G: goldens(30, ["schema", "fields"])})
    res = run_cli("goldens", "stats", cwd=repo.path)
    assert res.code == 0
    assert "30 items, 2 buckets" in res.out
    assert "missing  items: 30 (want >= 100): label 70 more" in res.out
    assert "note     buckets: 2 (want 4-8): fewer than 4: fine only for a " \
           "single-failure-surface task" in res.out


def test_rev_reads_the_commit_not_the_working_tree(repo: Repo) -> None:
    repo.commit({G: goldens(3, ["a"])})
    repo.write({G: goldens(5, ["a"])})
    committed = json.loads(run_cli("goldens", "stats", "--rev", "HEAD", "--format", "json",
                                   cwd=repo.path).out)
    working = json.loads(run_cli("goldens", "stats", "--format", "json", cwd=repo.path).out)
    assert (committed["items"], working["items"]) == (3, 5)


def test_no_goldens_file_is_one_line_exit_2(repo: Repo) -> None:
    res = run_cli("goldens", "stats", cwd=repo.path)
    assert res.code == 2 and res.out == ""
    assert res.err == ("gitevals: error: evals/goldens.jsonl: no such file in working tree; "
                       "commit one JSON object a line (see docs/goldens.md)\n")


def test_names_from_the_file_are_escaped(repo: Repo) -> None:
    repo.write({G: json.dumps({"id": 1, "bucket": "\x1b[31mred"}) + "\n"})
    res = run_cli("goldens", "stats", cwd=repo.path)
    assert "\x1b" not in res.out and "\\x1b[31mred" in res.out


@pytest.mark.parametrize(("n", "ok"), [(0, False), (1, None), (2, None), (3, False), (4, True),
                                       (8, True), (9, False)])
def test_bucket_floor(n: int, ok: bool | None) -> None:
    assert buckets_floor(n).ok is ok


def test_stats_of_ignores_blank_lines_and_bad_types() -> None:
    s = stats_of(b'\n{"id": 1, "bucket": 3, "split": "train", "tags": ["a", 2]}\n  \n[1]\n')
    assert (s.items, s.unreadable, s.buckets, s.splits, s.tags) == (
        1, 1, {None: 1}, {"train": 1}, {"a": 1})
