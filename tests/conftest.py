"""Shared fixtures: real git repos in tmp_path and the real CLI."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Hypothesis loads every package's "hypothesis" entry point when it is imported: trio's
# (a dependency of selenium) imports all of trio, ~0.5 CPU-s in each xdist worker and in
# each pytest run a test starts. No test uses trio.
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")

from tests.support import rewritten
from tests.support.judges import FakeJudge, fake_judge
from tests.support.otlp import otlp_collector

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


#: What a marked test needs from the machine, how to tell it is there, and what to install.
#: CI installs all of them (``.ci/run``); a contributor without one gets skips, not failures.
_NEEDS: dict[str, tuple[Callable[[], bool], str]] = {
    "needs_bwrap": (lambda: shutil.which("bwrap") is not None,
                    "needs bubblewrap (Debian: apt install bubblewrap)"),
    "needs_chromium": (lambda: all(shutil.which(t) or Path("/usr/bin", t).exists()
                                   for t in ("chromium", "chromedriver")),
                       "needs Chromium and its driver (Debian: apt install chromium "
                       "chromium-driver)"),
    "needs_ray": (lambda: importlib.util.find_spec("ray") is not None,
                  "needs Ray (pip install -e '.[ray]')"),
    "needs_container": (lambda: _engine() is not None,
                        "needs a usable container engine (Debian: apt install podman)"),
    "needs_cgroup2": (lambda: _cgroup2() is not None,
                      "needs a delegated cgroup v2 subtree (cpu, memory, pids enabled in "
                      "cgroup.subtree_control of this process's cgroup)"),
}


def _cgroup2() -> object:
    from gitevals.tasks.cgroup2 import parent

    return parent()


def _engine() -> object:
    """``engine_named(None)``'s answer, asked name by name: ``engine_named`` is cached per
    name, and a test that names its engine (test_image_real.py) then asks no engine's
    ``info`` (~0.4 CPU-s) again."""
    from gitevals.tasks.image import ENGINES, engine_named

    return next((e for name in ENGINES if (e := engine_named(name)) is not None), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with what to install, the tests whose machine part is missing."""
    present: dict[str, bool] = {}
    for item in items:
        for marker, (check, reason) in _NEEDS.items():
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in present:
                present[marker] = check()
            if not present[marker]:
                item.add_marker(pytest.mark.skip(reason=reason))


def venv_first() -> str:
    """``PATH`` with the test interpreter's directory first, as in a venv a user activated:
    ``python3`` there is that interpreter, not a version manager's shim (pyenv's runs a
    bash and pyenv's own scripts before each Python, ~160 ms of CPU a start against
    ~20 ms), which every command target, hook and verifier written ``python3 ...`` would
    pay per conversation. Every test has it (``_isolated_env``)."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # a fresh HOME a test, made with mkdtemp in one folder: tmp_path_factory.mktemp scans
    # the base temp for its numbers, a scan that grows with every test a worker ran
    homes = tmp_path_factory.getbasetemp() / "homes"
    homes.mkdir(exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=homes))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.delenv("GIT_DIR", raising=False)
    # no container engine unless a test asks for one (needs_container): a task's
    # Dockerfile is then not built, as on a machine without one
    monkeypatch.setenv("GITEVALS_CONTAINER_ENGINE", "")
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PATH", venv_first())


def git(cwd: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    """Run real git in ``cwd``; returns stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          input=input, env={**os.environ, **GIT_ENV})
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


