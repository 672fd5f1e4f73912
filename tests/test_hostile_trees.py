"""Hostile trees (issue 8, classes 2-5): what lint sees is what run runs; nothing outside
the repository is read or written; nothing hangs or is read whole; SHA-256 said plainly.

Every input is built in a real repository under ``tmp_path`` and driven through the real
CLI. Class 3 tests snapshot a sibling directory of the repository before and after.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitevals.git.blobs import MAX_FILE
from gitevals.git.pushes import PushedRef, plan_push
from gitevals.run.grading import GraderSources, NoGrader
from gitevals.yamlsafe import MAX_BYTES
from tests.conftest import Repo, git, run_cli
from tests.support.runs import HARNESS, SETTINGS

CASE = "scenarios:\n  - id: one\n    user: hi\n"
SECRET = "secret_key_from_outside: 1\n"
Setup = Callable[[Repo, Path], None]


def _findings(out: str) -> list[str]:
    """``path:line:col: CODE`` of every finding line."""
    return sorted(" ".join(line.strip().split(" ", 2)[:2]) for line in out.splitlines()
                  if ": GE" in line)


def _snapshot(top: Path) -> dict[str, str]:
    """Every path under ``top`` with its kind and content hash (links: their target)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(top).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A sibling of the repository holding files lint must never read nor init write."""
    path = tmp_path / "outside"
    (path / "cases").mkdir(parents=True)
    (path / "cases" / "stolen.yaml").write_text(SECRET)
    (path / "secret.yaml").write_text(SECRET)
    (path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return path


# -- class 2: what lint checks is exactly what run would run ------------------------------


def _root(value: str) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write({"pyproject.toml": f'[tool.gitevals]\nroot = "{value}"\n',
                    "evals/cases/a.yaml": CASE})
    return setup


def _link(path: str, target: str, files: dict[str, str | bytes] | None = None) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write({**({} if path == "evals" else {"evals/cases/a.yaml": CASE}),
                    **(files or {})})
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target.replace("OUT", str(out)), repo.path / path)
    return setup


def _files(files: dict[str, str | bytes]) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write(files)
    return setup


CLASS2 = [
    ("root-dot-suffix", _root("evals/."), ["pyproject.toml:2:1: GE703"]),
    ("root-dot-prefix", _root("./evals"), ["pyproject.toml:2:1: GE703"]),
    ("root-dotdot-inside", _root("evals/cases/.."), ["pyproject.toml:2:1: GE703"]),
    ("root-trailing-slash", _root("evals/"), ["pyproject.toml:2:1: GE703"]),
    ("root-parent", _root("../outside"), ["pyproject.toml:2:1: GE703"]),
    ("root-dot", _root("."), ["pyproject.toml:2:1: GE703"]),
    ("root-absolute", _root("/tmp"), ["pyproject.toml:2:1: GE701"]),
    ("root-backslash", _root("evals\\\\x"), ["pyproject.toml:2:1: GE701"]),
    ("root-typo", _root("eval"), ["pyproject.toml:1:1: GE702"]),
    ("evals-symlink-to-dir", _link("evals", "OUT"), ["evals:1:1: GE801"]),
    ("evals-symlink-inside", _link("evals", "other", {"other/cases/a.yaml": CASE}),
     ["evals:1:1: GE801"]),
    ("case-symlink", _link("evals/cases/s.yaml", "a.yaml"), ["evals/cases/s.yaml:1:1: GE801"]),
    ("cases-dir-symlink", _link("evals/cases/more", "../../other",
                                {"other/b.yaml": CASE}), ["evals/cases/more:1:1: GE801"]),
    ("grader-symlink", _link("evals/graders/g.py", "../../g.py", {"g.py": "X = 1\n"}),
     ["evals/graders/g.py:1:1: GE801"]),
    ("pyproject-symlink", _link("pyproject.toml", "OUT/pyproject.toml"),
     ["pyproject.toml:1:1: GE801"]),
    ("goldens-symlink", _link("evals/goldens.jsonl", "../g.jsonl", {"g.jsonl": ""}),
     ["evals/goldens.jsonl:1:1: GE801"]),
    ("yaml-beside-yml", _files({"evals/cases/x.yaml": CASE, "evals/cases/x.yml": CASE}),
     ["evals/cases/x.yml:1:1: GE802"]),
    ("case-in-subdirectory", _files({"evals/cases/a.yaml": CASE,
                                     "evals/cases/sub/b.yaml": CASE}),
     ["evals/cases/sub/b.yaml:1:1: GE803"]),
    ("yml-in-subdirectory", _files({"evals/cases/a.yaml": CASE,
                                    "evals/cases/x/y/z.yml": CASE}),
     ["evals/cases/x/y/z.yml:1:1: GE803"]),
]


@pytest.mark.parametrize("where", ["working", "staged", "rev", "publish"])
@pytest.mark.parametrize(("setup", "expected"), [c[1:] for c in CLASS2],
                         ids=[c[0] for c in CLASS2])
def test_lint_refuses_what_run_would_not_run_in_every_tree(
        repo: Repo, outside: Path, setup: Setup, expected: list[str], where: str) -> None:
    setup(repo, outside)
    before = _snapshot(outside)
    if where != "working":
        repo.git("add", "-A")
    if where in ("rev", "publish"):
        repo.git("commit", "-q", "-m", "hostile")
    args = {"working": ["lint"], "staged": ["lint", "--staged"],
            "rev": ["lint", "--rev", "HEAD"], "publish": ["publish-check", "HEAD"]}[where]
    res = run_cli(*args, cwd=repo.path, timeout=60)
    assert res.code == 1, res.out + res.err
    assert _findings(res.out) == expected
    assert "secret_key_from_outside" not in res.out + res.err
    assert _snapshot(outside) == before


def _bad_tree(repo: Repo) -> str:
    repo.commit({"evals/cases/a.yaml": CASE, "evals/cases/s.yaml": CASE})
    repo.remove("evals/cases/s.yaml")
    os.symlink("a.yaml", repo.path / "evals/cases/s.yaml")
    return repo.commit(msg="link")


def _notes_commit(repo: Repo) -> str:
    repo.git("notes", "--ref", "gitevals", "add", "-m", "{}", "HEAD")
    return repo.git("rev-parse", "refs/notes/gitevals")


PUSHES = [
    ("notes-commit-to-gitevals-notes", "notes", "refs/notes/gitevals", 0),
    ("branch-to-gitevals-notes", "bad", "refs/notes/gitevals", 1),
    ("branch-to-other-notes", "bad", "refs/notes/anything", 1),
    ("notes-commit-to-other-notes", "notes", "refs/notes/commits", 0),
]


@pytest.mark.parametrize(("what", "remote_ref", "code"), [p[1:] for p in PUSHES],
                         ids=[p[0] for p in PUSHES])
def test_only_notes_commits_on_the_gitevals_notes_ref_are_exempt(
        repo: Repo, what: str, remote_ref: str, code: int) -> None:
    bad = _bad_tree(repo)
    sha = _notes_commit(repo) if what == "notes" else bad
    line = f"refs/heads/x {sha} {remote_ref} {'0' * 40}\n"
    res = run_cli("publish-check", "--pre-push", "origin", "url", cwd=repo.path, input=line)
    assert res.code == code, res.out + res.err
    exempt = "git notes, no eval tree to check" in res.out
    assert exempt == (what == "notes" and remote_ref == "refs/notes/gitevals")


def test_plan_push_asks_the_predicate_for_the_notes_ref_only() -> None:
    asked: list[str] = []

    def is_notes(sha: str) -> bool:
        asked.append(sha)
        return True

    pushed = [PushedRef("n", "a" * 40, "refs/notes/gitevals", "0" * 40),
              PushedRef("m", "b" * 40, "refs/notes/other", "0" * 40)]
    plan = plan_push(pushed, lambda sha: sha, is_notes)
    assert asked == ["a" * 40]
    assert [p.commit for p in plan.publications] == ["b" * 40]


# -- class 3: nothing outside the repository is read or written ---------------------------


def _mktree(repo: Repo, lines: list[str]) -> str:
    return git(repo.path, "mktree", input="".join(f"{line}\n" for line in lines))


def _blob(repo: Repo, data: str) -> str:
    return git(repo.path, "hash-object", "-w", "--stdin", input=data)


def _hostile_commit(repo: Repo, extra: Callable[[Repo], list[str]]) -> str:
    """A commit of a valid eval tree plus ``extra`` root entries, built with mktree."""
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/cases/a.yaml": CASE.replace("hi\n", "hi\n    expect: []\n")})
    base = repo.git("ls-tree", "HEAD").splitlines()
    tree = _mktree(repo, [*base, *extra(repo)])
    return repo.git("commit-tree", tree, "-p", "HEAD", "-m", "hostile")


def _entry(mode: str, name: str, data: str) -> Callable[[Repo], list[str]]:
    def extra(repo: Repo) -> list[str]:
        kind = "tree" if mode == "040000" else "blob"
        sha = _mktree(repo, []) if kind == "tree" else _blob(repo, data)
        return [f"{mode} {kind} {sha}\t{name}"]
    return extra


def _nested_link(name: str, target: str) -> Callable[[Repo], list[str]]:
    def extra(repo: Repo) -> list[str]:
        sub = _mktree(repo, [f"120000 blob {_blob(repo, target)}\t{name}"])
        return [f"040000 tree {sub}\tdeep"]
    return extra


def _slash_name(repo: Repo) -> list[str]:
    """A tree entry named ``a/b``: git's own tools refuse to make one, ``--literally`` does."""
    blob = bytes.fromhex(_blob(repo, "x"))
    raw = repo.path.parent / "raw-tree"
    raw.write_bytes(b"100644 a/b\0" + blob)
    sub = repo.git("hash-object", "-t", "tree", "-w", "--literally", str(raw))
    raw.unlink()
    return [f"040000 tree {sub}\tdeep"]


