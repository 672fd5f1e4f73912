"""``gitevals.files``: atomic writes and the cache directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gitevals.files import cache_dir, write_atomic


@pytest.mark.parametrize(("data", "expected"),
                         [("é\n", "é\n".encode()), (b"\x00\xff", b"\x00\xff")],
                         ids=["str-as-utf8", "bytes"])
def test_write_atomic_writes_str_or_bytes(tmp_path: Path, data: str | bytes,
                                          expected: bytes) -> None:
    target = tmp_path / "new" / "dir" / "f.json"  # missing directories are made
    write_atomic(target, data)
    assert target.read_bytes() == expected
    assert os.listdir(target.parent) == ["f.json"]


@pytest.mark.parametrize("fsync", [True, False], ids=["fsync", "no-fsync"])
def test_write_atomic_replaces_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   fsync: bool) -> None:
    target = tmp_path / "f.json"
    target.write_text("old")

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new", fsync=fsync)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.json"]  # the temp file is gone


def test_write_atomic_syncs_before_the_rename(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace",
                        lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    write_atomic(tmp_path / "a", "x")
    write_atomic(tmp_path / "b", "x", fsync=False)
    assert calls == ["fsync", "replace", "replace"]


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir("lint", "x") == tmp_path / "gitevals" / "lint" / "x"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "gitevals"


def test_write_atomic_keeps_the_replaced_mode_and_caches_private(tmp_path: Path) -> None:
    kept, cache = tmp_path / "kept.json", tmp_path / "cache.json"
    kept.write_text("old")
    kept.chmod(0o604)
    write_atomic(kept, "new")
    assert (kept.read_text(), stat.S_IMODE(kept.stat().st_mode)) == ("new", 0o604)
    write_atomic(cache, "x", fsync=False, private=True)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
