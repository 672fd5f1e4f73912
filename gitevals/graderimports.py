"""What a grader runs besides its own module: the tree files it imports, transitively.

A grader worker puts ``<root>/graders/`` and the tree's top directory first on
``sys.path`` (``run/grading.py``), so ``import helper`` in a grader runs
``<root>/graders/helper.py`` or the repository's ``helper.py`` (or a package's
``__init__.py``) as committed. Pinning the grader module's blob alone misses an edit
there: every answer could be wrong and the gate, an experiment's controls and a
calibration record would not notice. ``closure`` reads the imports statically (``ast``,
never importing), resolves each to a file of the tree at that revision the way the
worker's ``sys.path`` would, and follows those files' imports in turn.

What it cannot see: a module named by a computed string (``importlib.import_module(x)``
with ``x`` not a literal), a file read with ``open()``, and anything outside the tree
(the standard library, installed packages: the tool version and environment pin those).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator

from gitevals.git.trees import Tree

#: At most this many files are followed from one set of graders (a hostile tree of
#: modules importing each other ends here; each is pinned, none is imported).
MAX_FILES = 2000


def closure(tree: Tree, modules: Iterable[str], root: str) -> dict[str, str]:
    """``path -> blob`` of ``modules`` (grader module paths) and of every tree file they
    import, transitively, resolved as the worker's ``sys.path`` would (``<root>/graders``
    first, then the tree's top)."""
    dirs = (f"{root}/graders" if root else "graders", "")
    out: dict[str, str] = {}
    todo = list(modules)
    while todo and len(out) < MAX_FILES:
        path = todo.pop()
        if path in out:
            continue
        sha = tree.blob_sha(path)
        data = tree.read(path) if sha is not None else None
        if sha is None or data is None:
            continue
        out[path] = sha
        todo.extend(p for p in _imported(tree, data, path, dirs) if p not in out)
    return dict(sorted(out.items()))


def _imported(tree: Tree, source: bytes, path: str, dirs: tuple[str, ...]) -> Iterator[str]:
    """The tree files the module ``source`` (at ``path``) imports."""
    from gitevals.graderfile import parse

    module = parse(source)
    if not isinstance(module, ast.Module):
        return
    here = posixpath.dirname(path)
    for dotted, base in _names(module, here):
        yield from _resolve(tree, dotted, (base,) if base is not None else dirs)


def _names(module: ast.Module, here: str) -> Iterator[tuple[str, str | None]]:
    """``(dotted name, directory it is relative to or None for sys.path)`` of every
    import, ``from`` import (each name may be a submodule) and literal
    ``importlib.import_module``/``__import__`` call."""
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = None
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = posixpath.dirname(base)
            stem = node.module or ""
            if stem:
                yield stem, base
            yield from ((f"{stem}.{a.name}" if stem else a.name, base)
                        for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value, None


def _imports_by_name(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else ""
    return name in ("import_module", "__import__")


def _resolve(tree: Tree, dotted: str, dirs: tuple[str, ...]) -> Iterator[str]:
    """The files ``dotted`` loads: each package's ``__init__.py`` on the way and the
    module itself, in the first directory of ``dirs`` that has its first part."""
    parts = [p for p in dotted.split(".") if p]
    if not parts or not all(p.isidentifier() for p in parts):
        return
    for d in dirs:
        found = []
        for i in range(1, len(parts) + 1):
            rel = "/".join(parts[:i])
            stem = f"{d}/{rel}" if d else rel
            hit = next((p for p in (f"{stem}.py", f"{stem}/__init__.py")
                        if tree.blob_sha(p) is not None), None)
            if hit is None:
                break
            found.append(hit)
        if found:
            yield from found
            return