MATERIALIZE = [
    ("dotdot-blob", _entry("100644", "..", "x"), "'..'"),
    ("dot-blob", _entry("100644", ".", "x"), "'.'"),
    ("dotgit-blob", _entry("100644", ".git", "x"), "'.git'"),
    ("dotgit-upper", _entry("100644", ".GIT", "x"), "'.GIT'"),
    ("dotdot-tree", _entry("040000", "..", ""), "'..'"),
    ("slash-in-name", _slash_name, "'deep/a/b'"),
    ("link-absolute", _entry("120000", "evil", "/etc"), "'evil'"),
    ("link-dotdot", _entry("120000", "evil", "../outside"), "'evil'"),
    ("link-nested-escape", _nested_link("up", "../../x"), "'deep/up'"),
    ("link-through-link", lambda r: [*_entry("120000", "top", ".")(r),
                                     *_entry("120000", "evil", "top/..")(r)], "'evil'"),
]


@pytest.mark.parametrize(("extra", "named"), [m[1:] for m in MATERIALIZE],
                         ids=[m[0] for m in MATERIALIZE])
def test_a_run_refuses_a_commit_whose_tree_would_write_outside(
        repo: Repo, outside: Path, extra: Callable[[Repo], list[str]], named: str) -> None:
    commit = _hostile_commit(repo, extra)
    before = _snapshot(repo.path.parent)
    res = run_cli("run", "--rev", commit, "--allow-dirty", cwd=repo.path, timeout=60)
    assert res.code == 2, res.out + res.err
    lines = res.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitevals: error: commit ")
    assert f"tree entry {named}" in lines[0] and "refusing" in lines[0]
    assert _snapshot(repo.path.parent) == before


