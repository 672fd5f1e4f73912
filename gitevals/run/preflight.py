"""Cheap checks before a run spends trials: each failure is one line and exit 2.

Without them a missing target executable, a ``python`` target that does not import, or
a judge nobody can reach turns every trial ``broken`` after the whole run has been paid
for. ``gitevals run --no-preflight`` skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gitevals.errors import UsageError
from gitevals.git.trees import Tree
from gitevals.settings import Endpoint, Judge, Settings, Target

if TYPE_CHECKING:
    from gitevals.run.runner import Execution

#: Seconds a ``python`` target may take to import in the preflight.
IMPORT_TIMEOUT = 20.0
#: Seconds the judge endpoint has to answer the preflight's request.
JUDGE_TIMEOUT = 5.0
_SKIP = "; or pass --no-preflight to run anyway"


def check_target(target: Target, tree_dir: str, interpreter: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
    """The command's executable is there and executable; a python target imports in its
    interpreter (gitevals' own when None); an endpoint's key variable is set (in the
    environment or ``env``, what ``--target-env`` gives) and its URL answers."""
    if target.command:
        _check_command(target.command[0], tree_dir)
    elif target.python:
        _check_import(target.python, tree_dir, interpreter or sys.executable)
    elif target.endpoint is not None:
        _check_endpoint_target(target.endpoint, env or {})


def _check_endpoint_target(endpoint: Endpoint, env: Mapping[str, str]) -> None:
    what = f"[target] {endpoint.kind}"
    name = endpoint.api_key_env
    if name and not (env.get(name) or os.environ.get(name)):
        raise UsageError(f"{what}: the API key variable {name} is not set: export it, or "
                         f"give it with --target-env {name}=...{_SKIP}")
    reason = _unanswered(endpoint.url)
    if reason is not None:
        raise UsageError(f"{what}: {endpoint.url} does not answer ({reason}): start the "
                         f"server or fix the url{_SKIP}")


def _check_command(exe: str, tree_dir: str) -> None:
    if "/" not in exe:  # a bare name is looked up on PATH, as the target start does
        if shutil.which(exe) is None:
            raise UsageError(f"target command {exe!r} is not on PATH: install it or fix "
                             f"[target] command{_SKIP}")
        return
    path = os.path.join(tree_dir, exe)  # an absolute ``exe`` stays itself
    if os.path.isabs(exe) and not os.path.isfile(path):
        raise UsageError(f"target command {exe!r} does not exist: install it or fix "
                         f"[target] command{_SKIP}")
    if not os.path.isfile(path):
        raise UsageError(f"target command {exe!r} is not a file in the commit: commit it or "
                         f"fix [target] command{_SKIP}")
    if not os.access(path, os.X_OK):
        raise UsageError(f"target command {exe!r} is not executable in the commit: "
                         f"`git update-index --chmod=+x {exe}` and commit{_SKIP}")


def warms(target: Target, local: bool) -> bool:
    """Whether the preflight's import of a python target is its warm worker's
    (``check_warm``): a local run where supervisors work."""
    from gitevals.run.reaper import available

    return local and bool(target.python) and not target.command and available()


def check_warm(execution: Execution, target: Target, tree_dir: str,
               interpreter: str | None) -> None:
    """The python target imports in the warm worker its conversations fork from: the one
    import of the run, where ``check_target`` paid a process and an import of its own."""
    from gitevals.run.reaper import SupervisorGone

    spec = str(target.python)
    try:
        line = execution.warm_target(IMPORT_TIMEOUT)
    except SupervisorGone:  # no supervisor after all: a process of its own
        check_target(target, tree_dir, interpreter)
        return
    except TimeoutError:
        print(f"gitevals: warning: python target {spec} took over {IMPORT_TIMEOUT:g} s to "
              "import; running anyway", file=sys.stderr)
        return
    except OSError as exc:
        raise UsageError(f"python target {spec}: cannot start the interpreter "
                         f"{interpreter or sys.executable}: {exc.strerror or exc}; fix "
                         f"[target] interpreter{_SKIP}") from None
    if line is not None:
        raise UsageError(f"python target {line}{_SKIP}")


def _check_import(spec: str, tree_dir: str, interpreter: str) -> None:
    """Import the target module in a process in the materialized tree, with the worker
    the run uses, in its interpreter (this runs tree code, which the run would do next
    anyway)."""
    from gitevals.run.targets import target_argv

    argv = target_argv(None, spec, interpreter)
    try:
        proc = subprocess.run([*argv[:2], "--check", spec], cwd=tree_dir,
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT,
                              start_new_session=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise UsageError(f"python target {spec}: cannot start the interpreter {interpreter}: "
                         f"{exc.strerror or exc}; fix [target] interpreter{_SKIP}") from None
    except subprocess.TimeoutExpired:
        print(f"gitevals: warning: python target {spec} took over {IMPORT_TIMEOUT:g} s to "
              "import; running anyway", file=sys.stderr)
        return
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"]
        said = lines[-1] if proc.returncode == 97 else (  # the worker's own line
            f"{spec} does not load in the commit: {lines[-1]}")
        raise UsageError(f"python target {said}{_SKIP}")


def llm_graders(tree: Tree, root: str, names: set[str]) -> list[str]:
    """The graders among ``names`` that may ask the judge: one answer for preflight,
    calibration, the grader budget and doctor (``graderfile.asks_judge``), so a
    deterministic grader beside a judge grader in one module is never named here."""
    from gitevals.graderfile import asks_judge

    out = []
    for file in sorted({n.partition(".")[0] for n in names}):
        source = tree.read(f"{root}/graders/{file}.py")
        if source is not None:
            out += sorted(n for n in names if n.partition(".")[0] == file
                          and asks_judge(source, n.partition(".")[2]))
    return out


def check_judge(settings: Settings, users: list[str]) -> None:
    """When a grader in ``users`` calls ``t.llm``: a judge is set, its key variable is
    set, and its endpoint answers (any HTTP status counts; no answer does not)."""
    if not users:
        return
    first = users[0]
    judge = settings.judge
    if judge is None:
        table = "[judge]" if settings.source == "gitevals.toml" else "[tool.gitevals.judge]"
        raise UsageError(f"grader {first} calls t.llm but no judge is configured: set {table} "
                         f"base_url and model{_SKIP}")
    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        raise UsageError(f"grader {first} calls t.llm but the judge key variable "
                         f"{judge.api_key_env} is not set: export it{_SKIP}")
    _check_endpoint(judge, first)


def _check_endpoint(judge: Judge, first: str) -> None:
    reason = _unanswered(judge.base_url.rstrip("/") + "/models")
    if reason is not None:
        raise UsageError(f"grader {first} calls t.llm but the judge at {judge.base_url} does "
                         f"not answer ({reason}): start it or fix base_url{_SKIP}")


def _unanswered(url: str) -> str | None:
    """Why a GET of ``url`` got no HTTP answer, or None when it got one (any status: the
    server is there, whatever it thinks of the GET)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"),
                                    timeout=JUDGE_TIMEOUT):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))
