"""Compiled once a run, not once a process: the test modules and gitevals itself.

pytest rewrites each test module's ``assert`` statements when it imports it, and caches
the result beside the module only when Python may write bytecode. Where
``PYTHONDONTWRITEBYTECODE`` is set (this project's CI machines set it, and a fresh clone
has no cache anyway), each of the ``-n 3`` workers rewrote all ~230 test modules itself:
about 4 CPU-s a worker, at the start, when all three compete for two cores.

So the xdist controller rewrites them once, into a folder of the run's own (not the
work tree, where the variable says no bytecode goes), before the workers start; each
worker reads its rewritten modules from that folder; the folder is removed when the run
ends. pytest's own checks still apply to what is read (the source's size and mtime, the
interpreter's magic number), so a module edited during the run is rewritten anew.

gitevals' own modules are the exception (``compile_package``): their bytecode goes
beside them, where a run's supervisor (started with ``-I``, which ignores the variable)
writes it anyway, so that the ~100 ``python -m gitevals`` the tests start do not each
compile what they import.

It leans on three private names of ``_pytest.assertion.rewrite`` (``_rewrite_test``,
``_write_pyc``, ``get_cache_dir``); pytest is pinned below 9.2 in pyproject. If they are
missing or change, nothing is shared and every worker rewrites, as pytest does alone.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

#: The folder of the run's rewritten modules, from the controller to its workers.
ENV = "GITEVALS_TESTS_REWRITTEN"
TESTS = Path(__file__).resolve().parents[1]


def _rewritten_by_pytest(path: Path, roots: list[Path]) -> bool:
    """The files pytest will rewrite in this run: conftests, and the test modules
    (pytest's default ``python_files``) under the paths it was given."""
    name = path.name
    if name == "conftest.py":
        return True
    return (name.startswith("test_") and name.endswith(".py")
            and any(path.is_relative_to(root) for root in roots))


def prefill(config: pytest.Config) -> Path | None:
    """In the xdist controller, where bytecode is not written: the rewritten code of
    every test module of the run in a new folder (its path also set in ``ENV`` for the
    workers the controller is about to start); None where there is nothing to share."""
    if not sys.dont_write_bytecode or hasattr(config, "workerinput"):
        return None
    if config.getoption("assertmode") != "rewrite" or not config.getoption("numprocesses", None):
        return None
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc
    except ImportError:
        return None
    roots = [Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
             for arg in config.args]
    paths = [p for p in sorted(TESTS.rglob("*.py")) if _rewritten_by_pytest(p, roots)]
    folder = Path(tempfile.mkdtemp(prefix="gitevals-tests-rewritten-"))
    state = config.stash[assertstate_key]

    def rewrite(part: list[Path]) -> None:
        for path in part:
            try:
                stat, code = _rewrite_test(path, config)
            except Exception:  # the worker's own import meets it and reports it
                continue
            target = folder / path.relative_to(TESTS).parent
            target.mkdir(parents=True, exist_ok=True)
            _write_pyc(state, code, stat, target / (path.name[:-3] + PYC_TAIL))

    # half in a forked child, half here: the other core is idle until the workers start
    child = os.fork() if len(paths) > 20 and (os.cpu_count() or 1) > 1 else -1
    if child == 0:
        try:
            rewrite(paths[1::2])
            compile_package()
        finally:
            os._exit(0)
    rewrite(paths if child < 0 else paths[::2])
    if child < 0:
        compile_package()
    else:
        os.waitpid(child, 0)
    os.environ[ENV] = str(folder)
    return folder


def compile_package() -> None:
    """gitevals' own bytecode, beside its modules as Python keeps it (``__pycache__``,
    ignored by git): every ``python -m gitevals`` the tests start compiled the modules it
    imports (~80 ms of CPU a start) where ``PYTHONDONTWRITEBYTECODE`` is set and the
    checkout is fresh. A run writes them there anyway: its supervisor starts with ``-I``,
    which ignores the variable."""
    import compileall

    compileall.compile_dir(TESTS.parent / "gitevals", quiet=2)


def read_from_shared(config: pytest.Config) -> None:
    """In a worker of a controller that prefilled: pytest looks for the rewritten test
    modules in the controller's folder (and still rewrites any it does not find there)."""
    if not hasattr(config, "workerinput"):
        return
    folder = os.environ.pop(ENV, None)  # not for the tests' own children
    if not folder:
        return
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    original: Callable[[Path], Path] | None = getattr(rewrite, "get_cache_dir", None)
    if original is None:
        return

    def cache_dir(path: Path) -> Path:
        if path.is_relative_to(TESTS):
            return Path(folder) / path.relative_to(TESTS).parent
        return original(path)

    rewrite.get_cache_dir = cache_dir  # type: ignore[assignment]


def remove(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
