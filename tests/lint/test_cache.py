"""The lint cache: hits on unchanged content, tolerates corruption and concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from gitevals.files import cache_dir
from gitevals.git.trees import WorkingTree
from gitevals.lint import cache as cache_mod
from gitevals.lint import lint_tree
from gitevals.lint.cache import LintCache, salt

CASE = ("scenarios:\n  - id: one\n    user: hi\n    trials: 2\n    expect:\n"
        "      - grader: {name: q.%s}\n")
FILES = {
    "evals/cases/a.yaml": CASE % "good",
    "evals/cases/b.yaml": CASE % "missing",
    "evals/graders/q.py": "def good(t, case, run):\n    return True\n",
    "evals/goldens.jsonl": '{"id": 1}\n{"id": 1}\n',
}


def make(root: Path, files: dict[str, str]) -> WorkingTree:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return WorkingTree(root)


class Counter:
    """Counts calls of the per-file rules while delegating to them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import gitevals.lint.cases as cases
        import gitevals.lint.goldens as goldens
        import gitevals.lint.graders as graders

        self.calls: list[str] = []
        for mod, name in ((cases, "lint_case_bytes"), (goldens, "lint_goldens"),
                          (graders, "index_module")):
            monkeypatch.setattr(mod, name, self._wrap(name, getattr(mod, name)))

    def _wrap(self, name: str, fn: Any) -> Any:
        def wrapped(*args: Any, **kw: Any) -> Any:
            self.calls.append(name)
            return fn(*args, **kw)
        return wrapped


def codes(tree: WorkingTree, **kw: Any) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.code) for f in lint_tree(tree, jobs=1, **kw).findings]


EXPECTED = [("evals/cases/b.yaml", 6, "GE504"), ("evals/goldens.jsonl", 2, "GE606")]


def test_second_run_parses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make(tmp_path, FILES)
    counter = Counter(monkeypatch)
    assert codes(tree) == EXPECTED
    assert sorted(counter.calls) == ["index_module", "lint_case_bytes", "lint_case_bytes",
                                     "lint_goldens"]
    counter.calls.clear()
    assert codes(tree) == EXPECTED
    assert counter.calls == []


