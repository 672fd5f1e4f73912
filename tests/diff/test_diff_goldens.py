"""goldens.jsonl between two revisions: by id, field by field, with bad lines and duplicates."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.diff.goldens import (
    BucketCount,
    FieldChange,
    GoldenChange,
    GoldensProblem,
    diff_goldens,
    differing_lines,
    walk,
)
from tests.conftest import Repo, run_cli


def _jsonl(*rows: dict[str, Any] | str) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


A = _jsonl({"id": "g1", "bucket": "math", "input": "1+1", "expected": "2"},
           {"id": "g2", "bucket": "math", "input": "2+2", "expected": "4"},
           {"id": "g3", "bucket": "chat", "input": "hi", "expected": "hello"},
           {"id": "g4", "bucket": "chat", "input": "bye", "expected": "ciao"})


def test_added_removed_changed_with_fields_lines_and_buckets() -> None:
    b = _jsonl({"id": "g1", "bucket": "math", "input": "1+1", "expected": "2"},
               {"id": "g2", "bucket": "math", "input": "2+2", "expected": "four", "note": "x"},
               {"id": "g4", "bucket": "chat", "input": "bye", "expected": "ciao"},
               {"id": "g5", "bucket": "chat", "input": "yo", "expected": "hey"})
    d = diff_goldens(A, b, "evals/goldens.jsonl", "evals/goldens.jsonl")
    assert d.changes == (
        GoldenChange("g2", "changed", "math", 2, 2, (
            FieldChange("expected", "4", "four"),
            FieldChange("note", None, "x", absent_before=True))),
        GoldenChange("g3", "removed", "chat", 3, None),
        GoldenChange("g5", "added", "chat", None, 4),
    )
    assert d.buckets == (BucketCount("chat", added=1, removed=1), BucketCount("math", changed=1))
    assert d.problems == ()


def test_moved_or_reformatted_line_is_not_a_change() -> None:
    b = _jsonl({"id": "g2", "bucket": "math", "input": "2+2", "expected": "4"},
               '{"id":"g1",  "bucket":"math","input":"1+1","expected":"2"}',
               {"id": "g3", "bucket": "chat", "input": "hi", "expected": "hello"},
               {"id": "g4", "bucket": "chat", "input": "bye", "expected": "ciao"})
    d = diff_goldens(A, b)
    assert d.changes == ()
    assert d.lines_parsed == 2  # g1 on each side: the g2, g3, g4 lines pair up unparsed


def test_unparsable_lines_reported_and_the_rest_still_compared() -> None:
    b = _jsonl({"id": "g1", "bucket": "math", "input": "1+1", "expected": "2"},
               '{"id": "g2", "bucket": "math", "input": ',
               "[1, 2]",
               {"id": "g3", "bucket": "chat", "input": "hi", "expected": "HELLO"},
               {"bucket": "chat", "input": "bye"})
    d = diff_goldens(A, b, "a.jsonl", "b.jsonl")
    assert [(p.side, p.lines, p.kind) for p in d.problems] == [
        ("b", (2,), "unparsable"), ("b", (3,), "unparsable"), ("b", (5,), "unparsable")]
    assert d.problems[0].message.startswith("not JSON (")
    assert d.problems[1].message == "not a JSON object; write one object per line"
    assert d.problems[2].message == 'object without "id"; give every item a unique id'
    assert [(c.id, c.kind, c.line_a, c.line_b) for c in d.changes] == [
        ("g2", "removed", 2, None), ("g3", "changed", 3, 4), ("g4", "removed", 4, None)]


def test_duplicate_ids_on_either_side_with_line_numbers() -> None:
    # B duplicates g1 on an unchanged line's id; A held g3 twice already.
    a = A + _jsonl({"id": "g3", "bucket": "chat", "input": "again", "expected": "x"})
    b = A + _jsonl({"id": "g1", "bucket": "math", "input": "1+1 again", "expected": "2"})
    d = diff_goldens(a, b, "a.jsonl", "b.jsonl")
    assert d.problems == (
        GoldensProblem("a", (3, 5), "duplicate-id",
                       "id 'g3' is held by 2 lines; ids are unique: give each item its own id"),
        GoldensProblem("b", (1, 5), "duplicate-id",
                       "id 'g1' is held by 2 lines; ids are unique: give each item its own id"),
    )


def test_duplicate_only_on_a_found_without_full_parse_of_b() -> None:
    a = A + _jsonl({"id": "g2", "bucket": "math", "input": "dup", "expected": "4"})
    d = diff_goldens(a, A)
    assert [(p.side, p.lines) for p in d.problems] == [("a", (2, 5))]
    assert [(c.id, c.kind, c.line_a) for c in d.changes] == [("g2", "removed", 5)]


def test_integer_ids_and_ids_not_first_in_the_object() -> None:
    a = _jsonl({"id": 1, "q": "a"}, {"q": "b", "id": 2}, {"q": "c", "id": 2})
    b = _jsonl({"id": 1, "q": "A"}, {"q": "b", "id": 2}, {"q": "c", "id": 3})
    d = diff_goldens(a, b)
    assert [(c.id, c.kind) for c in d.changes] == [("1", "changed"), ("3", "added"),
                                                   ("2", "removed")]
    assert [(p.side, p.lines) for p in d.problems] == [("a", (2, 3))]


def test_absent_side_and_blank_lines() -> None:
    d = diff_goldens(None, _jsonl({"id": "x"}, "", {"id": "y"}), None, "evals/goldens.jsonl")
    assert d.path_a is None
    assert [(c.id, c.kind, c.line_b) for c in d.changes] == [("x", "added", 1), ("y", "added", 3)]
    assert d.problems == ()


def _reference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> set[tuple[str, str, Any, Any]]:
    """Parse everything, compare by id: the slow definition the fast diff must agree with."""
    ia = {r["id"]: (n, r) for n, r in enumerate(a, 1)}
    ib = {r["id"]: (n, r) for n, r in enumerate(b, 1)}
    out = set()
    for k in set(ia) | set(ib):
        if k not in ib:
            out.add((k, "removed", ia[k][0], None))
        elif k not in ia:
            out.add((k, "added", None, ib[k][0]))
        elif ia[k][1] != ib[k][1]:
            out.add((k, "changed", ia[k][0], ib[k][0]))
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 300), st.floats(0, 0.5))
def test_fast_diff_agrees_with_parsing_everything(seed: int, n: int, churn: float) -> None:
    rng = random.Random(seed)
    a = [{"id": f"g{i}", "v": rng.randint(0, 3)} for i in range(n)]
    b = [dict(r) for r in a]
    for _ in range(int(n * churn) + 1):
        op = rng.random()
        if b and op < 0.3:
            b[rng.randrange(len(b))]["v"] = 9
        elif b and op < 0.5:
            b.pop(rng.randrange(len(b)))
        elif op < 0.7:
            b.insert(rng.randint(0, len(b)), {"id": f"n{rng.randint(0, 10**9)}", "v": 0})
        elif len(b) > 1:
            i, j = rng.randrange(len(b)), rng.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    b = list({r["id"]: r for r in b}.values())
    d = diff_goldens(_jsonl(*a), _jsonl(*b))
    assert {(c.id, c.kind, c.line_a, c.line_b) for c in d.changes} == _reference(a, b)
    assert d.problems == ()


def test_differing_lines_marks_only_edits() -> None:
    la = [f"{i}".encode() for i in range(1000)]
    lb = [*la[:10], b"new", *la[10:500], *la[501:], b"tail"]
    lb[700] = b"edited"
    a, b = b"\n".join(la) + b"\n", b"\n".join(lb) + b"\n"
    assert differing_lines(a, b) == ([500, 700], [10, 700, 1000])
    assert differing_lines(a, a) == ([], [])
    assert differing_lines(a[:-1], a) == ([], [])  # a missing final newline is no change
    assert differing_lines(a, a + b"x") == ([], [1000])
    assert differing_lines(b"", a) == ([], list(range(1000)))


BAD = ("not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)); "
       "write one JSON object per line")


def _goldens_repo(repo: Repo, a: bytes, b: bytes) -> tuple[str, str]:
    first = repo.commit({"evals/goldens.jsonl": a, "evals/cases/.keep": ""}, "a")
    second = repo.commit({"evals/goldens.jsonl": b}, "b")
    return first, second


def test_cli_goldens_rows_and_malformed_side(repo: Repo) -> None:
    b = _jsonl({"id": "g1", "bucket": "math", "input": "1+1", "expected": "two"},
               "{oops",
               {"id": "g3", "bucket": "chat", "input": "hi", "expected": "hello"},
               {"id": "g4", "bucket": "chat", "input": "bye", "expected": "ciao"},
               {"id": "g6", "bucket": "chat", "input": "x" * 200, "expected": "y"})
    a_sha, b_sha = _goldens_repo(repo, A, b)
    r = run_cli("diff", a_sha[:8], "HEAD", "--only", "goldens", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == ("verdicts not compared, 3 goldens changed, "
                                     "1 goldens problem found")
    assert r.out.split("\n\n", 1)[1] == f"""\
