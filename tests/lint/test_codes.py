"""The registry of lint codes (``gitevals/lint/codes.py``) says what docs/lint-codes.md
says, code for code; every code the package reports is in both."""

from __future__ import annotations

import re
from pathlib import Path

from gitevals.lint.codes import BY_CODE, CODES, FAMILIES

ROOT = Path(__file__).resolve().parents[2]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().removeprefix("| ").removesuffix(" |").split(" | ")]


def documented() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The docs' code tables (by code, cells by column name) and range table."""
    rows: dict[str, dict[str, str]] = {}
    families: dict[str, str] = {}
    header: list[str] = []
    for line in (ROOT / "docs" / "lint-codes.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| code |"):
            header = _cells(line)
        elif re.match(r"\| GE\d{3} \|", line):
            cells = _cells(line)
            assert len(cells) == len(header), line
            rows[cells[0]] = dict(zip(header, cells, strict=True))
        elif re.match(r"\| GE\dxx \|", line):
            code, what = _cells(line)
            families[code] = what
    return rows, families


def test_the_registry_is_the_docs_tables() -> None:
    rows, families = documented()
    assert len(rows) >= 90
    assert [c.code for c in CODES] == list(rows), "same codes, in the docs' order"
    for c in CODES:
        row = rows[c.code]
        warning = row.get("severity") == "**warning**" or row["meaning"].startswith("warning:")
        assert (c.meaning, c.fix, c.severity) == (
            row["meaning"], row["how to fix"], "warning" if warning else "error"), c.code
    assert families == FAMILIES
    assert {c.family for c in CODES} == set(FAMILIES)


def test_every_code_the_package_reports_is_registered() -> None:
    reported = set()
    for path in (ROOT / "gitevals").rglob("*.py"):
        if path.name != "codes.py":
            reported |= set(re.findall(r'"(GE\d{3})"', path.read_text(encoding="utf-8")))
    # GE000 is not lint's: run's own "cannot load the case" when a linted case still fails.
    assert reported - {"GE000"} <= BY_CODE.keys(), reported - BY_CODE.keys()
    assert len(reported) >= 80
