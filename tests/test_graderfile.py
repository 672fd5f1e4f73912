"""One grader resolver: lint, diff and the run-time worker agree on every module of a table.

Each row is a grader module ``g_<id>.py`` and what lint must say about ``g_<id>.f``.
For every row: lint's finding, diff's list of functions and the worker's answer
follow from the same reading; a few rows also go through the real CLI.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitevals.diff.graders import diff_grader_module, read_module
from gitevals.graderfile import read
from gitevals.lint.graders import Ref, index_module, resolve
from gitevals.run.grading import GraderWorker
from tests.conftest import Repo, run_cli

F = "def f(t, case, run):\n    return True\n"

# id -> (module source, lint code for `f` (None: resolves), words of the message)
MODULES: dict[str, tuple[str, str | None, str]] = {
    "plain": (F, None, ""),
    "redefined": ("if True:\n    def f(t, case, run):\n        return False\n" + F, None, ""),
    "deleted_then_defined": ("f = 1\ndel f\n" + F, None, ""),
    "annotation_only": (F + "f: int\n", None, ""),
    "local_walrus": ("def f(t, case, run):\n    if (f := 1):\n        return True\n", None, ""),
    "lambda_walrus": (F + "g = lambda: (f := None)\n", None, ""),
    "comprehension": (F + "xs = [f for f in range(3)]\n", None, ""),
    "vars_of_obj": ("def f(t, case, run):\n    return bool(vars(t))\n", None, ""),
    "locals_in_fn": ("def f(t, case, run):\n    return bool(locals())\n", None, ""),
    "other_name": (F + "if False:\n    g = None\n", None, ""),
    "try": ("try:\n    " + F.replace("\n    ", "\n        ") + "except ImportError:\n    pass\n",
            "GE509", "it is bound under `try` on line 1"),
    "try_else": ("try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    "
                 + F.replace("\n    ", "\n        "), "GE509", "under `try` on line 1"),
    "if": ("if True:\n    " + F.replace("\n    ", "\n        "), "GE509", "under `if`"),
    "if_false": (F + "if False:\n    f = None\n", "GE509", "bound under `if` on line 3"),
    "with": ("import contextlib\nwith contextlib.suppress():\n    "
             + F.replace("\n    ", "\n        "), "GE509", "under `with` on line 2"),
    "while": (F + "while False:\n    f = None\n", "GE509", "under `while` on line 3"),
    "for": (F + "for f in []:\n    pass\n", "GE509", "under `for` on line 3"),
    "match": (F + "match 1:\n    case f:\n        pass\n", "GE509", "under `match` on line 3"),
    "except_as": (F + "try:\n    pass\nexcept ValueError as f:\n    pass\n", "GE509",
                  "under `try`"),
    "del": (F + "del f\n", "GE509", "it is deleted by `del` on line 3"),
    "walrus": (F + "(f := None)\n", "GE509", "assigned by `:=` on line 3"),
    "walrus_in_comprehension": (F + "xs = [(f := x) for x in range(2)]\n", "GE509", ":="),
    "walrus_in_default": (F + "def g(x=(f := None)):\n    pass\n", "GE509", ":="),
    "decorator_returns_none": ("def d(fn):\n    return None\n\n\n@d\n" + F, "GE509",
                               "a decorator (line 5) may replace it"),
    "decorator_wraps": ("import functools\n\n\ndef d(fn):\n    @functools.wraps(fn)\n"
                        "    def w(*a):\n        return fn(*a)\n    return w\n\n\n@d\n" + F,
                        "GE509", "a decorator"),
    "global_in_function": (F + "def g(t, case, run):\n    global f\n    f = None\n", "GE509",
                           "g() declares it `global` (line 4)"),
    "globals_subscript": (F + "globals()['f'] = None\n", "GE509", "uses `globals`"),
    "globals_update": (F + "globals().update(f=None)\n", "GE509", "uses `globals`"),
    "vars_subscript": (F + "vars()['f'] = None\n", "GE509", "uses `vars`"),
    "locals_at_module": (F + "locals()['f'] = None\n", "GE509", "uses `locals`"),
    "exec": (F + "exec('f = None')\n", "GE509", "uses `exec`"),
    "setattr_module": ("import sys\n" + F + "setattr(sys.modules[__name__], 'f', None)\n",
                       "GE509", "uses `sys.modules`"),
    "from_sys_modules": ("from sys import modules\n" + F, "GE509",
                         "`from sys import modules`"),
    "star_import_after": (F + "from os.path import *\n", "GE509", "`from os.path import *`"),
    "rebound_variable": (F + "f = 3\n", "GE506", "is a variable (line 3)"),
    "rebound_import": (F + "from os import path as f\n", "GE506", "is an import (line 3)"),
    "rebound_lambda": (F + "f = lambda t, case, run: True\n", "GE506", "is a lambda (line 3)"),
    "class": ("class f:\n    pass\n", "GE506", "is a class"),
    "method": ("class J:\n    " + F.replace("\n    ", "\n        "), "GE505", "class J"),
    "async": ("async def f(t, case, run):\n    return True\n", "GE507", "`async def`"),
    "two_params": ("def f(t, case):\n    return True\n", "GE508", "takes 2 positional"),
    "missing": ("def g(t, case, run):\n    return True\n", "GE504", "no function 'f'"),
}
IDS = sorted(MODULES)
#: Lint findings for a name diff lists as a grader: only what lint resolves (an async
#: def, GE507, or a helper's signature, GE508, is no grader a case can name).
FUNCTION_CODES = {None}
#: What the worker records for each lint outcome (GE508: the call raises TypeError).
RUN_KIND = {None: None, "GE504": "grader_missing", "GE505": "grader_missing",
            "GE506": "grader_missing", "GE507": "grader_missing", "GE508": "grader_error",
            "GE509": "grader_missing"}


def _lint(stem: str, source: str, func: str = "f") -> tuple[str | None, str]:
    index = index_module(source.encode())
    finding = resolve(Ref(f"{stem}.{func}", "evals/cases/a.yaml", 1, 1), "evals",
                      {f"evals/graders/{stem}.py": index})
    return (None, "") if finding is None else (finding.code, finding.message)


@pytest.mark.parametrize("mid", IDS)
def test_lint_and_diff_agree_on_every_name(mid: str) -> None:
    source, code, words = MODULES[mid]
    got, message = _lint("g", source)
    assert got == code and words in message, message
    module, problem = read_module("evals/graders/g.py", source.encode())
    assert module is not None, problem
    for name in {"f", *read(source.encode()).names}:
        assert (_lint("g", source, name)[0] in FUNCTION_CODES) == (name in module.functions), name


@pytest.mark.parametrize("mid", IDS)
def test_diff_from_a_plain_grader_says_what_lint_says(mid: str) -> None:
    source, code, _ = MODULES[mid]
    changes = diff_grader_module("evals/graders/g.py", F.encode(), source.encode())
    kinds = {c.name: c.kind for c in changes}
    if code in FUNCTION_CODES:
        assert kinds.get("g.f") != "removed"
    else:
        assert kinds.get("g.f") == "removed"


def test_ge509_says_how_to_define_it() -> None:
    code, message = _lint("g", MODULES["del"][0])
    assert (code, message) == ("GE509", (
        "'f' (evals/graders/g.py:1) is not bound statically: it is deleted by `del` on line 3; "
        "define it once, undecorated, as `def f(t, case, run):` at the module's top level "
        "(not under if/try/with/for/while/match) and bind nothing else to that name"))
    assert _lint("g", MODULES["globals_update"][0])[1].endswith(
        "which can rebind any name; remove that: graders are resolved without running the "
        "module, so it must not rewrite its own names")


# --- the worker calls exactly what the resolver found -----------------------------

CASE = {"id": "s", "user": ["hi"], "expect": []}
RUN = {"final_answer": "Paris", "tool_calls": [], "error": None, "turns": [], "duration_ms": 1}

#: Rebinds ``f`` in the module importing it, through frames: invisible to a parse of
#: that module, so only the worker's check that it calls the def it was told about
#: can catch it.
SNEAKY = """\
import sys

