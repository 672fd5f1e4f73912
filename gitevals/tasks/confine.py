"""What keeps a verifier in its sandbox beyond bubblewrap's namespaces: a seccomp filter,
the host's ``/etc`` without what the host keeps from other users, and ``/tests`` sealed
in memory.

- **seccomp** (``seccomp_program``, pure): a classic-BPF program, assembled here with
  ``struct`` (bubblewrap's ``--seccomp FD`` loads it), that refuses with ``EPERM`` every
  syscall that mounts, unmounts, changes root, makes or joins a namespace, loads kernel
  code, or reaches past the sandbox through the kernel (keyrings, ``bpf``,
  ``perf_event_open``, ``io_uring``, file handles, ``userfaultfd``, the clocks).
  ``clone3`` says ``ENOSYS`` (its flags cannot be inspected; C libraries fall back to
  ``clone``, whose namespace flags are refused). A syscall of another ABI (32-bit x86 on
  x86-64, x32) is refused. As root without capabilities these fail anyway; the filter
  holds should a capability come back (a setuid helper, a kernel bug).
- **/etc** (``hidden_etc``): a file or directory of the host's ``/etc`` that others may
  not read (``/etc/shadow``, ``/etc/ssl/private``, ...) is masked: a verifier running as
  root (uid 0 owns those files, capabilities or not) sees an empty one.
- **/tests** (``seal_tests``): the task's ``tests/`` read once per trial, before its
  target starts, into sealed memory files; each sandbox copies them in as it starts.
  No host path holds the verifier's tests, so the target has none to rewrite, and a
  sealed file cannot be written through any descriptor.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import stat
import struct
from dataclasses import dataclass

#: ``AUDIT_ARCH_*`` and the syscall numbers of each machine the filter knows.
_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_DENIED: dict[str, dict[str, int]] = {
    "x86_64": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "swapon": 167,
        "swapoff": 168, "reboot": 169, "init_module": 175, "delete_module": 176,
        "finit_module": 313, "kexec_load": 246, "kexec_file_load": 320, "acct": 163,
        "syslog": 103, "open_by_handle_at": 304, "name_to_handle_at": 303, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "unshare": 272, "setns": 308, "quotactl": 179,
        "lookup_dcookie": 212, "settimeofday": 164, "clock_settime": 227,
        "clock_adjtime": 305, "adjtimex": 159, "vhangup": 153, "iopl": 172, "ioperm": 173,
        "uselib": 134, "_sysctl": 156},
    "aarch64": {
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "swapon": 224,
        "swapoff": 225, "reboot": 142, "init_module": 105, "delete_module": 106,
        "finit_module": 273, "kexec_load": 104, "kexec_file_load": 294, "acct": 89,
        "syslog": 116, "open_by_handle_at": 265, "name_to_handle_at": 264, "keyctl": 219,
        "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "unshare": 97, "setns": 268, "quotactl": 60,
        "lookup_dcookie": 18, "settimeofday": 170, "clock_settime": 112,
        "clock_adjtime": 266, "adjtimex": 171, "vhangup": 58},
}
#: Numbered alike on every architecture (the new mount API, io_uring, quotactl_fd).
_COMMON = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
           "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
           "fsmount": 432, "fspick": 433, "mount_setattr": 442, "quotactl_fd": 443}
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435
#: ``CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET``.
_NEW_NAMESPACE = 0x7E020000
_X32 = 0x40000000

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> spell it
_LD_ABS_W = 0x20
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45
_RET = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
#: Offsets in ``struct seccomp_data``: nr, arch, and the low half of args[0].
_NR, _ARCH_AT, _ARG0 = 0, 4, 16


def seccomp_program(machine: str) -> bytes | None:
    """The filter for ``machine`` (``platform.machine()``) as bubblewrap reads it (an array
    of ``struct sock_filter``), or None for a machine it does not know (little-endian
    x86-64 and aarch64 only: ``args[0]``'s low half is read at offset 16)."""
    arch = _ARCH.get(machine)
    if arch is None:
        return None
    denied = sorted({*_DENIED[machine].values(), *_COMMON.values()})
    # Instructions, each (code, jt, jf, k); a jump is to a label resolved below.
    body: list[tuple[int, str | int, str | int, int]] = [
        (_LD_ABS_W, 0, 0, _ARCH_AT),
        (_JEQ, 0, "deny", arch),
        (_LD_ABS_W, 0, 0, _NR),
    ]
    if machine == "x86_64":
        body.append((_JGE, "deny", 0, _X32))
    body += [(_JEQ, "deny", 0, nr) for nr in denied]
    body += [(_JEQ, "nosys", 0, _CLONE3),
             (_JEQ, 0, "allow", _CLONE[machine]),
             (_LD_ABS_W, 0, 0, _ARG0),
             (_JSET, "deny", 0, _NEW_NAMESPACE)]
    labels = {"allow": len(body), "deny": len(body) + 1, "nosys": len(body) + 2}
    body += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _ERRNO | _EPERM),
             (_RET, 0, 0, _ERRNO | _ENOSYS)]

    def offset(at: int, to: str | int) -> int:
        return to if isinstance(to, int) else labels[to] - at - 1

    return b"".join(struct.pack("=HBBI", code, offset(i, jt), offset(i, jf), k)
                    for i, (code, jt, jf, k) in enumerate(body))


