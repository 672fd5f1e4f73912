"""A task's image (issue 23, item 12), the pure parts: command lines, names, cache keys,
the sandbox's binds, and the unpacking of a hostile image's tar."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from gitevals.tasks import image
from gitevals.tasks.sandbox import Call, Inside, bwrap_argv, image_binds


def test_engine_command_lines() -> None:
    assert image.build_argv("podman", "/t/env", "gitevals-task-x:ab") == [
        "podman", "build", "--quiet", "--file", "/t/env/Dockerfile", "--tag",
        "gitevals-task-x:ab", "/t/env"]
    assert image.pull_argv("docker", "alpine:3") == ["docker", "pull", "--quiet", "alpine:3"]
    assert image.inspect_argv("podman", "r") == ["podman", "image", "inspect", "--format",
                                                 "{{.Id}}", "r"]
    assert image.create_argv("podman", "r") == ["podman", "create", "r", "/bin/true"]
    assert image.export_argv("podman", "c1", "/o.tar") == ["podman", "export", "--output",
                                                           "/o.tar", "c1"]
    assert image.remove_argv("docker", "c1") == ["docker", "rm", "--force", "c1"]


def test_a_build_tag_follows_the_environment_files() -> None:
    files = [("tasks/A b/environment/Dockerfile", "1" * 40)]
    tag = image.build_tag("A b!", files)
    assert tag.startswith("gitevals-task-a-b:") and len(tag.split(":")[1]) == 24
    assert image.build_tag("A b!", list(reversed(files))) == tag
    assert image.build_tag("A b!", [(files[0][0], "2" * 40)]) != tag
    assert image.build_tag("...", []).startswith("gitevals-task-task:")


@pytest.mark.parametrize(("out", "ident"), [
    ("a" * 64 + "\n", "a" * 64), ("sha256:" + "b" * 64, "b" * 64),
    ("pulling...\n" + "c" * 64 + "\n", "c" * 64), ("A" * 64, None), ("", None),
    ("sha256:" + "d" * 63, None), ("d" * 64 + "; rm -rf /", None),
], ids=["podman", "docker", "last-line", "upper", "empty", "short", "trailing"])
def test_only_an_image_id_is_taken_from_the_engine(out: str, ident: str | None) -> None:
    assert image.image_id(out) == ident


def test_the_cache_key_is_the_image_id_alone() -> None:
    assert image.cache_key("e" * 64) == "sha256-" + "e" * 64
    for bad in ("../" + "e" * 61, "e" * 63, "E" * 64):
        with pytest.raises(ValueError):
            image.cache_key(bad)


@pytest.mark.parametrize(("kind", "name", "link", "why"), [
    ("file", "/etc/passwd", "", "absolute"),
    ("file", "a/../../x", "", "climbs out"),
    ("dir", "..", "", "climbs out"),
    ("device", "dev/sda", "", "device node"),
    ("fifo", "run/p", "", "fifo node"),
    ("symlink", "a/up", "../../etc", "points out of the image's root"),
    ("symlink", "up", "..", "points out of the image's root"),
    ("file", "ln/x", "", "under the symbolic link 'ln'"),
    ("hardlink", "h", "/etc/shadow", "not to a file of the image"),
    ("hardlink", "h", "ln", "not to a file of the image"),
    ("other", "x", "", "unknown kind"),
], ids=["absolute", "dotdot", "dotdot-only", "device", "fifo", "link-up", "link-up-top",
        "under-link", "hardlink-abs", "hardlink-link", "other"])
def test_members_a_hostile_image_may_not_hold(kind: str, name: str, link: str,
                                              why: str) -> None:
    found = image.member_problem(kind, name, link, {"ln"}, {"bin/sh"})
    assert found is not None and why in found


@pytest.mark.parametrize(("kind", "name", "link"), [
    ("file", "./usr/bin/x", ""), ("dir", "./", ""), ("symlink", "bin", "usr/bin"),
    ("symlink", "lib64/ld.so", "/lib/x86_64/ld.so"),  # absolute: from the image's root
    ("symlink", "a/b/c", "../../d"), ("hardlink", "bin/dash", "./bin/sh"),
], ids=["file", "root", "rel-link", "abs-link", "up-inside", "hardlink"])
def test_members_an_image_root_holds(kind: str, name: str, link: str) -> None:
    assert image.member_problem(kind, name, link, {"ln"}, {"bin/sh"}) is None


def _tar(path: Path, members: list[tuple[str, str, bytes | str, int]]) -> str:
    """A tar of (kind, name, data-or-target, mode) members: file, dir, sym, hard, chr."""
    with tarfile.open(path, "w") as tar:
        for kind, name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if kind == "file":
                assert isinstance(data, bytes)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                         "hard": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE}[kind]
            if kind in ("sym", "hard"):
                assert isinstance(data, str)
                info.linkname = data
            tar.addfile(info)
    return str(path)


def test_extract_unpacks_an_image_root_without_its_privileges(tmp_path: Path) -> None:
    tar = _tar(tmp_path / "ok.tar", [
        ("dir", "./", b"", 0o755), ("dir", "usr/bin", b"", 0o755),
        ("file", "usr/bin/tool", b"#!/bin/sh\n", 0o4755),  # set-uid: dropped
        ("sym", "bin", "usr/bin", 0o777), ("sym", "etc/abs", "/usr/bin/tool", 0o777),
        ("hard", "usr/bin/same", "usr/bin/tool", 0o755), ("dir", "ro", b"", 0o555),
        ("file", "ro/f", b"x", 0o444)])
    dest = tmp_path / "root"
    image.extract(tar, str(dest))
    tool = dest / "usr/bin/tool"
    assert tool.read_bytes() == b"#!/bin/sh\n" and tool.stat().st_mode & 0o7777 == 0o755
    assert os.readlink(dest / "bin") == "usr/bin"
    assert os.readlink(dest / "etc/abs") == "/usr/bin/tool"  # resolved in the sandbox only
    assert (dest / "usr/bin/same").stat().st_ino == tool.stat().st_ino
    assert (dest / "ro").stat().st_mode & 0o777 == 0o555
    assert (dest / "ro/f").read_bytes() == b"x"


@pytest.mark.parametrize(("members", "why"), [
    ([("file", "/abs", b"x", 0o644)], "absolute"),
    ([("file", "../out", b"x", 0o644)], "climbs out"),
    ([("sym", "esc", "../..", 0o777), ("file", "esc/out", b"x", 0o644)], "points out"),
    ([("sym", "etc", "OUTSIDE", 0o777), ("file", "etc/out", b"x", 0o644)],
     "under the symbolic link 'etc'"),
    ([("chr", "dev/mem", b"", 0o600)], "device node"),
    ([("hard", "h", "/etc/passwd", 0o644)], "not to a file of the image"),
    ([("dir", "d", b"", 0o755), ("sym", "d", "/", 0o777)], "replaces a directory"),
], ids=["absolute", "dotdot", "link-up", "through-link", "device", "hardlink-out",
        "dir-to-link"])
def test_extract_refuses_a_hostile_root_and_writes_nothing_outside(
        tmp_path: Path, members: list[tuple[str, str, bytes | str, int]], why: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "a").mkdir()
    tar = _tar(tmp_path / "bad.tar", [(k, n, str(outside) if d == "OUTSIDE" else d, m)
                                      for k, n, d, m in members])
    with pytest.raises(image.ImageError, match="the image's root is refused") as exc:
        image.extract(tar, str(tmp_path / "a" / "root"))
    assert why in str(exc.value)
    assert not (tmp_path / "a" / "out").exists() and list(outside.iterdir()) == []


def test_an_image_root_is_the_sandboxs_system_and_not_its_mount_points(
        tmp_path: Path) -> None:
    entries = [("usr", None), ("bin", "usr/bin"), ("etc", None), ("proc", None),
               ("tmp", None), ("logs", None), ("tests", None), ("srv", None), ("dev", None)]
    assert image_binds("/c/root", entries, "/srv/app") == [
        "--symlink", "usr/bin", "/bin", "--ro-bind", "/c/root/etc", "/etc",
        "--ro-bind", "/c/root/usr", "/usr"]
    (tmp_path / "usr").mkdir()
    (tmp_path / "bin").symlink_to("usr/bin")
    argv = bwrap_argv("bwrap", Call(("true",), root=str(tmp_path)), Inside(5),
                      hidden=(("/etc/ssl/private", True),))
    assert "/etc/ssl/private" not in argv  # the host's /etc is not there to mask
    assert argv[argv.index("--cap-drop") + 2:argv.index("--proc")] == [
        "--symlink", "usr/bin", "/bin", "--ro-bind", f"{tmp_path}/usr", "/usr"]
    assert argv[argv.index("--bind") + 1:argv.index("--bind") + 3] == ["/proc/self/fd/5",
                                                                       "/app"]
