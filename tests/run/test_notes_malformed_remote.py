"""A remote whose refs/notes/gitevals is no notes tree (issue 25 item 15, second pass):
``notes pull`` says it is the remote's notes, names the ref and what to do, merges
nothing, and leaves the local notes and repository as they were. A real local bare
remote; the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Repo, git, run_cli


def _gitlink(bare: Path, sha: str) -> None:
    """A notes commit whose note on ``sha`` is a submodule entry, not a blob."""
    tree = git(bare, "mktree", input=f"160000 commit {'1' * 40}\t{sha}\n").strip()
    git(bare, "update-ref", "refs/notes/gitevals", _commit_tree(bare, tree))


def _blob(bare: Path, sha: str) -> None:
    """The notes ref pointing at a blob."""
    blob = git(bare, "hash-object", "-w", "--stdin", input="not a notes commit\n").strip()
    git(bare, "update-ref", "refs/notes/gitevals", blob)


def _link_note(bare: Path, sha: str) -> None:
    """A note that is a symbolic link."""
    blob = git(bare, "hash-object", "-w", "--stdin", input="/etc/passwd").strip()
    tree = git(bare, "mktree", input=f"120000 blob {blob}\t{sha}\n").strip()
    git(bare, "update-ref", "refs/notes/gitevals", _commit_tree(bare, tree))


def _commit_tree(bare: Path, tree: str) -> str:
    return git(bare, "commit-tree", tree, "-m", "notes").strip()


@pytest.mark.parametrize(("malform", "what"), [
    (_gitlink, "is a commit of mode 160000, not a note (a blob)"),
    (_blob, "points at a blob"),
    (_link_note, "is a blob of mode 120000, not a note (a blob)"),
], ids=["submodule-note", "ref-at-a-blob", "link-note"])
def test_a_malformed_remote_notes_ref_is_named_and_nothing_is_merged(
        repo: Repo, tmp_path: Path, malform: Callable[[Path, str], None], what: str) -> None:
    sha = repo.commit({"a.txt": "a\n"})
    git(repo.path, "notes", "--ref", "gitevals", "add", "-m", "mine", sha)
    ours = repo.git("rev-parse", "refs/notes/gitevals").strip()
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "HEAD:refs/heads/main")
    malform(bare, sha)
    res = run_cli("notes", "pull", cwd=repo.path)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    (line,) = res.err.strip().splitlines()
    assert line.startswith("gitevals: error: the notes origin holds are malformed: its "
                           "refs/notes/gitevals (fetched as "
                           "refs/notes/gitevals-remote/origin, at "), line
    assert what in line, line
    assert line.endswith("; nothing was merged and your notes are as they were. Whoever can "
                         "push to origin should put a notes commit back there, or delete the "
                         "ref (`git push origin :refs/notes/gitevals`) and `gitevals notes "
                         "push` again"), line
    assert "fsck" not in line
    assert repo.git("rev-parse", "refs/notes/gitevals").strip() == ours
    assert run_cli("notes", "push", cwd=repo.path).code == 2  # push pulls first: refused too
    assert git(bare, "rev-parse", "refs/notes/gitevals").strip() != ours
