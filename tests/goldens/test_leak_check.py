"""``gitevals goldens leak-check``: a training row holding a golden id or the same
normalized input, through the real CLI; ``normalize`` and the streaming ``scan``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitevals.goldens.leak import Leak, Lines, Unreadable, index_goldens, normalize, scan, text_of
from tests.conftest import Repo, run_cli

G = "evals/goldens.jsonl"
GOLDENS = "\n".join(json.dumps(r) for r in [
    {"id": "g-1", "input": "What is the capital of France?", "split": "test"},
    {"id": 7, "input": ["List the files.", "Now count them."], "split": "holdout"},
    {"id": "g-3", "input": "Refund order #123, please!", "split": "train"},
]) + "\n"


def lines(*rows: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


@pytest.fixture
def tree(repo: Repo) -> Repo:
    repo.write({G: GOLDENS})
    return repo


def check(repo: Repo, *args: str) -> tuple[int, str, str]:
    res = run_cli("goldens", "leak-check", *args, cwd=repo.path)
    return res.code, res.out, res.err


def test_by_id(tree: Repo) -> None:
    tree.write({"train.jsonl": lines({"id": "t-1", "input": "x"}, {"id": "g-3", "input": "y"},
                                     {"id": "7", "input": "z"})})
    code, out, _ = check(tree, "train.jsonl")
    assert code == 1
    assert out.splitlines()[:2] == [
        'train.jsonl:2: leak: id "g-3" (evals/goldens.jsonl:3, split train); drop the row '
        "from training data",
        'train.jsonl:3: leak: id "7" (evals/goldens.jsonl:2, split holdout); drop the row '
        "from training data"]


def test_by_normalized_input_including_holdout(tree: Repo) -> None:
    tree.write({"train.jsonl": lines(
        {"input": "  what IS the capital of france"},
        {"input": "refund order 123 please"},
        {"input": "list the files\nnow count them"},
        {"input": "What is the capital of Spain?"})})
    code, out, _ = check(tree, "train.jsonl", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert [(x["line"], x["by"], x["golden_id"], x["split"]) for x in doc["leaks"]] == [
        (1, "input", "g-1", "test"), (2, "input", "g-3", "train"), (3, "input", "7", "holdout")]
    assert doc["files"] == {"train.jsonl": 4} and doc["unreadable"] == []


def test_field_names_the_training_column_and_chat_rows_compare_user_turns(tree: Repo) -> None:
    tree.write({"chat.jsonl": lines(
        {"messages": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "What is the capital of FRANCE"},
                      {"role": "assistant", "content": "Paris."}]},
        {"input": "What is the capital of France?"})})  # not the named field: not compared
    code, out, _ = check(tree, "chat.jsonl", "--field", "messages")
    assert code == 1
    assert [line.split(": ")[0] for line in out.splitlines()[:-1]] == ["chat.jsonl:1"]


def test_none(tree: Repo) -> None:
    tree.write({"train.jsonl": lines({"id": "t-1", "input": "Something else"}, "", {"id": 8})})
    code, out, _ = check(tree, "train.jsonl")
    assert code == 0
    assert out == ("no leak in 3 lines of 1 file, against 3 goldens (evals/goldens.jsonl, "
                   "working tree)\n")


def test_a_malformed_line_is_reported_and_the_scan_goes_on(tree: Repo) -> None:
    tree.write({"a.jsonl": lines({"id": "t"}, '{"id": "g-1",', "[1, 2]").encode()
                + b'{"id": "\xff"}\n' + lines({"id": "g-3"}).encode(),
                "b.jsonl": lines({"id": "g-1"})})
    code, out, _ = check(tree, "a.jsonl", "b.jsonl")
    assert code == 1
    assert [line.split(" (")[0].split(";")[0] for line in out.splitlines()] == [
        'a.jsonl:5: leak: id "g-3"',
        'b.jsonl:1: leak: id "g-1"',
        "a.jsonl:2: unreadable: not valid JSON",
        "a.jsonl:3: unreadable: a list, not a JSON object",
        "a.jsonl:4: unreadable: not UTF-8",
        "2 leaked rows, 3 unreadable in 6 lines of 2 files, against 3 goldens"]


def test_unreadable_lines_alone_exit_1(tree: Repo) -> None:
    tree.write({"train.jsonl": "not json\n"})
    assert check(tree, "train.jsonl")[0] == 1


def test_missing_training_file_is_one_line_exit_2(tree: Repo) -> None:
    code, out, err = check(tree, "nope.jsonl")
    assert (code, out) == (2, "")
    assert err.startswith("gitevals: error: nope.jsonl: No such file or directory; ") \
        and err.count("\n") == 1


def test_goldens_from_a_revision(tree: Repo) -> None:
    tree.commit()
    tree.write({G: lines({"id": "other"}), "train.jsonl": lines({"id": "g-1"})})
    assert check(tree, "train.jsonl")[0] == 0
    assert check(tree, "train.jsonl", "--rev", "HEAD")[0] == 1


def test_ids_and_paths_are_escaped(repo: Repo) -> None:
    repo.write({G: lines({"id": "\x1b]0;pwn\x07"}), "t.jsonl": lines({"id": "\x1b]0;pwn\x07"})})
    code, out, _ = check(repo, "t.jsonl")
    assert code == 1 and "\x1b" not in out and "\x07" not in out


NORMALIZE = [
    ("case", "Hello World", "hello world"),
    ("spaces", "  hello \t\n world  ", "hello world"),
    ("punctuation", "Hello, world!!!", "hello world"),
    ("unicode punctuation", "«Hello» — world…", "hello world"),
    ("casefold", "STRASSE", "strasse"),
    ("underscore", "snake_case", "snake case"),
    ("digits kept", "order #123", "order 123"),
    ("only punctuation", "?!", ""),
]


@pytest.mark.parametrize(("text", "expected"), [t[1:] for t in NORMALIZE],
                         ids=[t[0] for t in NORMALIZE])
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_text_of_turns_and_messages() -> None:
    assert text_of(["a", "b"]) == "a\nb"
    assert text_of([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) \
        == "q"
    assert text_of({"text": "t"}) == "t" and text_of(3) == "3"


def test_empty_normalized_input_never_matches() -> None:
    index = index_goldens(lines({"id": 1, "input": "?!"}).encode())
    assert list(scan([b'{"input": "..."}\n'], "t", index)) == [Lines(1, 1)]


def test_scan_streams_its_lines() -> None:
    """A leak is reported before the rest of the file is read: nothing is held."""
    index = index_goldens(GOLDENS.encode())
    read = 0

    def endless() -> Iterator[bytes]:
        nonlocal read
        while True:
            read += 1
            yield b'{"id": "g-1"}\n' if read == 3 else b'{"id": "t"}\n'

    found = scan(endless(), "t", index)
    first = next(found)
    assert isinstance(first, Leak) and first.line == 3 and read == 3


def test_scan_reports_the_line_number_of_an_unreadable_line() -> None:
    found = list(scan([b"{}\n", b"{\n", b'{"id": "g-3"}\n'], "t", index_goldens(GOLDENS.encode())))
    assert isinstance(found[0], Unreadable) and found[0].line == 2
    assert isinstance(found[1], Leak) and found[1].line == 3 and found[2] == Lines(3, 0)


def test_streams_a_file_not_held_in_memory(tmp_path: Path) -> None:
    # Sanity for the benchmark's claim: scan takes a file object and yields as it reads.
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"id": "t"}\n' * 1000 + b'{"id": "g-1"}\n')
    with open(p, "rb") as f:
        found = list(scan(f, "t", index_goldens(GOLDENS.encode())))
    assert [type(x).__name__ for x in found] == ["Leak", "Lines"] and found[-1].read == 1001


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_fast_path_equals_the_general_rule(text: str) -> None:
    import re

    assert normalize(text) == re.sub(r"[\W_]+", " ", text.casefold()).strip()


def test_a_field_no_row_has_is_said(repo: Repo) -> None:
    """--field naming a column no training row has would compare nothing: said on stderr."""
    repo.commit({"evals/goldens.jsonl": '{"id": "g-1", "input": "Hello there"}\n'}, "goldens")
    train = repo.path / "train.jsonl"
    train.write_text('{"prompt": "hello, THERE"}\n')
    r = run_cli("goldens", "leak-check", str(train), "--field", "nope", cwd=repo.path)
    assert r.code == 0 and "no training row has a 'nope' field" in r.err
    r = run_cli("goldens", "leak-check", str(train), "--field", "prompt", cwd=repo.path)
    assert r.code == 1 and "leak" in r.out and "warning" not in r.err
