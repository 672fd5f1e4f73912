"""Grader modules between two revisions: graders added, removed, changed (pure).

Which functions a module defines, and which names each top-level statement binds,
come from :mod:`gitevals.graderfile`, the resolver lint and run use too: a grader
that lint refuses (say, one defined under ``try:``) is not a function here either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from gitevals import graderfile
from gitevals.model import Case


@dataclass(frozen=True)
class GraderChange:
    """A grader function ``module.function`` added, removed or changed.

    ``via`` names module-level helpers/constants whose change reaches an otherwise
    identical function (kind "changed" with an empty ``via`` = its own code changed).
    """

    path: str
    name: str
    kind: str  # added | removed | changed | unreadable
    via: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class GraderUse:
    """A scenario on B that uses a grader that changed."""

    case: str
    scenario: str
    grader: str


_MODULE = "<module code>"


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    return body[1:] if body and _is_docstring(body[0]) else body


def _normal(node: ast.AST) -> str:
    """A node's code without positions, comments, formatting or docstrings."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node = type(node)(**{**{f: getattr(node, f) for f in node._fields},
                             "body": _strip_docstring(node.body)})
    return ast.dump(node, annotate_fields=True, include_attributes=False)


@dataclass(frozen=True)
class Module:
    """A grader module reduced to what a diff needs: normalized code per top-level name."""

    code: dict[str, str]
    uses: dict[str, frozenset[str]]
    functions: frozenset[str]  # what a case can name as a grader (``GraderFile.graders``)


def read_module(path: str, data: bytes) -> tuple[Module | None, str | None]:
    """Parse (never import) a grader module; a syntax error is the reason, not an exception."""
    gf = graderfile.read(data)
    if gf.error is not None:
        return None, f"{path}:{gf.error.line}:1: does not parse ({gf.error.message})"
    code: dict[str, list[str]] = {}
    uses: dict[str, set[str]] = {}
    statements = gf.statements
    if statements and _is_docstring(statements[0].node):
        statements = statements[1:]
    for stmt, bound in statements:
        names = list(bound) or [_MODULE]
        refs = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        try:
            normal = _normal(stmt)
        except (RecursionError, MemoryError):  # ast.dump recurses (graderfile bounds depth)
            return None, f"{path}:{stmt.lineno}:1: nested too deeply to compare"
        for name in names:
            code.setdefault(name, []).append(normal)
            uses.setdefault(name, set()).update(refs - {name})
    return Module({k: "\n".join(v) for k, v in code.items()},
                  {k: frozenset(v) for k, v in uses.items()}, gf.graders()), None


def _reaches(mod: Module, name: str, changed: set[str]) -> tuple[str, ...]:
    """Changed module-level names ``name`` depends on, transitively."""
    seen, stack, hits = {name}, [name], set()
    while stack:
        for ref in mod.uses.get(stack.pop(), ()):
            if ref in changed:
                hits.add(ref)
            if ref not in seen and ref in mod.code:
                seen.add(ref)
                stack.append(ref)
    return tuple(sorted(hits))


def diff_grader_module(rel: str, data_a: bytes | None, data_b: bytes | None) -> list[GraderChange]:
    """Graders of one module whose blob differs: added, removed, changed. Only functions
    a case can name as a grader are listed; a helper's change shows as ``via`` on the
    graders that use it."""
    stem = rel.rsplit("/", 1)[-1].removesuffix(".py")
    empty = Module({}, {}, frozenset())
    ma, why_a = read_module(rel, data_a) if data_a is not None else (empty, None)
    mb, why_b = read_module(rel, data_b) if data_b is not None else (empty, None)
    if ma is None or mb is None:
        why = "; ".join(f"{s}: {w}" for s, w in (("A", why_a), ("B", why_b)) if w)
        return [GraderChange(rel, f"{stem}.*", "unreadable", problem=why)]
    changed = {n for n in set(ma.code) | set(mb.code) if ma.code.get(n) != mb.code.get(n)}
    out = []
    for fn in sorted(ma.functions | mb.functions):
        name = f"{stem}.{fn}"
        if fn not in mb.functions:
            out.append(GraderChange(rel, name, "removed"))
        elif fn not in ma.functions:
            out.append(GraderChange(rel, name, "added"))
        elif fn in changed:
            out.append(GraderChange(rel, name, "changed"))
        else:
            via = _reaches(mb, fn, changed) or _reaches(ma, fn, changed)
            if via:
                out.append(GraderChange(rel, name, "changed", via))
    if _MODULE in changed:
        out.append(GraderChange(rel, f"{stem}.*", "changed", (_MODULE,)))
    return out


def grader_users(cases: Iterable[Case], changed: set[str]) -> tuple[GraderUse, ...]:
    """Scenarios (on B) whose assertions name one of the ``changed`` graders."""
    rows = {GraderUse(c.name, s.id, g) for c in cases for s in c.scenarios
            for g in s.graders() if g in changed}
    return tuple(sorted(rows, key=lambda u: (u.case, u.scenario, u.grader)))