def test_a_link_that_stays_inside_is_materialized(repo: Repo) -> None:
    commit = _hostile_commit(repo, _nested_link("ok", "../harness.py"))
    res = run_cli("run", "--rev", commit, "--allow-dirty", cwd=repo.path, timeout=60)
    assert res.code == 0, res.out + res.err


INIT = [
    ("evals-link-out", "evals", "OUT/cases", "evals: a symlink to"),
    ("pyproject-link-out", "pyproject.toml", "OUT/pyproject.toml", "pyproject.toml: a symlink"),
    ("precommit-link-out", ".pre-commit-config.yaml", "OUT/pc.yaml",
     ".pre-commit-config.yaml: a symlink"),
    ("gitevals-toml-link-out", "gitevals.toml", "OUT/g.toml", "gitevals.toml: a symlink"),
    ("cases-link-out", "evals/cases", "OUT/cases", "evals/cases: a symlink"),
    ("results-link-out", "evals/results", "OUT", "evals/results: a symlink"),
]


@pytest.mark.parametrize(("name", "target", "message"), [i[1:] for i in INIT],
                         ids=[i[0] for i in INIT])
def test_init_never_writes_through_a_link_out_of_the_repository(
        repo: Repo, outside: Path, name: str, target: str, message: str) -> None:
    (repo.path / name).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target.replace("OUT", str(outside)), repo.path / name)
    before = _snapshot(outside)
    res = run_cli("init", cwd=repo.path)
    assert res.code == 2, res.out + res.err
    lines = res.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gitevals: error: {message}")
    assert "outside the repository" in lines[0]
    assert _snapshot(outside) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo", "missing"])