frame = sys._getframe()
while frame is not None:
    if frame.f_globals.get("__name__", "").startswith("gitevals_graders."):
        frame.f_globals["f"] = None
    frame = frame.f_back
"""


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraderWorker]:
    tree = tmp_path_factory.mktemp("tree")
    graders = tree / "evals" / "graders"
    graders.mkdir(parents=True)
    for mid, (source, _, _) in MODULES.items():
        (graders / f"g_{mid}.py").write_text(source)
    (graders / "sneaky.py").write_text(SNEAKY)
    (graders / "uses_sneaky.py").write_text(F + "import sneaky\n")
    w = GraderWorker(str(tree), "evals", None, timeout=10.0)
    yield w
    w.stop()


@pytest.mark.parametrize("mid", IDS)
def test_the_worker_runs_what_lint_resolves(worker: GraderWorker, mid: str) -> None:
    got = worker.call(f"g_{mid}.f", CASE, RUN)
    kind = RUN_KIND[MODULES[mid][1]]
    assert (got["error"] or {}).get("kind") == kind, got
    if kind is None:
        assert got["raw"] is True


def test_the_worker_says_why_a_name_is_not_a_grader(worker: GraderWorker) -> None:
    assert worker.call("g_del.f", CASE, RUN)["error"]["message"] == (
        "grader g_del.f: evals/graders/g_del.py has no function 'f': it is deleted by `del` on "
        "line 3, so it is not bound statically (`gitevals lint` says how to fix it)")
    assert worker.call("g_class.f", CASE, RUN)["error"]["message"].endswith(
        "has no function 'f': it is a class (line 1)")


def test_a_rebinding_no_parse_can_see_is_refused_at_run_time(worker: GraderWorker) -> None:
    assert _lint("uses_sneaky", F + "import sneaky\n") == (None, "")
    got = worker.call("uses_sneaky.f", CASE, RUN)
    assert got["error"] == {"kind": "grader_missing", "message": (
        "grader uses_sneaky.f: evals/graders/uses_sneaky.py has no function 'f': once the "
        "module has run it is not the def on line 1 (something rebound it)")}


def test_the_worker_never_runs_a_stale_pyc_beside_the_source(tmp_path: Path) -> None:
    import py_compile

    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "q.py").write_text("def f(t, case, run):\n    return 'from the pyc'\n")
    # An unchecked hash-based pyc is used by importlib without looking at the source.
    py_compile.compile(str(graders / "q.py"),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    (graders / "q.py").write_text(F)
    w = GraderWorker(str(tmp_path), "evals", None)
    try:
        assert w.call("q.f", CASE, RUN)["raw"] is True
    finally:
        w.stop()


# --- the real CLI: lint refuses, run never calls a name lint refused ----------------

HARNESS = (Path(__file__).parent / "data" / "run_harness.py").read_text()
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n'
CLI_ROWS = ["plain", "try", "del", "globals_subscript", "decorator_returns_none"]


def _case(grader: str) -> str:
    return ("defaults: {trials: 1, timeout: 10s}\nscenarios:\n  - id: ok\n    user: hi\n"
            f"    expect: [{{grader: {{name: {grader}}}}}]\n")


def test_cli_lint_and_run_agree(repo: Repo) -> None:
    files: dict[str, str | bytes] = {"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                                     "evals/graders/sneaky.py": SNEAKY,
                                     "evals/graders/uses_sneaky.py": F + "import sneaky\n"}
    for mid in CLI_ROWS:
        files[f"evals/graders/g_{mid}.py"] = MODULES[mid][0]
        files[f"evals/cases/c_{mid}.yaml"] = _case(f"g_{mid}.f")
    files["evals/cases/c_sneaky.yaml"] = _case("uses_sneaky.f")
    repo.commit(files)
    lint = json.loads(run_cli("lint", "--format", "json", cwd=repo.path).out)
    codes = {f["path"]: f["code"] for f in lint["findings"] if f["severity"] == "error"}
    assert codes == {f"evals/cases/c_{m}.yaml": MODULES[m][1] for m in CLI_ROWS
                     if MODULES[m][1]}
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 1, res.err
    for mid in CLI_ROWS[1:]:
        assert f"case 'c_{mid}' does not lint and was not run" in res.err
    (artifact,) = (repo.path / "evals" / "results").glob("*.json")
    outcomes = _grader_outcomes(json.loads(artifact.read_text()))
    assert outcomes == {"c_plain": True, "c_sneaky": "grader_missing"}


def _grader_outcomes(artifact: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for case in artifact["cases"]:
        (result,) = case["scenarios"][0]["results"]
        (grader,) = result["graders"]
        out[case["name"]] = grader["error"]["kind"] if grader["error"] else grader["raw"]
    return out


def test_a_module_too_deep_for_the_parser_is_read_once_for_each_question(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A module nested past Python's parser costs most of a second to parse and tokenize
    (for the line it gives): lint's index and the judge question each parse it once and
    tokenize it once between them, with the same answers as before (no grader, the line
    of the long statement, asks no judge)."""
    import ast
    import tokenize

    from gitevals import graderfile

    # 10,000 terms: past the parser from any stack (3,000 already are), read in ~50 ms
    source = f"def ok(t, case, run):\n    return t.llm('x')\nx = 1{'+1' * 10_000}\n".encode()
    parses, tokenizes = [], []
    real_parse, real_tokenize = ast.parse, tokenize.tokenize
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parses.append(1) or real_parse(*a, **k))
    monkeypatch.setattr(tokenize, "tokenize",
                        lambda *a, **k: tokenizes.append(1) or real_tokenize(*a, **k))
    first = read(source)
    assert first.error is not None and first.error.line == 3 and not first.graders()
    assert "nested too deeply for Python's parser" in first.error.message
    assert graderfile.asks_judge(source, "ok") is False
    assert graderfile.asks_judge(source) is False
    assert read(source) == first
    assert (len(parses), len(tokenizes)) == (3, 1)  # read, _defs (kept), read again
