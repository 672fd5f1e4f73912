"""No function or method in ``gitevals/`` is longer than 60 lines (issue 22: short
functions are a house rule, and the run command's seams regrew past it once nothing
checked). Parsed with ``ast``, never imported; a nested function counts on its own and
inside the one that holds it. A function that outgrows the bound is split into named
steps that read as the procedure, not exempted here."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gitevals"
#: The most lines a function may span, from its ``def`` line to its last line.
MOST_LINES = 60


def long_functions(source: str, most: int = MOST_LINES) -> list[tuple[str, int, int]]:
    """``(name, line, length)`` of each function of ``source`` spanning more than ``most``
    lines (a method as ``Class.name``, a nested function as ``outer.inner``)."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > most:
                        found.append((name, child.lineno, length))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def function(name: str, lines: int, indent: str = "") -> str:
    """The source of a function ``name`` spanning ``lines`` lines."""
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return textwrap.indent(f"def {name}():\n{body}", indent)


def test_the_measure_counts_def_to_last_line_methods_and_nested_ones() -> None:
    src = (function("fits", 60) + function("over", 61)
           + "class C:\n    @property\n" + function("m", 61, "    ")
           + "def outer():\n" + function("inner", 61, "    ") + "    return inner\n")
    assert long_functions(src) == [("over", 61, 61), ("C.m", 124, 61),
                                   ("outer", 185, 63), ("outer.inner", 186, 61)]


def test_no_function_in_gitevals_is_over_60_lines() -> None:
    over = [f"{path.relative_to(ROOT).as_posix()}:{line} {name} ({length} lines)"
            for path in sorted(PACKAGE.rglob("*.py"))
            for name, line, length in long_functions(path.read_text(encoding="utf-8"))]
    assert not over, (f"functions over {MOST_LINES} lines (split each into named steps "
                      "that read as the procedure): " + "; ".join(over))
