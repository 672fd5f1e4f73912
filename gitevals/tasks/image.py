"""A task's image, realized: built (``environment/Dockerfile``) or pulled (``[environment]
docker_image``) by a container engine, its root file system exported and unpacked once
per image id, then the root of the task's sandbox (``sandbox.image_binds``).

Only when an engine is usable here: ``podman`` or ``docker`` on PATH whose ``info``
answers (``$GITEVALS_CONTAINER_ENGINE`` names one; empty: none). Without one, nothing
is built and the task records the ``image_build`` / ``image_pull`` gap, as before.

The image is hostile: its tar is unpacked by ``extract``, which refuses absolute paths,
``..``, device nodes and fifos, hard links to anything but a file it unpacked, members
under one of its symbolic links and symbolic links that climb out of the root (an
absolute target is the image's own ``/``: bubblewrap makes it the root), drops set-uid
and set-gid bits, owns everything as gitevals' user, and stops at ``MAX_BYTES`` and
``MAX_MEMBERS``. The engine's output is only trusted to name an image id (64 hex).

The command lines, names, cache keys and member checks are pure; ``find_engine``,
``realize`` and ``extract`` are the IO.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.jsontypes import JSONObject

if TYPE_CHECKING:
    from gitevals.tasks.definition import Task

ENGINE_ENV = "GITEVALS_CONTAINER_ENGINE"
CACHE_ENV = "GITEVALS_IMAGE_CACHE"
ENGINES = ("podman", "docker")
#: Where unpacked images live when gitevals runs as root (the verifier, run as nobody,
#: must reach them: root's home is closed to it).
ROOT_CACHE = "/var/cache/gitevals/images"
#: Bounds of one image's unpacked root (the image is hostile).
MAX_BYTES = 16 << 30
MAX_MEMBERS = 500_000
#: A build's (or pull's) budget when the task gives no ``build_timeout_sec``.
DEFAULT_BUILD_TIMEOUT = 1800.0
#: What marks an unpacked root as whole (written last).
DONE = "gitevals-image.json"
_ID = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")
_LOCK = threading.Lock()


class ImageError(Exception):
    """The image could not be realized; the message says why, in one line."""


@dataclass(frozen=True)
class Engine:
    path: str
    name: str  # "podman" | "docker"


@dataclass(frozen=True)
class Realized:
    """A realized image: what was asked (``ref``), its id, the unpacked root."""

    ref: str
    id: str
    root: str
    engine: str
    built: bool

    def as_dict(self) -> JSONObject:
        return {"ref": self.ref, "id": f"sha256:{self.id}", "engine": self.engine,
                "built": self.built, "root": self.root}


# -- pure --------------------------------------------------------------------------------


def build_argv(engine: str, context: str, tag: str) -> list[str]:
    """Build the task's Dockerfile with ``environment/`` as the context."""
    return [engine, "build", "--quiet", "--file", f"{context}/Dockerfile", "--tag", tag,
            context]


def pull_argv(engine: str, image: str) -> list[str]:
    return [engine, "pull", "--quiet", image]


def inspect_argv(engine: str, ref: str) -> list[str]:
    return [engine, "image", "inspect", "--format", "{{.Id}}", ref]


def create_argv(engine: str, ref: str) -> list[str]:
    """A stopped container of the image, never started (``/bin/true`` is only its
    command: an image without one cannot be created otherwise)."""
    return [engine, "create", ref, "/bin/true"]


def export_argv(engine: str, container: str, out: str) -> list[str]:
    return [engine, "export", "--output", out, container]


def remove_argv(engine: str, container: str) -> list[str]:
    return [engine, "rm", "--force", container]


