"""Blobs read straight from pack files (``read_blobs_unverified``) equal libgit2's reads.

After ``git gc`` a goldens.jsonl is stored as a chain of deltas; the reader in
trees.py applies them itself so that a shared base is inflated once. Each pack
layout git can write is checked blob by blob against pygit2, and the packs must
really have been read by it (not left to the libgit2 fallback).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import Repo


def _history(repo: Repo, versions: int = 12) -> None:
    rng = random.Random(7)
    lines = [f'{{"id": "g{i}", "v": {rng.random()}}}' for i in range(2000)]
    for c in range(versions):
        for _ in range(15):
            lines[rng.randrange(len(lines))] = f'{{"id": "g{rng.randrange(9999)}", "v": 1}}'
        if c % 3 == 0:
            lines.insert(rng.randrange(len(lines)), "not json")
        repo.commit({"evals/goldens.jsonl": "\n".join(lines) + "\n",
                     "evals/small.txt": f"v{c}\n" * (c + 1)}, msg=f"c{c}")


def _check(repo: Repo) -> int:
    import pygit2

    from gitevals.git.blobs import read_blobs_unverified
    from gitevals.git.packfile import read_packed

    r = pygit2.Repository(str(repo.path))
    shas = sorted(str(o) for o in r.odb if r.odb.read_header(o)[0] == pygit2.GIT_OBJECT_BLOB)
    expected = {s: r.odb.read(s)[1] for s in shas}
    packed = read_packed(repo.path / ".git" / "objects", shas)
    assert packed == {s: expected[s] for s in packed}
    assert read_blobs_unverified(r, shas) == [expected[s] for s in shas]
    return len(packed)


@pytest.mark.parametrize("layout", ["gc", "deep", "ref-delta", "64-bit-offsets"])
def test_packed_blobs_equal_libgit2(repo: Repo, layout: str) -> None:
    _history(repo)
    assert _check(repo) == 0  # all loose: nothing for the pack reader
    if layout == "gc":
        repo.git("gc", "-q")
    elif layout == "deep":
        repo.git("repack", "-adfq", "--depth=250", "--window=250")
    elif layout == "ref-delta":
        repo.git("-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq")
    else:
        repo.git("repack", "-adq")
        pack = next((repo.path / ".git/objects/pack").glob("*.pack"))
        idx = pack.with_suffix(".idx")
        idx.chmod(0o644)
        idx.unlink()
        repo.git("index-pack", "--index-version=2,0x100", str(pack))
    chains = repo.git("verify-pack", "-v", str(next(
        (repo.path / ".git/objects/pack").glob("*.idx"))))
    assert "chain length = 3" in chains  # the blobs really are deltas of deltas
    assert _check(repo) == 24


def test_unknown_index_version_is_left_to_libgit2(repo: Repo, tmp_path: Path) -> None:
    import pygit2

    from gitevals.git.packfile import read_packed

    _history(repo, versions=3)
    repo.git("gc", "-q")
    r = pygit2.Repository(str(repo.path))
    shas = sorted(str(o) for o in r.odb if r.odb.read_header(o)[0] == pygit2.GIT_OBJECT_BLOB)
    idx = next((repo.path / ".git/objects/pack").glob("*.idx"))
    assert len(read_packed(repo.path / ".git/objects", shas)) == len(shas)
    junk = tmp_path / "junk" / "pack"
    junk.mkdir(parents=True)
    (junk / "pack-0.idx").write_bytes(b"\377tOc\0\0\0\3" + idx.read_bytes()[8:])
    (junk / "pack-0.pack").write_bytes(idx.with_suffix(".pack").read_bytes())
    assert read_packed(junk.parent, shas) == {}