def sealed(data: bytes, name: str) -> int:
    """A memory file holding ``data``, sealed against any change (close-on-exec)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def reopen(fd: int) -> int:
    """A fresh read-only descriptor of memory file ``fd``, at offset 0 (bubblewrap reads
    each to its end), inheritable so bubblewrap gets it."""
    return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)


@functools.cache
def hidden_etc(top: str = "/etc") -> tuple[tuple[str, bool], ...]:
    """``(path, is_dir)`` of each entry of ``top`` others may not read (a directory: read
    and enter), not descending into those: the sandbox masks them. Read once a process;
    links are not followed (what they lead to is masked, or not in the sandbox)."""
    out: list[tuple[str, bool]] = []
    masked: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_mode & 0o005 != 0o005:
                    out.append((path, True))
                    masked.add(path)
            elif stat.S_ISREG(st.st_mode) and not st.st_mode & 0o004:
                out.append((path, False))
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in masked]
    return tuple(sorted(out))


class TestsTooLarge(ValueError):
    """A task's tests/ is over what a sandbox copies in (``TESTS_BYTES``, ``TESTS_FILES``)."""


@dataclass(frozen=True)
class Sealed:
    """A task's ``tests/`` held in sealed memory files: directories (relative, parents
    first), files ``(relative path, executable, memory fd)`` and links ``(relative
    path, target)`` that stay inside."""

    dirs: tuple[str, ...]
    files: tuple[tuple[str, bool, int], ...]
    links: tuple[tuple[str, str], ...]

    def close(self) -> None:
        for _, _, fd in self.files:
            os.close(fd)


def seal_tests(src: str, most_bytes: int, most_files: int) -> Sealed:
    """``src`` (a task's ``tests/``, possibly absent) sealed in memory. Only regular files,
    directories and links that stay inside are taken (lint refuses anything else); a
    link is never followed. Raises ``TestsTooLarge`` past the bounds, ``OSError``."""
    dirs: list[str] = []
    files: list[tuple[str, bool, int]] = []
    links: list[tuple[str, str]] = []
    if not os.path.isdir(src) or os.path.islink(src):
        return Sealed((), (), ())
    top = os.path.realpath(src)
    total = 0
    try:
        for dirpath, dirnames, filenames in os.walk(src):
            rel = os.path.relpath(dirpath, src)
            for name in sorted([*dirnames, *filenames]):
                path = os.path.join(dirpath, name)
                child = os.path.normpath(os.path.join(rel, name))
                st = os.lstat(path)
                if len(files) + len(dirs) + len(links) >= most_files:
                    raise TestsTooLarge(f"more than {most_files} entries")
                if stat.S_ISLNK(st.st_mode):
                    real = os.path.realpath(path)
                    if os.path.commonpath([top, real]) == top:
                        links.append((child, os.readlink(path)))
                elif stat.S_ISDIR(st.st_mode):
                    dirs.append(child)
                elif stat.S_ISREG(st.st_mode):
                    try:
                        fd = _seal_file(path, child, most_bytes - total)
                    except TestsTooLarge:
                        raise TestsTooLarge(f"more than {most_bytes:,} bytes") from None
                    files.append((child, bool(st.st_mode & 0o111), fd))
                    total += os.fstat(fd).st_size
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    except BaseException:
        for _, _, fd in files:
            os.close(fd)
        raise
    return Sealed(tuple(dirs), tuple(files), tuple(links))


def _seal_file(path: str, name: str, room: int) -> int:
    """File ``path`` sealed in memory; ``TestsTooLarge`` when it holds more than ``room``
    bytes (read as it is, not as a stat said: it may grow meanwhile)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"tests/{name} is not a regular file")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > room:
                raise TestsTooLarge(f"more than {room} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return sealed(b"".join(chunks), "gitevals-tests-" + name.replace("/", "-"))