def test_the_grader_worker_runs_no_link(tmp_path: Path, outside: Path, kind: str) -> None:
    graders = tmp_path / "tree" / "evals" / "graders"
    graders.mkdir(parents=True)
    (outside / "g.py").write_text("def f(t, case, run):\n    return True\n")
    if kind == "symlink":
        os.symlink(outside / "g.py", graders / "g.py")
    elif kind == "fifo":
        os.mkfifo(graders / "g.py")
    with pytest.raises(NoGrader) as info:
        GraderSources(str(tmp_path / "tree"), "evals").find("g", "f")
    expected = {"symlink": "no grader file evals/graders/g.py in this commit (it is a "
                "symlink; graders are regular files)",
                "fifo": "evals/graders/g.py is not a regular file",
                "missing": "no grader file evals/graders/g.py in this commit"}[kind]
    assert str(info.value) == expected


# -- class 4: nothing hangs, nothing is read whole ----------------------------------------


def _fifo(path: str) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write({"evals/graders/ok.py": "X = 1\n"})
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(repo.path / path)
    return setup


def _sparse(path: str, size: int) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write({"evals/cases/a.yaml": CASE})
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        with open(repo.path / path, "wb") as f:
            f.truncate(size)
    return setup


def _socket(path: str) -> Setup:
    def setup(repo: Repo, out: Path) -> None:
        repo.write({"evals/cases/a.yaml": CASE})
        cwd = os.getcwd()
        os.chdir(repo.path / Path(path).parent)  # AF_UNIX paths are short
        try:
            s = socket.socket(socket.AF_UNIX)
            s.bind(Path(path).name)
            s.close()
        finally:
            os.chdir(cwd)
    return setup


CLASS4 = [
    ("fifo-case", _fifo("evals/cases/f.yaml"), ["evals/cases/f.yaml:1:1: GE801"]),
    ("fifo-deep", _fifo("evals/cases/d/f.yml"), ["evals/cases/d/f.yml:1:1: GE801"]),
    ("fifo-grader", _fifo("evals/graders/g.py"), ["evals/graders/g.py:1:1: GE801"]),
    ("fifo-goldens", _fifo("evals/goldens.jsonl"), ["evals/goldens.jsonl:1:1: GE801"]),
    ("fifo-as-cases-dir", _fifo("evals/cases"), ["evals/cases:1:1: GE801"]),
    ("socket-case", _socket("evals/cases/s.yaml"), ["evals/cases/s.yaml:1:1: GE801"]),
    ("huge-case", _sparse("evals/cases/big.yaml", 3 << 30), ["evals/cases/big.yaml:1:1: GE104"]),
    ("case-just-over", _sparse("evals/cases/big.yaml", MAX_BYTES + 1),
     ["evals/cases/big.yaml:1:1: GE104"]),
    ("huge-grader", _sparse("evals/graders/g.py", 2 << 20), ["evals/graders/g.py:1:1: GE104"]),
    ("huge-goldens", _sparse("evals/goldens.jsonl", 3 << 30),
     ["evals/goldens.jsonl:1:1: GE104"]),
]


@pytest.mark.parametrize(("setup", "expected"), [c[1:] for c in CLASS4],
                         ids=[c[0] for c in CLASS4])