@dataclass
class Repo:
    """A real git work tree in a temp dir."""

    path: Path

    def write(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            p = self.path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)

    def remove(self, *rels: str) -> None:
        for rel in rels:
            (self.path / rel).unlink()

    def git(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return git(self.path, *args, input=input, check=check)

    def commit(self, files: dict[str, str | bytes] | None = None, msg: str = "change") -> str:
        """Write ``files``, stage everything, commit; returns the new commit SHA."""
        if files:
            self.write(files)
        self.git("add", "-A")
        # no `git maintenance run --auto` after each commit: a process that only counts
        # loose objects (far below its threshold in a test repository)
        self.git("-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "-m", msg)
        return self.head()

    def head(self) -> str:
        """HEAD's commit SHA, read by pygit2 (``git rev-parse HEAD`` is a process)."""
        import pygit2

        return str(pygit2.Repository(str(self.path)).head.target)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    import pygit2

    path = tmp_path / "repo"
    # what `git init -b main` makes, without a git process (~2 ms of CPU a test)
    pygit2.init_repository(str(path), initial_head="main")
    yield Repo(path)


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*args: str, cwd: Path, input: str | None = None,
            env: dict[str, str] | None = None, timeout: float = 120,
            umask: int | None = None, subprocess_: bool = False) -> Result:
    """Run the real ``gitevals`` CLI as a user would and return its exit code and output.

    By default the CLI runs in this process (``cli.main`` with file descriptors 0-2,
    the working directory, the environment, the umask and the signal handlers swapped
    in and restored), which spares a Python start per call; ``subprocess_=True`` (or
    ``GITEVALS_TEST_SUBPROCESS=1`` for every call) runs ``python -m gitevals`` in a
    child instead, for what only a fresh process shows (start-up, imports, signals)."""
    if subprocess_ or os.environ.get("GITEVALS_TEST_SUBPROCESS"):
        return _run_cli_subprocess(args, cwd, input, env, timeout, umask)
    return _run_cli_inprocess(args, cwd, input, env, umask)


def _run_cli_subprocess(args: tuple[str, ...], cwd: Path, input: str | None,
                        env: dict[str, str] | None, timeout: float,
                        umask: int | None) -> Result:
    """``python -m gitevals`` in a child; ``umask`` is set by a shell in front of it."""
    argv = [sys.executable, "-m", "gitevals", *args]
    if umask is not None:
        argv = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *argv]
    proc = subprocess.run(argv, cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **GIT_ENV, **(env or {})})
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _run_cli_inprocess(args: tuple[str, ...], cwd: Path, input: str | None,
                       env: dict[str, str] | None, umask: int | None) -> Result:
    """``gitevals.cli.main(args)`` here, seen from outside as a child would be: fds 0-2
    are temp files (what the CLI's own children write is captured too, and nothing is a
    terminal), and everything the CLI may change of the process is put back."""
    from gitevals import cli

    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, \
            tempfile.TemporaryFile() as ferr:
        fin.write((input or "").encode())
        fin.seek(0)
        with _process_swapped((fin.fileno(), fout.fileno(), ferr.fileno()), cwd,
                              {**GIT_ENV, **(env or {})}, umask):
            try:
                code = cli.main(list(args))
            except SystemExit as exc:  # argparse: --help, usage errors
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        fout.seek(0)
        ferr.seek(0)
        out, err = (_text(f.read()) for f in (fout, ferr))
    return Result(code, out, err)


def run_main(main: Callable[[list[str]], int], args: list[str], env: dict[str, str],
             cwd: Path | None = None) -> Result:
    """``main(args)`` run here as ``run_cli`` runs ``gitevals`` (fds 0-2 captured, the
    process put back after), with exactly ``env`` as its environment: for the other entry
    points (``python -m gitevals.ci``) that tests start with a clean environment."""
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, \
            tempfile.TemporaryFile() as ferr:
        with _process_swapped((fin.fileno(), fout.fileno(), ferr.fileno()),
                              cwd or Path.cwd(), {}, None):
            os.environ.clear()
            os.environ.update(env)
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse: usage errors
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        fout.seek(0)
        ferr.seek(0)
        out, err = (_text(f.read()) for f in (fout, ferr))
    return Result(code, out, err)