def build_tag(name: str, files: Iterable[tuple[str, str]]) -> str:
    """The local tag of a task's built image: its name and a digest of its environment's
    files (path, blob), so an edit builds anew and an unchanged one is found again."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-._")[:64] or "task"
    digest = hashlib.sha256("\0".join(f"{p}\0{b}" for p, b in sorted(files)).encode())
    return f"gitevals-task-{slug}:{digest.hexdigest()[:24]}"


def image_id(output: str) -> str | None:
    """The 64 hex digits of the image id an engine printed (``sha256:`` optional)."""
    lines = output.strip().splitlines()
    m = _ID.match(lines[-1].strip()) if lines else None
    return m.group(1) if m else None


def cache_key(ident: str) -> str:
    """The directory of an unpacked image under the cache: by its id alone."""
    if not re.fullmatch(r"[0-9a-f]{64}", ident):
        raise ValueError(f"not an image id: {ident!r}")
    return f"sha256-{ident}"


def member_name(name: str) -> str | None:
    """A member's path inside the root (``./a/b`` -> ``a/b``; the root itself -> ""), or
    None when it is absolute or holds ``..``."""
    if name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def link_inside(member: str, target: str) -> bool:
    """Whether symbolic link ``member`` -> ``target`` stays inside the root: resolved
    lexically from the link's directory (an absolute target from the root), it never
    climbs above it."""
    parts = [] if target.startswith("/") else member.split("/")[:-1]
    for p in target.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if not parts:
                return False
            parts.pop()
        else:
            parts.append(p)
    return True


def member_problem(kind: str, name: str, linkname: str, links: set[str],
                   files: set[str]) -> str | None:
    """Why a member may not be unpacked (``kind``: file, dir, symlink, hardlink, device,
    fifo), or None; ``links`` and ``files`` are the symbolic links and regular files
    unpacked before it."""
    inside = member_name(name)
    if inside is None:
        return f"{name!r} is absolute or climbs out with '..'"
    if kind in ("device", "fifo"):
        return f"{name!r} is a {kind} node (an image's root holds none)"
    parents = inside.split("/")[:-1]
    through = next((p for i in range(1, len(parents) + 1)
                    if (p := "/".join(parents[:i])) in links), None)
    if through is not None:
        return f"{name!r} lies under the symbolic link {through!r}"
    if kind == "symlink" and not link_inside(inside, linkname):
        return f"symbolic link {name!r} -> {linkname!r} points out of the image's root"
    if kind == "hardlink" and member_name(linkname) not in files:
        return f"hard link {name!r} -> {linkname!r} is not to a file of the image"
    if kind not in ("file", "dir", "symlink", "hardlink"):
        return f"{name!r} is of an unknown kind"
    return None


def kind_of(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "fifo"
    return "other"


# -- IO ----------------------------------------------------------------------------------


def find_engine() -> Engine | None:
    """The container engine to use here, or None: ``$GITEVALS_CONTAINER_ENGINE`` (empty:
    none), else podman, then docker, on PATH; used only when its ``info`` answers (a
    docker client without a daemon is no engine)."""
    return engine_named(os.environ.get(ENGINE_ENV))


@functools.cache
def engine_named(given: str | None) -> Engine | None:
    """``find_engine`` for one value of the variable (None: unset), asked once a process."""
    names = ([given] if given else []) if given is not None else list(ENGINES)
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            done = subprocess.run([path, "info"], capture_output=True, timeout=30,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return Engine(path, os.path.basename(name))
    return None


def for_task(task: Task, source: Path) -> Realized | None:
    """The image ``task`` names (its directory on disk at ``source``), realized; None when
    it names none or no container engine is usable here. Raises ``ImageError``."""
    env = task.environment
    if env.dockerfile is None and env.image is None:
        return None
    engine = find_engine()
    if engine is None:
        return None
    context = str(source / "environment") if env.dockerfile is not None else None
    mine = f"{task.path}/environment/"
    tag = build_tag(task.name, [(p, b) for p, b in task.files.items() if p.startswith(mine)])
    return realize(engine, env.image, context, tag,
                   env.build_timeout_sec or DEFAULT_BUILD_TIMEOUT)


def cache_root() -> Path:
    """``$GITEVALS_IMAGE_CACHE``, else ``ROOT_CACHE`` as root, else the user's cache."""
    from gitevals.files import cache_dir

    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    return Path(ROOT_CACHE) if os.geteuid() == 0 else cache_dir("images")


def realize(engine: Engine, ref: str | None, context: str | None, tag: str,
            timeout: float) -> Realized:
    """Build (``context``: the task's ``environment/``) or pull ``ref``, then its root
    unpacked under the cache (reused when that image id was unpacked before)."""
    built = context is not None
    want = tag if context is not None else str(ref)
    if context is not None:
        _engine(build_argv(engine.path, context, tag), timeout, "build")
    elif _engine(inspect_argv(engine.path, want), 60, "inspect", check=False) is None:
        _engine(pull_argv(engine.path, want), timeout, "pull")
    out = _engine(inspect_argv(engine.path, want), 60, "inspect")
    ident = image_id(out or "")
    if ident is None:
        raise ImageError(f"{engine.name} named no image id for {want!r}")
    place = cache_root() / cache_key(ident)
    with _LOCK:  # one unpacking per image at a time in this process
        if not (place / DONE).is_file():
            _unpack(engine, want, place)
    return Realized(want, ident, str(place / "rootfs"), engine.name, built)


