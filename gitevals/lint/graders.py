"""Static grader resolution: ``file.function`` -> a top-level ``def`` in ``graders/file.py``.

Grader modules are parsed with :mod:`ast`, never imported: linting runs no code
of the tree it checks. Each module is reduced once to a small JSON-able *index*
(its top-level names and what each one is), which the lint cache keeps by blob
SHA; resolving a reference is then a pure lookup in that index.

Codes (GE501, the syntax of the name itself, belongs to the case rules):

- GE502 grader module missing           - GE506 name bound to something that is not a def
- GE503 grader module does not parse    - GE507 ``async def`` grader
- GE504 function missing in the module  - GE508 cannot be called as ``fn(t, case, run)``
- GE505 a method inside a class
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitevals.findings import Finding

#: A module index: ``{"error": [line, col, msg] | None, "names": {name: info}}``
#: where ``info`` is ``{"kind": "def" | "async" | "method" | "other", "line": n, ...}``.
Index = dict[str, Any]

CALL = "(t, case, run)"


class RefLike(Protocol):
    """A grader name as written in a case file (``GraderRef`` of the case rules)."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...


@dataclass(frozen=True)
class Ref:
    """A grader reference rebuilt from the cache (same fields as ``cases.GraderRef``)."""

    name: str
    path: str
    line: int
    col: int


def module_path(root: str, name: str) -> str:
    """Repo-relative path of the module a grader name points at."""
    file = name.split(".", 1)[0]
    return f"{root}/graders/{file}.py" if root else f"graders/{file}.py"


# --- indexing (parse once per blob) -------------------------------------------------


def index_module(source: bytes) -> Index:
    """Parse ``source`` (never executing it) and describe its top-level names."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        return {"error": [line, max(col, 1), exc.msg or "invalid syntax"], "names": {}}
    except (ValueError, RecursionError, MemoryError) as exc:
        # ValueError: NUL bytes (3.11); RecursionError: absurd nesting.
        return {"error": [1, 1, str(exc) or type(exc).__name__], "names": {}}
    names: dict[str, dict[str, Any]] = {}
    for stmt in _top_level(tree.body):
        _bind(names, stmt)
    return {"error": None, "names": names}


def _top_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, looking into ``if``/``try``/``with`` blocks (they bind here too)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse,
                          stmt.finalbody):
                yield from _top_level(block)
        elif isinstance(stmt, ast.With):
            yield from _top_level(stmt.body)
        else:
            yield stmt


def _bind(names: dict[str, dict[str, Any]], stmt: ast.stmt) -> None:
    """Record what ``stmt`` binds at module level (a later binding wins, as in Python)."""
    if isinstance(stmt, ast.FunctionDef):
        names[stmt.name] = {"kind": "def", "line": stmt.lineno,
                            "signature": _signature_problem(stmt.args)}
    elif isinstance(stmt, ast.AsyncFunctionDef):
        names[stmt.name] = {"kind": "async", "line": stmt.lineno}
    elif isinstance(stmt, ast.ClassDef):
        names[stmt.name] = {"kind": "other", "line": stmt.lineno, "what": "a class"}
        for item in stmt.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.setdefault(item.name, {"kind": "method", "line": item.lineno,
                                             "cls": stmt.name})
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".")[0]
            names[bound] = {"kind": "other", "line": stmt.lineno, "what": "an import"}
    else:
        for target, what in _assigned(stmt):
            names[target] = {"kind": "other", "line": stmt.lineno, "what": what}


def _assigned(stmt: ast.stmt) -> list[tuple[str, str]]:
    targets: list[ast.expr]
    value: ast.expr | None
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets, value = [stmt.target], stmt.value
    else:
        return []
    what = "a lambda" if isinstance(value, ast.Lambda) else "a variable"
    return [(n.id, what) for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _signature_problem(args: ast.arguments) -> str | None:
    """Why ``fn(t, case, run)`` would fail against this signature, or None."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    required = len(positional) - len(args.defaults)
    if len(positional) < 3 and args.vararg is None:
        listed = ", ".join(positional) or "no parameters"
        return f"takes {len(positional)} positional parameter(s) ({listed})"
    if required > 3:
        return f"requires {required} positional arguments ({', '.join(positional[:required])})"
    missing = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
               if d is None]
    if missing:
        return f"has keyword-only parameter(s) without a default: {', '.join(missing)}"
    return None


