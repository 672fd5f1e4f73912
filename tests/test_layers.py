"""The layers of ``docs/architecture.md``, checked over the import graph of ``gitevals/``.

Every module is parsed with ``ast`` (never imported): module-level, function-local,
``TYPE_CHECKING`` and relative imports all count. The floors are read from the fenced
``layers`` block of the architecture page, so the page and the check cannot drift.

- each unit (a subpackage, or a top-level module) sits on exactly one floor;
- a module imports only from its own floor or the floors below it;
- no two units import each other (directly or round a loop), and no two modules do,
  except the cycles listed below, which may only shrink: a listed cycle that no longer
  exists fails the test until it is struck from the list;
- no module imports a private name (``_x``) of another module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gitevals"
DOC = ROOT / "docs" / "architecture.md"

#: Cycles between units that are known and not yet broken (issue 22): the engine and the
#: task directories it runs (tasks/sandbox uses run/reaper, tasks/verifier the artifact's
#: types); lint and goldens (lint runs the goldens' rules, goldens' rules use lint's).
KNOWN_UNIT_CYCLES = [frozenset({"run", "tasks"}), frozenset({"lint", "goldens"})]
#: Cycles between modules, the same way (each a set of dotted module names).
KNOWN_MODULE_CYCLES = [
    frozenset({"gitevals.git.notestree", "gitevals.git.repo"}),
    frozenset({"gitevals.run.executors", "gitevals.run.runner"}),
    # run.summary joined this knot when the layers met the notes' summaries (issue 24):
    # artifact.load unpacks a saved summary's trials, and a summary is built of the
    # artifact's parts. Breaking it means a loader above both.
    frozenset({"gitevals.run.artifact", "gitevals.run.assertions", "gitevals.run.goldens",
               "gitevals.run.pricing", "gitevals.run.scoring", "gitevals.run.summary",
               "gitevals.run.targets", "gitevals.run.tasks", "gitevals.tasks.verifier"}),
]
#: Private names still imported across modules (module, name), to be made public or
#: moved; the list only shrinks (empty since commands/experiment calls gitevals.api).
KNOWN_PRIVATE: set[tuple[str, str]] = set()


def floors() -> list[tuple[str, list[str]]]:
    """(floor, units) from the top floor down, as the architecture page lists them."""
    block = re.search(r"```layers\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, f"{DOC}: no ```layers block"
    return [(line.split()[0], line.split()[1:])
            for line in block.group(1).splitlines() if line.strip()]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    """``gitevals.run.runner`` -> ``run``; ``gitevals.settings`` -> ``settings``; the
    package's own ``__init__`` (its version) is ``gitevals``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class Scan:
    """What the checks read of one module: its import statements and its reads of an
    underscored attribute of a plain name (``mod._x``)."""

    imports: tuple[ast.Import | ast.ImportFrom, ...]
    private_attributes: tuple[tuple[str, str], ...]


@cache
def scan(path: Path) -> Scan:
    """One parse and one walk of ``path``, shared by the import graph and the private-name
    check (the walks of the whole package are most of this file's cost)."""
    found: list[ast.Import | ast.ImportFrom] = []
    attributes: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.attr.startswith("_") and not node.attr.startswith("__")):
            attributes.append((node.value.id, node.attr))
    return Scan(tuple(found), tuple(attributes))