Goldens by bucket (evals/goldens.jsonl)
  bucket  added  removed  changed
  chat    1      0        0
  math    0      1        1

Goldens
  id  change   line A  line B  fields
  g1  changed  1       1       expected: 2 -> two
  g2  removed  2       -
  g6  added    -       5

Goldens problems
  side  where                  problem     what
  B     evals/goldens.jsonl:2  unparsable  {BAD}
"""
    j = json.loads(run_cli("diff", a_sha, b_sha, "--format", "json", cwd=repo.path).out)
    added = next(c for c in j["goldens"]["changes"] if c["kind"] == "added")
    assert added["line_b"] == 5 and added["id"] == "g6"


def test_cli_long_values_shortened_for_display_but_full_in_json(repo: Repo) -> None:
    long_a, long_b = "a" * 100, "b" * 100
    _goldens_repo(repo, _jsonl({"id": "g1", "text": long_a}), _jsonl({"id": "g1", "text": long_b}))
    r = run_cli("diff", "HEAD~1", "HEAD", cwd=repo.path)
    assert f"text: {'a' * 29}… -> {'b' * 29}…" in r.out
    j = json.loads(run_cli("diff", "HEAD~1", "HEAD", "--format", "json", cwd=repo.path).out)
    assert j["goldens"]["changes"][0]["fields"] == [
        {"absent_after": False, "absent_before": False, "after": long_b, "before": long_a,
         "field": "text"}]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"b", b"c", b"", b"dd", b"{}"]), max_size=40),
       st.lists(st.sampled_from([b"a", b"b", b"c", b"", b"dd", b"{}"]), max_size=40),
       st.booleans(), st.booleans())
def test_lines_left_unmarked_are_a_common_subsequence(
        la: list[bytes], lb: list[bytes], end_a: bool, end_b: bool) -> None:
    a = b"\n".join(la) + (b"\n" if end_a and la else b"")
    b = b"\n".join(lb) + (b"\n" if end_b and lb else b"")
    only_a, only_b = differing_lines(a, b)
    lines_a, lines_b = _lines(a), _lines(b)
    assert walk(a, b)[2:] == (len(lines_a), len(lines_b))
    assert [x for i, x in enumerate(lines_a) if i not in only_a] == \
        [x for i, x in enumerate(lines_b) if i not in only_b]
    assert all(0 <= i < len(lines_a) for i in only_a)
    assert all(0 <= i < len(lines_b) for i in only_b)


def _lines(blob: bytes) -> list[bytes]:
    parts = blob.split(b"\n")
    return parts[:-1] if parts[-1] == b"" else parts


def test_blobs_read_alike_loose_or_packed(repo: Repo) -> None:
    import pygit2

    from gitevals.git.blobs import read_blobs_unverified
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import RevisionTree

    a, b = A * 50, A * 49 + b'{"id": "z"}\n'
    _goldens_repo(repo, a, b)
    r = pygit2.Repository(str(repo.path))
    shas = [RevisionTree(require_repo(repo.path), rev).blob_sha("evals/goldens.jsonl") or ""
            for rev in ("HEAD~1", "HEAD")]
    assert read_blobs_unverified(r, shas) == [a, b]
    repo.git("gc", "-q")
    assert not any((repo.path / ".git" / "objects" / s[:2] / s[2:]).exists() for s in shas)
    assert read_blobs_unverified(pygit2.Repository(str(repo.path)), shas) == [a, b]


@pytest.mark.parametrize(("where", "block"), [(2500, 1000), (10, 3000), (4000, 200)],
                         ids=["insert-1000", "insert-3000-near-top", "insert-200"])
def test_large_blocks_are_resynchronised_not_reparsed(where: int, block: int) -> None:
    rows = [{"id": f"g{i}", "v": i} for i in range(5000)]
    extra = [{"id": f"n{i}", "v": 0} for i in range(block)]
    a, b = _jsonl(*rows), _jsonl(*rows[:where], *extra, *rows[where:])
    d = diff_goldens(a, b)
    assert d.count("added") == block and d.count("removed") == d.count("changed") == 0
    assert d.lines_parsed == block
    back = diff_goldens(b, a)  # the same block removed
    assert back.count("removed") == block and back.lines_parsed == block
