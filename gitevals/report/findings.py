"""Reporters for a finished ``LintResult``: each returns the text to print.

``REPORTERS`` maps a ``--format`` name to its function. ``rich_text`` is the
``text`` format with colours, used only when stdout is a terminal (rich is
imported there and nowhere else in the lint path).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.lint import LintResult


def summary(result: LintResult) -> str:
    """``12 files checked: 2 errors, 1 warning`` (or ``no problems``)."""
    files = f"{result.files} file{'s' if result.files != 1 else ''} checked"
    if not result.findings:
        return f"{files}: no problems"
    e, w = result.errors, result.warnings
    return f"{files}: {e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"


def text(result: LintResult) -> str:
    """One ``path:line:col: CODE message`` line per finding (warnings say so), then a summary."""
    lines = [_line(f.path, f.line, f.col, f.code, f.message, f.severity)
             for f in result.findings]
    return "\n".join([*lines, summary(result)]) + "\n"


def _line(path: str, line: int, col: int, code: str, message: str, severity: str) -> str:
    tag = " (warning)" if severity == "warning" else ""
    return f"{path}:{line}:{col}: {code}{tag} {message}"


def as_json(result: LintResult) -> str:
    """A stable document: sorted findings and keys, counts of files, errors, warnings."""
    doc = {"findings": [f.as_dict() for f in result.findings], "files": result.files,
           "errors": result.errors, "warnings": result.warnings}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(result: LintResult) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...::message``) + summary."""
    out = []
    for f in result.findings:
        props = ",".join([f"file={_escape_property(f.path)}", f"line={f.line}",
                          f"col={f.col}", f"title={_escape_property(f.code)}"])
        out.append(f"::{f.severity} {props}::{_escape_data(f.message)}")
    return "\n".join([*out, summary(result)]) + "\n"


def rich_text(result: LintResult, width: int | None = None) -> str:
    """The ``text`` format with colours (ANSI), for a terminal."""
    import io

    from rich.console import Console
    from rich.markup import escape

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width or 120, highlight=False,
                      soft_wrap=True)
    for f in result.findings:
        colour = "red" if f.severity == "error" else "yellow"
        tag = " (warning)" if f.severity == "warning" else ""
        console.print(f"[bold]{escape(f.path)}:{f.line}:{f.col}:[/] "
                      f"[{colour}]{f.code}{tag}[/] {escape(f.message)}")
    style = "green" if not result.findings else ("red" if result.errors else "yellow")
    console.print(f"[{style}]{escape(summary(result))}[/]")
    return buf.getvalue()


REPORTERS: dict[str, Callable[[LintResult], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}