def _engine(argv: list[str], timeout: float, what: str, check: bool = True) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ImageError(f"{argv[0]} {what} took over {timeout:g} s") from None
    except OSError as exc:
        raise ImageError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        if not check:
            return None
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ImageError(f"{os.path.basename(argv[0])} {what} failed (exit "
                         f"{done.returncode}): {said[-1][:300] if said else 'no message'}")
    return done.stdout.decode("utf-8", "replace")


def _unpack(engine: Engine, ref: str, place: Path) -> None:
    """Export a container of ``ref`` and unpack it at ``place/rootfs`` (made anew)."""
    place.mkdir(parents=True, exist_ok=True)
    for d in (place.parent, place):  # the verifier (nobody, as root) must pass through
        if d.stat().st_uid == os.geteuid():
            d.chmod(d.stat().st_mode | 0o111)
    shutil.rmtree(place / "rootfs", ignore_errors=True)
    container = (_engine(create_argv(engine.path, ref), 120, "create") or "").strip()
    if not re.fullmatch(r"[0-9a-f]{12,64}", container.splitlines()[-1] if container else ""):
        raise ImageError(f"{engine.name} create named no container for {ref!r}")
    container = container.splitlines()[-1]
    with tempfile.TemporaryDirectory(dir=place) as tmp:
        try:
            tar = os.path.join(tmp, "rootfs.tar")
            _engine(export_argv(engine.path, container, tar), 1800, "export")
        finally:
            _engine(remove_argv(engine.path, container), 120, "rm", check=False)
        staged = os.path.join(tmp, "rootfs")
        extract(tar, staged)
        os.chmod(staged, 0o755)
        os.rename(staged, place / "rootfs")
    (place / DONE).write_text(json.dumps({"ref": ref}) + "\n")


def extract(tar_path: str, dest: str) -> None:
    """Unpack the image tar at ``tar_path`` into the new directory ``dest``, member by
    member (``member_problem``); raise ``ImageError`` at the first it refuses."""
    os.mkdir(dest, 0o700)
    links: set[str] = set()
    files: set[str] = set()
    dirs: list[tuple[str, int]] = []
    total = count = 0
    with tarfile.open(tar_path, "r:") as tar:
        for m in tar:
            count += 1
            total += max(0, m.size)
            if count > MAX_MEMBERS or total > MAX_BYTES:
                raise ImageError(f"the image's root holds over {MAX_MEMBERS} entries or "
                                 f"{MAX_BYTES >> 30} GiB")
            kind = kind_of(m)
            why = member_problem(kind, m.name, m.linkname, links, files)
            if why is not None:
                raise ImageError(f"the image's root is refused: {why}")
            inside = member_name(m.name) or ""
            if not inside:
                continue
            path = os.path.join(dest, inside)
            _clear(path, kind)
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            if kind == "dir":
                os.makedirs(path, 0o700, exist_ok=True)
                dirs.append((path, m.mode & 0o1777))
            elif kind == "symlink":
                os.symlink(m.linkname, path)
                links.add(inside)
            elif kind == "hardlink":
                os.link(os.path.join(dest, member_name(m.linkname) or ""), path,
                        follow_symlinks=False)
            else:
                _write(tar, m, path)
                files.add(inside)
            if kind != "file":
                files.discard(inside)
    for path, mode in reversed(dirs):
        os.chmod(path, mode)


def _clear(path: str, kind: str) -> None:
    """Remove what an earlier member left at ``path`` (a tar may name a path twice),
    never a directory replaced by another kind."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    import stat

    if stat.S_ISDIR(st.st_mode):
        if kind != "dir":
            raise ImageError(f"the image's root is refused: {path!r} replaces a directory")
        return
    os.unlink(path)


def _write(tar: tarfile.TarFile, m: tarfile.TarInfo, path: str) -> None:
    src = tar.extractfile(m)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "wb") as out:
        if src is not None:
            shutil.copyfileobj(src, out, 1 << 20)
        os.fchmod(out.fileno(), m.mode & 0o1777)  # no set-uid, no set-gid
