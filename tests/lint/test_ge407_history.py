"""GE407: a scenario with more trials than one before it in its case runs its extra
trials without that scenario's turns (issue 23, item 18)."""

from __future__ import annotations

import pytest

from gitevals.lint.cases import lint_case_bytes

from ..conftest import Repo, run_cli


def _case(*trials: int | None, default: int | None = None) -> bytes:
    head = f"defaults: {{trials: {default}}}\n" if default is not None else ""
    body = "".join(f"  - id: s{i}\n    user: hi\n" + (f"    trials: {t}\n" if t else "")
                   + "    expect: [{no_error: true}]\n" for i, t in enumerate(trials))
    return (head + "scenarios:\n" + body).encode()


@pytest.mark.parametrize(("doc", "lines"), [
    (_case(3, 5), ["c.yaml:8:13: GE407 (warning) scenario 's1' runs 5 trials, more than 's0' "
                   "before it (3): its trials 4-5 are conversations without 's0''s turns; "
                   "give it 3 trials, or a case of its own, for every trial to see the same "
                   "history"]),
    (_case(5, 3, 1), []),
    (_case(3, 3), []),
    (_case(None, 2, default=1), [
        "c.yaml:8:13: GE407 (warning) scenario 's1' runs 2 trials, more than 's0' before it (1): "
        "its trial 2 is a conversation without"]),
    (_case(5, 1, 3), ["c.yaml:12:13: GE407 (warning) scenario 's2' runs 3 trials, more than "
                      "'s1' before it (1)"]),
], ids=["more-after", "non-increasing", "equal", "over-default", "against-the-fewest"])
def test_ge407(doc: bytes, lines: list[str]) -> None:
    found = [str(f) for f in lint_case_bytes(doc, "c.yaml", {})[0] if f.code == "GE407"]
    assert len(found) == len(lines)
    for got, want in zip(found, lines, strict=True):
        assert got.startswith(want)


def test_ge407_is_a_warning_lint_passes(repo: Repo) -> None:
    repo.commit({"evals/cases/c.yaml": _case(1, 3).decode()})
    res = run_cli("lint", cwd=repo.path)
    assert res.code == 0, res.out + res.err
    assert "GE407 (warning)" in res.out + res.err