def test_lint_opens_regular_files_only_and_never_reads_an_oversize_one(
        repo: Repo, outside: Path, setup: Setup, expected: list[str]) -> None:
    setup(repo, outside)
    res = run_cli("lint", cwd=repo.path, timeout=30)  # a FIFO opened would hang: timeout
    assert res.code == 1, res.out + res.err
    assert _findings(res.out) == expected
    if "GE104" in res.out:
        assert "it was not read" in res.out


EVERY_TREE = [
    ("case-2mib", {"evals/cases/big.yaml": b"#" * (2 << 20)}, ["evals/cases/big.yaml:1:1: GE104"]),
    ("grader-2mib", {"evals/graders/big.py": b"#" * (2 << 20), "evals/cases/a.yaml": CASE},
     ["evals/graders/big.py:1:1: GE104"]),
    ("goldens-directory", {"evals/goldens.jsonl/x": '{"id": 1}\n', "evals/cases/a.yaml": CASE},
     ["evals/goldens.jsonl:1:1: GE801"]),
    ("cases-a-file", {"evals/cases": CASE}, ["evals/cases:1:1: GE801"]),
    ("graders-a-file", {"evals/graders": "X = 1\n", "evals/cases/a.yaml": CASE},
     ["evals/graders:1:1: GE801"]),
]


@pytest.mark.parametrize("where", ["working", "staged", "rev"])
@pytest.mark.parametrize(("files", "expected"), [c[1:] for c in EVERY_TREE],
                         ids=[c[0] for c in EVERY_TREE])
def test_oversize_and_misplaced_files_are_findings_in_every_tree(
        repo: Repo, files: dict[str, str | bytes], expected: list[str], where: str) -> None:
    repo.write(files)
    if where != "working":
        repo.git("add", "-A")
    if where == "rev":
        repo.git("commit", "-q", "-m", "hostile")
    args = {"working": [], "staged": ["--staged"], "rev": ["--rev", "HEAD"]}[where]
    res = run_cli("lint", *args, cwd=repo.path, timeout=60)
    assert res.code == 1, res.out + res.err
    assert _findings(res.out) == expected
    if "GE104" in res.out:
        assert "it was not read" in res.out


def test_the_working_tree_limit_is_the_case_file_limit() -> None:
    assert MAX_FILE == MAX_BYTES


def test_a_fifo_settings_file_does_not_hang_lint(repo: Repo) -> None:
    repo.write({"evals/cases/a.yaml": CASE})
    os.mkfifo(repo.path / "pyproject.toml")
    res = run_cli("lint", cwd=repo.path, timeout=30)
    assert res.code == 1, res.out + res.err
    assert _findings(res.out) == ["pyproject.toml:1:1: GE801"]


# -- class 5: a SHA-256 repository, said plainly --------------------------------------------


def test_a_sha256_repository_is_refused_in_one_plain_line(tmp_path: Path) -> None:
    path = tmp_path / "s256"
    proc = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("this git cannot make SHA-256 repositories")
    (path / "evals" / "cases").mkdir(parents=True)
    (path / "evals" / "cases" / "a.yaml").write_text(CASE)
    for args in (["lint"], ["lint", "--rev", "HEAD"], ["publish-check"], ["run"]):
        res = run_cli(*args, cwd=path)
        assert res.code == 2, (args, res.out, res.err)
        assert res.err.splitlines() == [
            f"gitevals: error: {path}/.git is a SHA-256 repository (extensions.objectFormat = "
            "sha256): libgit2 as packaged with pygit2 cannot read SHA-256 repositories yet; "
            "use a SHA-1 clone"], args


@pytest.mark.parametrize("where", ["staged", "rev"])
@pytest.mark.parametrize("path", ["evals/cases/sub", "evals"], ids=["in-cases", "as-root"])
def test_a_submodule_under_the_root_is_a_finding(repo: Repo, where: str, path: str) -> None:
    if path != "evals":
        repo.write({"evals/cases/a.yaml": CASE})
        repo.git("add", "-A")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{path}")
    if where == "rev":
        repo.git("commit", "-q", "-m", "submodule")
    res = run_cli("lint", *(["--staged"] if where == "staged" else ["--rev", "HEAD"]),
                  cwd=repo.path)
    assert res.code == 1, res.out + res.err
    assert _findings(res.out) == [f"{path}:1:1: GE801"]
    assert "a submodule, not a regular file" in res.out