# --- resolution (pure) --------------------------------------------------------------


def module_finding(path: str, index: Index) -> Finding | None:
    """GE503 at the module's own position when it does not parse."""
    err = index.get("error")
    if not err:
        return None
    line, col, msg = err
    return Finding(path, line, col, "GE503",
                   f"grader module does not parse: {msg}; fix the syntax (graders are "
                   "read with ast, never imported)")


def resolve(ref: RefLike, root: str, indexes: Mapping[str, Index | None]) -> Finding | None:
    """The finding for one grader reference, or None when it resolves.

    ``indexes`` maps module paths of the tree to their index (None: not in the tree).
    A module that does not parse yields its own GE503 (see :func:`module_finding`),
    so its references add nothing here.
    """
    file, _, func = ref.name.partition(".")
    mpath = module_path(root, ref.name)
    index = indexes.get(mpath)
    if index is None:
        return _at(ref, "GE502", _missing_module(mpath, file, root, indexes))
    if index.get("error"):
        return None
    info = index["names"].get(func)
    if info is None:
        return _at(ref, "GE504", _missing_function(mpath, func, index))
    return _check_bound(ref, mpath, func, info)


def _check_bound(ref: RefLike, mpath: str, func: str, info: Mapping[str, Any]) -> Finding | None:
    kind, line = info["kind"], info["line"]
    where = f"{mpath}:{line}"
    if kind == "method":
        return _at(ref, "GE505", f"{func!r} is a method of class {info['cls']} ({where}); "
                   f"graders are top-level functions: move it out of the class")
    if kind == "other":
        return _at(ref, "GE506", f"{func!r} in {mpath} is {info['what']} (line {line}), not "
                   f"a function; define it with `def {func}{CALL}:`")
    if kind == "async":
        return _at(ref, "GE507", f"{func!r} ({where}) is `async def`; graders are called "
                   f"synchronously as fn{CALL}: make it a plain def")
    problem = info.get("signature")
    if problem:
        return _at(ref, "GE508", f"{func!r} ({where}) {problem}; gitevals calls it as "
                   f"fn{CALL}: accept exactly those three")
    return None


def _missing_module(mpath: str, file: str, root: str, indexes: Mapping[str, Any]) -> str:
    prefix = f"{root}/graders/" if root else "graders/"
    present = [p[len(prefix):-3] for p, ix in indexes.items()
               if ix is not None and p.startswith(prefix) and "/" not in p[len(prefix):]]
    return f"grader module {mpath} not found; create it or fix the name{_hint(file, present)}"


def _missing_function(mpath: str, func: str, index: Index) -> str:
    defs = [n for n, i in index["names"].items() if i["kind"] in ("def", "async")]
    return f"no function {func!r} in {mpath}; define it at top level{_hint(func, defs)}"


def _hint(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _at(ref: RefLike, code: str, message: str) -> Finding:
    return Finding(ref.path, ref.line, ref.col, code, message)


def resolve_all(refs: Iterable[RefLike], root: str,
                indexes: Mapping[str, Index | None]) -> list[Finding]:
    """Findings for every reference plus one GE503 per referenced module that does not parse."""
    out: list[Finding] = []
    broken: set[str] = set()
    for ref in refs:
        f = resolve(ref, root, indexes)
        if f is not None:
            out.append(f)
        mpath = module_path(root, ref.name)
        index = indexes.get(mpath)
        if index is not None and index.get("error") and mpath not in broken:
            broken.add(mpath)
            mf = module_finding(mpath, index)
            if mf:
                out.append(mf)
    return out
