"""Test modules share through ``tests/support`` and ``tests/conftest.py`` only: no test
module imports another (one module's helpers would otherwise run, and break, with the
other's imports), and the support package imports no test module. Function-local
imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import PROJECT

TESTS = PROJECT / "tests"


def imported(path: Path, top: Path) -> list[tuple[int, str]]:
    """Every module (and name) ``path`` imports, relative ones made absolute from ``top``
    (the folder holding ``tests/``), with its line."""
    package = list(path.relative_to(top).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def offences(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for line, name in imported(path, root.parent):
            if is_test_module(name):
                found.append(f"{path.relative_to(root.parent)}:{line}: imports {name}")
    return found


def test_no_test_module_imports_another() -> None:
    assert offences(TESTS) == []


@pytest.mark.parametrize("line", ["from .test_run_cli import HARNESS",
                                  "from tests.lint.test_lint_cli import case",
                                  "from .. import test_judge",
                                  "import tests.test_scoring",
                                  "def f():\n    from .test_doctor import SETTINGS"])
def test_an_import_of_a_test_module_is_found(tmp_path: Path, line: str) -> None:
    (tmp_path / "tests" / "lint").mkdir(parents=True)
    (tmp_path / "tests" / "lint" / "test_x.py").write_text(f"{line}\n")
    (tmp_path / "tests" / "lint" / "test_ok.py").write_text(
        "from tests.conftest import Repo\nfrom tests.support import refdata\n"
        "from ..support.runs import setup\n")
    found = offences(tmp_path / "tests")
    assert len(found) == 1 and found[0].startswith("tests/lint/test_x.py:"), found