def imports(module: str, path: Path | None = None) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) of every import in ``module`` (read
    from ``path``, default its file), wherever it stands (a function body, ``if
    TYPE_CHECKING:``...)."""
    path = path or modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in scan(path).imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub, "", node.lineno) if sub in modules() else (base, alias.name,
                                                                       node.lineno)


@cache
def graph() -> dict[str, frozenset[tuple[str, str, int]]]:
    return {m: frozenset((t, name, line) for t, name, line in imports(m)
                         if t == "gitevals" or t.startswith("gitevals."))
            for m in modules()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_every_unit_sits_on_one_floor() -> None:
    placed = [u for _, units in floors() for u in units]
    assert len(placed) == len(set(placed)), "a unit is listed on two floors"
    missing = sorted({unit(m) for m in modules()} - set(placed))
    assert not missing, (f"not on any floor of {DOC.name}'s layers block: {missing}; "
                         "place each new package or top-level module on one")
    gone = sorted(set(placed) - {unit(m) for m in modules()})
    assert not gone, f"listed in {DOC.name} but not in gitevals/: {gone}"


def test_imports_go_down_only() -> None:
    level = {u: -i for i, (_, units) in enumerate(floors()) for u in units}
    name = {u: f for f, units in floors() for u in units}
    upward = [f"{modules()[m].relative_to(ROOT)}:{line} imports {t} "
              f"({name[unit(m)]} -> {name[unit(t)]})"
              for m, found in graph().items() for t, _, line in sorted(found)
              if level[unit(t)] > level[unit(m)]]
    assert not upward, "imports that go up a floor:\n" + "\n".join(upward)


def test_the_statistics_kernel_imports_nothing_of_gitevals() -> None:
    found = [(m, t) for m, ts in graph().items() if unit(m) == "stats"
             for t, _, _ in ts if unit(t) != "stats"]
    assert not found


def _known(found: list[frozenset[str]], known: list[frozenset[str]], what: str) -> None:
    new = [sorted(c) for c in found if c not in known]
    assert not new, f"new {what} import cycles: {new}"
    fixed = [sorted(c) for c in known if c not in found]
    assert not fixed, f"{what} cycles no longer there (strike them from the list): {fixed}"


def test_no_new_cycles_between_units() -> None:
    edges: dict[str, set[str]] = {}
    for m, found in graph().items():
        edges.setdefault(unit(m), set()).update(unit(t) for t, _, _ in found
                                                if unit(t) != unit(m))
    _known(cycles(edges), KNOWN_UNIT_CYCLES, "unit")


def test_no_new_cycles_between_modules() -> None:
    edges = {m: {t for t, _, _ in found if t != m} for m, found in graph().items()}
    _known(cycles(edges), KNOWN_MODULE_CYCLES, "module")


def test_no_private_name_crosses_a_module() -> None:
    found = {(t, name) for m, ts in graph().items() for t, name, _ in ts
             if name.startswith("_") and not name.startswith("__") and t != m}
    attrs = set()
    for path in modules().values():
        found_in = scan(path)  # the parse and walk graph() made
        aliases = {a.asname or a.name.rpartition(".")[2]: f"{n.module}.{a.name}"
                   for n in found_in.imports
                   if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("gitevals")
                   for a in n.names if f"{n.module}.{a.name}" in modules()}
        attrs.update((aliases[name], attr) for name, attr in found_in.private_attributes
                     if name in aliases)
    assert not (found | attrs) - KNOWN_PRIVATE, sorted((found | attrs) - KNOWN_PRIVATE)
    assert not KNOWN_PRIVATE - (found | attrs), ("no longer imported (strike from the "
                                                 f"list): {sorted(KNOWN_PRIVATE - found)}")


@pytest.mark.parametrize(("source", "expected"), [
    ("from gitevals.run import runner\n", ("gitevals.run.runner", "")),
    ("def f():\n    from gitevals.lint import lint_tree\n", ("gitevals.lint", "lint_tree")),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gitevals.api\n",
     ("gitevals.api", "")),
    ("from ..lint import publish\n", ("gitevals.lint.publish", "")),
], ids=["submodule", "function_local", "type_checking", "relative"])
def test_the_reader_sees_every_kind_of_import(tmp_path: Path, source: str,
                                               expected: tuple[str, str]) -> None:
    """The check would be blind without this: a hidden upward import is still read."""
    (tmp_path / "probe.py").write_text(source)
    found = {(t, n) for t, n, _ in imports("gitevals.report.probe", tmp_path / "probe.py")}
    assert expected in found
