"""Static grader resolution: ``file.function`` -> a top-level ``def`` in ``graders/file.py``.

Grader modules are parsed, never imported (linting runs no code of the tree it
checks), by :mod:`gitevals.graderfile`, the one resolver lint, diff and the run-time
worker share. Each module is reduced once to a small JSON-able *index* (its
top-level names and what each one is bound to), which the lint cache keeps by blob
SHA; resolving a reference is then a pure lookup in that index.

Codes (GE501, the syntax of the name itself, belongs to the case rules):

- GE502 grader module missing           - GE506 name bound to something that is not a def
- GE503 grader module does not parse    - GE507 ``async def`` grader
- GE504 function missing in the module  - GE508 cannot be called as ``fn(t, case, run)``
- GE505 a method inside a class         - GE509 name not bound statically
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NotRequired, Protocol, TypedDict, TypeGuard

from gitevals import graderfile
from gitevals.findings import Finding
from gitevals.jsontypes import JSON, JSONObject


class BindingInfo(TypedDict):
    """A ``graderfile.Binding`` as a module index (and the lint cache) keeps it."""

    kind: str
    line: int
    col: int
    signature: str | None
    owner: str | None
    why: str | None


class Index(TypedDict):
    """A module index: why the module does not parse (``[line, col, message]``; None:
    it parses) and what each top-level name is bound to; lint adds whether the module
    is ``referenced`` by a case and ``checked`` by this lint."""

    error: list[int | str] | None
    names: dict[str, BindingInfo]
    referenced: NotRequired[bool]
    checked: NotRequired[bool]

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
    gf = graderfile.read(source)
    error: list[int | str] | None = list(gf.error) if gf.error else None
    return {"error": error, "names": {n: {"kind": b.kind, "line": b.line, "col": b.col,
                                          "signature": b.signature, "owner": b.owner,
                                          "why": b.why} for n, b in gf.names.items()}}


def index_json(index: Index) -> JSONObject:
    """``index`` as the lint cache stores it (what ``index_module`` made, as JSON)."""
    return {"error": None if index["error"] is None else list(index["error"]),
            "names": {n: {"kind": b["kind"], "line": b["line"], "col": b["col"],
                          "signature": b["signature"], "owner": b["owner"], "why": b["why"]}
                      for n, b in index["names"].items()}}


def valid_index(index: JSON) -> TypeGuard[Index]:
    """Whether ``index`` (read back from the cache) is one :func:`index_module` makes."""
    if not isinstance(index, dict) or not isinstance(index.get("names"), dict):
        return False
    err = index.get("error")
    if err is not None and not (isinstance(err, list) and len(err) == 3 and _whole(err[0])
                                and _whole(err[1]) and isinstance(err[2], str)):
        return False
    names = index["names"]
    return isinstance(names, dict) and all(_valid_binding(v) for v in names.values())


def _valid_binding(v: JSON) -> bool:
    return (isinstance(v, dict) and v.keys() == _FIELDS and _whole(v["line"])
            and _whole(v["col"]) and isinstance(v["kind"], str) and v["kind"] in graderfile.WHAT
            and all(v[k] is None or isinstance(v[k], str) for k in ("signature", "owner", "why")))


def _whole(x: JSON) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_FIELDS = set(graderfile.Binding._fields)


# --- resolution (pure) --------------------------------------------------------------


def module_finding(path: str, index: Index) -> Finding | None:
    """GE503 at the module's own position when it does not parse."""
    err = index.get("error")
    if not err:
        return None
    line, col, msg = err
    return Finding(path, int(line), int(col), "GE503",
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
    return _check_bound(ref, mpath, func, graderfile.Binding(
        info["kind"], info["line"], info["col"], info["signature"], info["owner"], info["why"]))


def _check_bound(ref: RefLike, mpath: str, func: str, b: graderfile.Binding) -> Finding | None:
    where = f"{mpath}:{b.line}"
    if b.kind == "method":
        return _at(ref, "GE505", f"{func!r} is a method of class {b.owner} ({where}); "
                   f"graders are top-level functions: move it out of the class")
    if b.why:
        return _at(ref, "GE509", f"{func!r} ({where}) is not bound statically: {b.why}; "
                   f"{_static_fix(func, b.why)}")
    if b.kind not in ("def", "async"):
        return _at(ref, "GE506", f"{func!r} in {mpath} is {graderfile.WHAT[b.kind]} (line "
                   f"{b.line}), not a function; define it with `def {func}{CALL}:`")
    if b.kind == "async":
        return _at(ref, "GE507", f"{func!r} ({where}) is `async def`; graders are called "
                   f"synchronously as fn{CALL}: make it a plain def")
    if b.signature:
        return _at(ref, "GE508", f"{func!r} ({where}) {b.signature}; gitevals calls it as "
                   f"fn{CALL}: accept exactly those three")
    return None


def _static_fix(func: str, why: str) -> str:
    if why.endswith(graderfile.ANY_NAME):
        return ("remove that: graders are resolved without running the module, so it must "
                "not rewrite its own names")
    return (f"define it once, undecorated, as `def {func}{CALL}:` at the module's top level "
            "(not under if/try/with/for/while/match) and bind nothing else to that name")


def _missing_module(mpath: str, file: str, root: str, indexes: Mapping[str, object]) -> str:
    prefix = f"{root}/graders/" if root else "graders/"
    present = [p[len(prefix):-3] for p, ix in indexes.items()
               if ix is not None and p.startswith(prefix) and "/" not in p[len(prefix):]]
    return f"grader module {mpath} not found; create it or fix the name{_hint(file, present)}"


def _missing_function(mpath: str, func: str, index: Index) -> str:
    defs = [n for n, i in index["names"].items() if i["kind"] in ("def", "async")
            and not i["why"]]
    return f"no function {func!r} in {mpath}; define it at top level{_hint(func, defs)}"


def _hint(word: str, options: Iterable[str]) -> str:
    import difflib  # only for a name that does not resolve: the commit hook rarely needs it

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
