"""Issue 25 (item 10): publish-check compares goldens ids with the last published state
(the nearest tag or remote ref below), not only the parent, so an unrelated commit on top
of a removal or a reuse does not hide it. Real CLI on real repositories."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Repo, run_cli

G, R = "evals/goldens.jsonl", "evals/goldens.retired"


def rows(*ids: str) -> str:
    return "".join(json.dumps({"id": i, "input": f"q {i}", "expected": "ok"}) + "\n"
                   for i in ids)


@pytest.fixture
def published(repo: Repo) -> Repo:
    repo.commit({G: rows("g1", "g2", "g3"), R: "g0\n"})
    repo.git("tag", "v1")
    return repo


@pytest.mark.parametrize(("change", "code"), [
    ({G: rows("g1", "g3")}, "GE620"),                  # g2 left, not retired
    ({R: ""}, "GE623"),                                # g0 taken out of goldens.retired
    ({R: "", G: rows("g0", "g1", "g2", "g3")}, "GE623"),  # ... and reused
], ids=["unretired-removal", "unretired-id", "reused-retired-id"])
def test_a_commit_on_top_does_not_hide_it_from_publish_check(
        published: Repo, change: dict[str, str | bytes], code: str) -> None:
    published.commit(change, msg="the change")
    published.commit({"README": "unrelated\n"}, msg="unrelated")
    published.git("tag", "v2")
    res = run_cli("publish-check", "v2", cwd=published.path)
    assert res.code == 1, res.out + res.err
    assert code in res.out


def test_a_clean_history_since_the_tag_passes(published: Repo) -> None:
    published.commit({G: rows("g1", "g3"), R: "g0\ng2\n"}, msg="retire g2")
    published.commit({"README": "unrelated\n"}, msg="unrelated")
    res = run_cli("publish-check", "HEAD", cwd=published.path)
    assert res.code == 0, res.out + res.err
