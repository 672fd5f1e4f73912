"""The parts of the verifier's confinement that need no sandbox to check: the seccomp
program's shape, sealed memory, the bounds on tests/, and what of /etc is masked."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from gitevals.tasks import confine


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_checks_the_abi_first_and_ends_in_its_verdicts(machine: str) -> None:
    program = confine.seccomp_program(machine)
    assert program is not None and len(program) % 8 == 0
    insns = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert insns[0] == (0x20, 0, 0, 4)  # load the arch
    assert insns[1][0] == 0x15 and insns[1][3] == confine._ARCH[machine]
    assert [i[3] for i in insns[-3:]] == [0x7FFF0000, 0x50001, 0x50026]  # allow, EPERM, ENOSYS
    for n, (code, jt, jf, _) in enumerate(insns):  # every jump lands inside the program
        if code & 0x07 == 0x05:
            assert n + 1 + max(jt, jf) < len(insns)
    denied = {k for code, _, _, k in insns if code == 0x15}
    for name in ("mount", "umount2", "pivot_root", "unshare", "setns", "keyctl", "bpf"):
        assert confine._DENIED[machine][name] in denied
    assert confine.seccomp_program("riscv64") is None


def test_a_sealed_file_cannot_change_and_reopens_from_its_start() -> None:
    fd = confine.sealed(b"echo 1\n", "t")
    try:
        with pytest.raises(PermissionError):
            os.write(fd, b"x")
        again = confine.reopen(fd)
        with pytest.raises(OSError):
            os.write(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY), b"x")
        assert os.read(again, 100) == b"echo 1\n"
        os.close(again)
    finally:
        os.close(fd)


def test_tests_past_their_bounds_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_bytes(b"x" * 2048)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c").write_bytes(b"y")
    os.symlink("a.sh", tmp_path / "b" / "in")
    os.symlink("/etc/passwd", tmp_path / "out")
    got = confine.seal_tests(str(tmp_path), 4096, 10)
    try:
        assert got.dirs == ("b",) and got.links == (("b/in", "a.sh"),)
        assert [name for name, _, _ in got.files] == ["a.sh", "b/c"]
    finally:
        got.close()
    with pytest.raises(confine.TestsTooLarge, match="more than 1,024 bytes"):
        confine.seal_tests(str(tmp_path), 1024, 10)
    with pytest.raises(confine.TestsTooLarge, match="more than 2 entries"):
        confine.seal_tests(str(tmp_path), 4096, 2)


def test_what_others_may_not_read_is_masked_and_not_entered(tmp_path: Path) -> None:
    (tmp_path / "open").write_text("x")
    (tmp_path / "secret").write_text("x")
    (tmp_path / "secret").chmod(0o600)
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key").write_text("x")
    (tmp_path / "private" / "key").chmod(0o600)
    (tmp_path / "private").chmod(0o700)
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "hidden").write_text("x")
    (tmp_path / "pub" / "hidden").chmod(0o640)
    try:
        assert confine.hidden_etc(str(tmp_path)) == (
            (str(tmp_path / "private"), True), (str(tmp_path / "pub" / "hidden"), False),
            (str(tmp_path / "secret"), False))
    finally:
        (tmp_path / "private").chmod(0o755)