def test_one_changed_file_is_the_only_one_relinted(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make(tmp_path, FILES)
    codes(tree)
    counter = Counter(monkeypatch)
    make(tmp_path, {"evals/cases/b.yaml": CASE % "good"})
    assert codes(tree) == [("evals/goldens.jsonl", 2, "GE606")]
    assert counter.calls == ["lint_case_bytes"]  # a.yaml, goldens, q.py: from the cache
    counter.calls.clear()
    make(tmp_path, {"evals/graders/q.py": "def missing(t, case, run):\n    pass\n"})
    assert codes(tree) == [("evals/cases/a.yaml", 6, "GE504"), ("evals/cases/b.yaml", 6, "GE504"),
                           ("evals/goldens.jsonl", 2, "GE606")]
    assert counter.calls == ["index_module"]  # grader refs re-resolved from cached cases


def test_no_cache_reads_and_writes_nothing(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make(tmp_path / "t", FILES)
    assert codes(tree, cache=False) == EXPECTED
    assert not cache_dir("lint").exists()
    codes(tree)
    counter = Counter(monkeypatch)
    assert codes(tree, cache=False) == EXPECTED
    assert len(counter.calls) == 4


GARBAGE = [b"", b"{not json", b"\xff\xfe", b"[1, 2", b"null", b'{"x": {"f": 1, "r": []}}',
           b'{"error": [1], "names": 3}', b'{"findings": [[1]], "files": "x"}']


@pytest.mark.parametrize("garbage", GARBAGE, ids=[str(n) for n in range(len(GARBAGE))])
def test_corrupt_entries_are_ignored_and_rewritten(tmp_path: Path, garbage: bytes,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make(tmp_path / "t", FILES)
    codes(tree)
    entries = sorted(cache_dir("lint").rglob("*.json"))
    # one manifest (both cases + goldens), one grader index, one whole-run entry
    assert [p.parent.name for p in entries] == ["grader", "manifest", "run"]
    for p in entries:
        p.write_bytes(garbage)
    counter = Counter(monkeypatch)
    assert codes(tree) == EXPECTED
    counter.calls.clear()
    assert codes(tree) == EXPECTED
    assert counter.calls == []  # rewritten: the third run reads it all back


def test_salt_follows_refused_keys_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    base = salt({"suite": "x"})
    assert salt({"suite": "x"}) == base
    assert salt({"suite": "y"}) != base
    monkeypatch.setattr(cache_mod, "__version__", "99.0")
    assert salt({"suite": "x"}) != base


def test_settings_change_is_a_new_cache(tmp_path: Path) -> None:
    tree = make(tmp_path / "t", {**FILES, "evals/cases/b.yaml": CASE % "good" + "owner: me\n"})
    assert ("evals/cases/b.yaml", 7, "GE301") not in codes(tree)
    before = {p.name for p in cache_dir("lint").iterdir()}
    make(tmp_path / "t", {"gitevals.toml": '[refused_keys]\nowner = "no owners"\n'})
    assert ("evals/cases/b.yaml", 7, "GE301") in codes(tree)
    after = {p.name for p in cache_dir("lint").iterdir()}
    assert len(after - before) == 1


def _hammer(directory: str, n: int) -> int:
    store = LintCache(Path(directory))
    value = {"f": [["p", 1, 2, "GE1", "m" * 5000, "error"]] * 20, "n": 1}
    bad = 0
    for _ in range(n):
        store.put("case", "k", value)
        got = store.get("case", "k")
        if got is not None and got != value:
            bad += 1
    return bad


def test_concurrent_writers_never_expose_half_an_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        bad = pool.starmap(_hammer, [(str(tmp_path), 200)] * 4)
    assert bad == [0, 0, 0, 0]
    assert [p.name for p in (tmp_path / "case").iterdir()] == ["k.json"]  # no temp files left


def test_unwritable_cache_only_costs_speed(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        store = LintCache(ro / "lint")
        store.put("case", "k", [1])
        assert store.get("case", "k") in (None, [1])  # root may write anyway
    finally:
        os.chmod(ro, 0o700)


def _lint_in_child(root: str) -> list[tuple[str, int, str]]:
    return codes(WorkingTree(Path(root)))


def test_concurrent_lint_runs_share_one_cache(tmp_path: Path) -> None:
    many = {f"evals/cases/c{n}.yaml": CASE % ("good" if n % 2 else "missing")
            for n in range(20)}
    make(tmp_path / "t", {**FILES, **many})
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        answers = pool.map(_lint_in_child, [str(tmp_path / "t")] * 8)
    assert all(a == answers[0] for a in answers)
    assert len(answers[0]) == 12  # b.yaml + 10 cN.yaml missing graders, 1 duplicate golden
    assert codes(WorkingTree(tmp_path / "t")) == answers[0]


def test_named_files_lint_only_those(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make(tmp_path / "t", {**FILES, **{f"evals/cases/c{n}.yaml": CASE % "missing"
                                             for n in range(30)}})
    counter = Counter(monkeypatch)
    found = lint_tree(tree, ["evals/cases/a.yaml"], jobs=1)
    assert counter.calls == ["lint_case_bytes", "index_module"]
    assert found.findings == () and found.files == 2
    found = lint_tree(tree, ["evals/cases/b.yaml", "README.md"], jobs=1)
    assert [(f.path, f.code) for f in found.findings] == [("evals/cases/b.yaml", "GE504")]


def test_large_runs_report_progress(tmp_path: Path) -> None:
    many = {f"evals/cases/c{n:03d}.yaml": CASE % "good" for n in range(70)}
    tree = make(tmp_path / "t", {**FILES, **many})
    seen: list[tuple[int, int]] = []
    lint_tree(tree, jobs=2, cache=False, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (73, 73)  # 72 cases + goldens
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    small: list[tuple[int, int]] = []
    lint_tree(tree, ["evals/cases/a.yaml"], jobs=2, progress=lambda d, t: small.append((d, t)))
    assert small == []


def _lint_many(root: str) -> int:
    return len(lint_tree(WorkingTree(Path(root)), jobs=2, cache=False).findings)


def test_lint_inside_a_pool_worker_stays_serial(tmp_path: Path) -> None:
    many = {f"evals/cases/c{n:03d}.yaml": CASE % "missing" for n in range(70)}
    make(tmp_path / "t", {**FILES, **many})
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_lint_many, [str(tmp_path / "t")]) == [72]