@contextlib.contextmanager
def _process_swapped(fds: tuple[int, int, int], cwd: Path, env: dict[str, str],
                     umask: int | None) -> Iterator[None]:
    """Fds 0-2 (and ``sys.std*`` over them), cwd, environment, umask and the SIGINT and
    SIGTERM handlers swapped for the block; the standard streams are flushed at its end
    (one the CLI closed, on a broken pipe, is left closed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved_tempdir = tempfile.tempdir  # read from TMPDIR once a process: read it anew
    tempfile.tempdir = None
    saved_umask = os.umask(0o022 if umask is None else umask)
    if umask is None:
        os.umask(saved_umask)
    try:
        with contextlib.ExitStack() as streams:
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            sys.stdin = streams.enter_context(
                open(0, encoding="utf-8", errors="surrogateescape", closefd=False))
            sys.stdout = streams.enter_context(
                open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False))
            sys.stderr = streams.enter_context(
                open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                     buffering=1))
            os.environ.update(env)
            os.chdir(cwd)
            yield
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for fd, saved in enumerate(saved_fds):
            os.dup2(saved, fd)
            os.close(saved)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.umask(saved_umask)
        tempfile.tempdir = saved_tempdir
        for s, handler in saved_signals.items():
            signal.signal(s, handler)


def _text(data: bytes) -> str:
    """Bytes as ``subprocess.run(text=True)`` gives them: UTF-8, universal newlines."""
    return data.decode("utf-8", "surrogateescape").replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture
def judge() -> Iterator[FakeJudge]:
    """An OpenAI-compatible judge on 127.0.0.1 for the test (``tests/support/judges.py``)."""
    with fake_judge() as state:
        yield state


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    """An OTLP/HTTP collector on 127.0.0.1 for the test (``tests/support/otlp.py``)."""
    with otlp_collector() as got:
        yield got


@pytest.fixture
def cli() -> object:
    return run_cli


#: The README's main job on the bundled example (``--keep DIR`` keeps its repository).
DEMO_SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "demo" / "run_demo.py"


def shared_dir(factory: pytest.TempPathFactory) -> Path:
    """A directory of this test run that every xdist worker sees (the parent of the
    workers' own base temp dirs); without xdist, the run's base temp dir."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """``shared_dir/name``, built by ``build`` once for the whole run (workers wait on a
    lock for the first one): for read-only state that is costly to make. A failed build
    raises, and the next worker to ask tries it anew."""
    root = shared_dir(factory)
    target = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"{name}.done").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            (root / f"{name}.done").touch()
    return target


@pytest.fixture
def precommit_home(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> Path:
    """One pre-commit store for the whole run, set as ``PRE_COMMIT_HOME`` for the test
    and every git it runs: a hook environment (a pip install of gitevals from a rev) is
    built once and reused; pre-commit's own lock orders workers that ask at once.

    ``PIP_COMPILE=false`` (pip's ``--no-compile``; ``PIP_NO_COMPILE=1`` would turn it
    *on*): that pip does not byte-compile the ~30 installed packages up front (numpy's
    alone is seconds of CPU); the hook's Python compiles what it imports when it runs.
    The hook is still built by pre-commit from the committed rev and runs the same code.

    ``VIRTUALENV_NO_PERIODIC_UPDATE``: virtualenv, finding no app data under the test's
    fresh HOME, otherwise starts detached processes that ask PyPI for newer seed wheels
    (~4 CPU-s, outliving the test)."""
    home = shared_dir(tmp_path_factory) / "pre-commit-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("PRE_COMMIT_HOME", str(home))
    monkeypatch.setenv("PIP_COMPILE", "false")
    monkeypatch.setenv("VIRTUALENV_NO_PERIODIC_UPDATE", "1")
    return home


@dataclass(frozen=True)
class DemoRun:
    """The README's main job, run once: its repository and what it printed."""

    repo: Path
    stdout: str


def _run_demo(into: Path) -> None:
    # built before any test's _isolated_env: the demo's `python3 harness.py` (~60
    # conversations) is the test interpreter too
    proc = subprocess.run([sys.executable, str(DEMO_SCRIPT), "--keep", str(into / "repo")],
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PATH": venv_first()})
    (into / "stdout").write_text(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The bundled example after the README's main job (v1 and v2 run), once a test run:
    read it, never write it (``demo`` is a copy to use)."""
    root = built_once(tmp_path_factory, "demo", _run_demo)
    return DemoRun(root / "repo", (root / "stdout").read_text())


@pytest.fixture(scope="module")
def demo(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled example's repository after the README's main job, a module's
    own (its tests may write caches, reports, notes)."""
    keep = tmp_path_factory.mktemp("demo") / "repo"
    shutil.copytree(demo_run.repo, keep, symlinks=True)
    return keep


def pytest_configure(config: pytest.Config) -> None:
    """Test modules rewritten once a run, not once a worker (``tests/support/rewritten``)."""
    config.stash[_REWRITTEN] = rewritten.prefill(config)
    rewritten.read_from_shared(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    rewritten.remove(config.stash.get(_REWRITTEN, None))


_REWRITTEN = pytest.StashKey[Path | None]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection made (every test module, scipy, Hypothesis...) out of the
    garbage collector's sight: it lives until the end anyway, and each full collection
    walked all of it again (the pytest process of tests/lint + tests/diff spent 5.9 s in
    the collector, 3.0 s with this)."""
    gc.freeze()
