"""Issue 25 (items 11, 12, 15): leak-check sees through Unicode disguises and numeric
ids, reads only regular files, and counts a file named twice once. Real CLI, real repo."""

from __future__ import annotations

import json
import os
import unicodedata

import pytest

from tests.conftest import Repo, run_cli

G = "evals/goldens.jsonl"
GOLDENS = "\n".join(json.dumps(r) for r in [
    {"id": "g-1", "input": "Résumé of the café meeting", "split": "test"},
    {"id": 7, "input": "Count the files", "split": "holdout"},
]) + "\n"


@pytest.fixture
def tree(repo: Repo) -> Repo:
    repo.write({G: GOLDENS})
    return repo


def leaks(repo: Repo, *args: str) -> tuple[int, list[dict[str, object]], str]:
    res = run_cli("goldens", "leak-check", *args, "--format", "json", cwd=repo.path)
    doc = json.loads(res.out) if res.out else {"leaks": []}
    return res.code, doc["leaks"], res.err


@pytest.mark.parametrize("text", [
    unicodedata.normalize("NFD", "Résumé of the café meeting"),
    "Résu\u200bmé of the café meeting",
    "Ｃｏｕｎｔ ｔｈｅ ｆｉｌｅｓ",
    "Cou\u2060nt the fi\u00adles",
], ids=["nfd", "zero-width-space", "fullwidth", "word-joiner"])
def test_a_golden_in_unicode_disguise_is_a_leak(tree: Repo, text: str) -> None:
    tree.write({"train.jsonl": json.dumps({"id": "t-1", "input": text}) + "\n"})
    code, found, _ = leaks(tree, "train.jsonl")
    assert code == 1
    assert [f["by"] for f in found] == ["input"]


@pytest.mark.parametrize("row_id", [7.0, "7.0", "７"], ids=["float", "float-text", "fullwidth"])
def test_an_id_equal_as_a_number_is_a_leak(tree: Repo, row_id: object) -> None:
    tree.write({"train.jsonl": json.dumps({"id": row_id, "input": "x"}) + "\n"})
    code, found, _ = leaks(tree, "train.jsonl")
    assert code == 1
    assert [(f["by"], f["golden_id"]) for f in found] == [("id", "7")]


def test_a_file_named_twice_is_counted_once(tree: Repo) -> None:
    tree.write({"train.jsonl": json.dumps({"id": "g-1", "input": "x"}) + "\n"})
    res = run_cli("goldens", "leak-check", "train.jsonl", "./train.jsonl", "--format", "json",
                  cwd=tree.path)
    doc = json.loads(res.out)
    assert res.code == 1
    assert len(doc["leaks"]) == 1 and sum(doc["files"].values()) == 1
    assert "named twice" in res.err


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"], ids=["device", "fifo"])
def test_only_regular_files_are_read(tree: Repo, path: str) -> None:
    if path == "fifo":
        os.mkfifo(tree.path / "fifo")
    res = run_cli("goldens", "leak-check", path, cwd=tree.path, timeout=20)
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1, res.err
    assert "not a regular file" in res.err and "Traceback" not in res.err


def test_a_giant_line_is_cut_and_reported_and_the_scan_goes_on(tree: Repo) -> None:
    from gitevals.goldens.leak import MAX_LINE

    with open(tree.path / "train.jsonl", "wb") as f:
        f.write(b'{"id": "t-0", "input": "' + b"a" * (MAX_LINE + 10) + b'"}\n')
        f.write(json.dumps({"id": "g-1", "input": "x"}).encode() + b"\n")
    res = run_cli("goldens", "leak-check", "train.jsonl", "--format", "json", cwd=tree.path)
    doc = json.loads(res.out)
    assert res.code == 1
    assert [(u["line"], u["why"]) for u in doc["unreadable"]] == [(1, "longer than 16 MiB")]
    assert [(x["line"], x["by"]) for x in doc["leaks"]] == [(2, "id")]
