"""Retired golden ids (GE620-GE623): delete, retire, reuse, through the real CLI and a
real git repository; ``compare`` on its own for the cases a table says best."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gitevals.lint.retired import Side, compare
from tests.conftest import Repo, run_cli

G = "evals/goldens.jsonl"
R = "evals/goldens.retired"


def rows(*ids: str | int, **extra: str) -> str:
    return "".join(json.dumps({"id": i, "input": f"q {i}", **extra}) + "\n" for i in ids)


def codes(out: str) -> list[str]:
    """``path:line:col: CODE`` of each finding line of text output."""
    return [line.split(" ")[0] + " " + line.split(" ")[1] for line in out.splitlines()
            if ": GE6" in line]


@pytest.fixture
def committed(repo: Repo) -> Repo:
    repo.commit({G: rows("a", "b", "c")}, msg="goldens")
    return repo


def test_delete_without_retiring_is_a_finding_at_commit(committed: Repo) -> None:
    committed.write({G: rows("a", "c")})
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert res.code == 1, res.out + res.err
    assert codes(res.out) == [f"{R}:1:1: GE620"]
    assert '"b"' in res.out and "line 2 in HEAD" in res.out


def test_retire_in_the_same_commit_is_clean(committed: Repo) -> None:
    committed.write({G: rows("a", "c"), R: "b\n"})
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert (res.code, codes(res.out)) == (0, []), res.out + res.err


def test_reuse_of_a_retired_id_is_a_finding(committed: Repo) -> None:
    committed.commit({G: rows("a", "c"), R: "b\n"}, msg="retire b")
    committed.write({G: rows("a", "c", "b")})
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert res.code == 1
    assert codes(res.out) == [f"{G}:3:2: GE621"]
    assert f"{R} line 1" in res.out and "give this row a new id" in res.out


def test_editing_a_row_keeps_its_id(committed: Repo) -> None:
    committed.write({G: rows("a") + json.dumps({"id": "b", "input": "edited"}) + "\n"
                     + rows("c")})
    committed.git("add", "-A")
    assert run_cli("lint", "--staged", cwd=committed.path).code == 0


def test_rev_compares_with_the_first_parent(committed: Repo) -> None:
    committed.commit({G: rows("a", "c")}, msg="drop b, no hook")
    committed.commit({"evals/notes.txt": "x"}, msg="unrelated")
    bad = run_cli("lint", "--rev", "HEAD~1", cwd=committed.path)
    assert bad.code == 1 and codes(bad.out) == [f"{R}:1:1: GE620"], bad.out
    # the commit after it changed neither file: nothing to compare
    assert run_cli("lint", "--rev", "HEAD", cwd=committed.path).code == 0
    assert run_cli("lint", "--rev", "HEAD~2", cwd=committed.path).code == 0


def test_publish_check_refuses_the_commit_that_dropped_an_id(committed: Repo) -> None:
    committed.commit({G: rows("a", "c")}, msg="drop b")
    res = run_cli("publish-check", "HEAD", cwd=committed.path)
    assert res.code == 1 and "GE620" in res.out + res.err


def test_unretiring_an_id_is_a_finding(committed: Repo) -> None:
    committed.commit({G: rows("a", "c"), R: "b\n"}, msg="retire b")
    committed.write({R: ""})
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert res.code == 1 and codes(res.out) == [f"{R}:1:1: GE623"], res.out


def test_root_commit_checks_reuse_only(repo: Repo) -> None:
    repo.write({G: rows("a", 7), R: "x\n7\n"})
    repo.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=repo.path)
    assert res.code == 1 and codes(res.out) == [f"{G}:2:2: GE621"], res.out


def test_retired_file_not_utf8(committed: Repo) -> None:
    committed.write({G: rows("a", "c"), R: b"b\n\xff\n"})
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert res.code == 1 and f"{R}:2:1: GE622" in res.out


def test_deleting_goldens_jsonl_needs_every_id_retired(committed: Repo) -> None:
    committed.remove(G)
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert [c.split(": ")[1] for c in codes(res.out)] == ["GE620"] * 3


def test_pre_commit_hook_refuses_then_accepts(committed: Repo) -> None:
    assert run_cli("hooks", "install", "pre-commit", cwd=committed.path).code == 0
    env = dict(os.environ)  # the venv first on PATH (tests/conftest.py)

    def commit(msg: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "commit", "-q", "-m", msg], cwd=committed.path, env=env,
                              capture_output=True, text=True, timeout=120)

    committed.write({G: rows("a", "c")})
    committed.git("add", "-A")
    refused = commit("drop b")
    assert refused.returncode == 1 and "GE620" in refused.stdout + refused.stderr
    committed.write({R: "b\n"})
    committed.git("add", "-A")
    accepted = commit("retire b")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


# -- compare, pure ---------------------------------------------------------------------

def side(goldens: str | None, retired: str | None = None) -> Side:
    return Side(None if goldens is None else goldens.encode(),
                None if retired is None else retired.encode(), "HEAD")


TABLE = [
    ("unchanged", rows("a", "b"), None, rows("a", "b"), None, []),
    ("added", rows("a"), None, rows("a", "b"), None, []),
    ("moved", rows("a", "b"), None, rows("b", "a"), None, []),
    ("dropped", rows("a", "b"), None, rows("a"), None, [("R", 1, "GE620")]),
    ("dropped, retired", rows("a", "b"), None, rows("a"), "b\n", []),
    ("retired with spaces", rows("a", "b"), None, rows("a"), "  b  \n", []),
    ("7 and '7' are one id", rows(7), None, rows("7"), None, []),
    ("int id retired", rows(7, 8), None, rows(8), "7\n", []),
    ("dropped after two retired", rows("a", "b"), "x\ny\n", rows("a"), "x\ny\n",
     [("R", 3, "GE620")]),
    ("retire and keep", rows("a", "b"), None, rows("a", "b"), "b\n", [("G", 2, "GE621")]),
    ("id renamed", rows("a", "b"), None, rows("a", "b2"), None, [("R", 1, "GE620")]),
    ("bad line does not hide an id", rows("a", "b"), None, rows("a") + "{oops\n", None,
     [("R", 1, "GE620")]),
    ("duplicate before: the id is still there", rows("a", "a", "b"), None, rows("a", "b"),
     None, []),
]


@pytest.mark.parametrize(("old_g", "old_r", "new_g", "new_r", "expected"),
                         [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_compare(old_g: str, old_r: str | None, new_g: str, new_r: str | None,
                 expected: list[tuple[str, int, str]]) -> None:
    found = compare(side(old_g, old_r), side(new_g, new_r), "G", "R")
    assert [(f.path, f.line, f.code) for f in found] == expected


def test_docs_and_code_agree_on_the_ge62x_codes() -> None:
    import re

    import gitevals.lint.retired as retired

    root = Path(__file__).resolve().parents[2]
    documented = set(re.findall(r"^\| (GE62\d) \|", (root / "docs/lint-codes.md").read_text(),
                                re.M))
    source = Path(retired.__file__).read_text()
    emitted = set(re.findall(r'"(GE62\d)"', source))
    assert documented == emitted == {"GE620", "GE621", "GE622", "GE623"}


def test_goldens_turned_into_a_symlink_is_ge801_only(committed: Repo) -> None:
    committed.remove(G)
    os.symlink("elsewhere.jsonl", committed.path / G)
    committed.git("add", "-A")
    res = run_cli("lint", "--staged", cwd=committed.path)
    assert res.code == 1 and "GE801" in res.out and "GE620" not in res.out


SEARCH = [
    ("gone id found on an unchanged line", rows("a", "b") + rows("b", x="2"), None,
     rows("a") + rows("b", x="2"), None, []),
    ("escaped file reads every row", rows("a", "b"), None,
     rows("a") + '{"id": "\\u0062", "input": "same id, escaped"}\n', None, []),
    ("newly retired id on an unchanged line", rows("a", "b"), None, rows("a", "b"), "a\n",
     [("G", 1, "GE621")]),
    ("id needing escapes", rows('q"1', "b"), None, rows("b"), 'q"1\n', []),
    ("many ids gone at once", rows(*range(40)), None, rows(0), None,
     [("R", 1, "GE620")] * 39),
]


@pytest.mark.parametrize(("old_g", "old_r", "new_g", "new_r", "expected"),
                         [t[1:] for t in SEARCH], ids=[t[0] for t in SEARCH])
def test_compare_finds_ids_on_unchanged_lines(old_g: str, old_r: str | None, new_g: str,
                                              new_r: str | None,
                                              expected: list[tuple[str, int, str]]) -> None:
    found = compare(side(old_g, old_r), side(new_g, new_r), "G", "R")
    assert [(f.path, f.line, f.code) for f in found] == expected
