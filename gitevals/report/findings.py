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
    from gitevals.findings import Finding
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
    return "\n".join([*map(str, result.findings), summary(result)]) + "\n"


def as_json(result: LintResult) -> str:
    """A stable document: sorted findings and keys, counts of files, errors, warnings."""
    doc = {"findings": [f.as_dict() for f in result.findings], "files": result.files,
           "errors": result.errors, "warnings": result.warnings}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def escape_data(s: str) -> str:
    """A workflow command's message, escaped as GitHub reads it (``%``, CR, LF); every
    other control or format character (ESC, BEL, a bidi override) as its escape
    (``\x1b``): the log that shows the annotation is a terminal too."""
    from gitevals.text import visible

    return visible(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(s: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which end one."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, message: str | None = None) -> str:
    """``::error file=...,line=...,col=...,title=CODE::message`` (``message`` defaults to
    the finding's)."""
    props = ",".join([f"file={escape_property(f.path)}", f"line={f.line}",
                      f"col={f.col}", f"title={escape_property(f.code)}"])
    return f"::{f.severity} {props}::{escape_data(f.message if message is None else message)}"


def github(result: LintResult) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...::message``) + summary."""
    return "\n".join([*map(annotation, result.findings), summary(result)]) + "\n"


def rich_text(result: LintResult, width: int | None = None) -> str:
    """The ``text`` format with colours (ANSI), for a terminal."""
    import io

    from rich.console import Console
    from rich.markup import escape

    from gitevals.text import visible

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width or 120, highlight=False,
                      soft_wrap=True)
    for f in result.findings:
        colour = "red" if f.severity == "error" else "yellow"
        console.print(f"[bold]{escape(visible(f.location()))}:[/] "
                      f"[{colour}]{f.label()}[/] {escape(visible(f.message))}")
    style = "green" if not result.findings else ("red" if result.errors else "yellow")
    console.print(f"[{style}]{escape(summary(result))}[/]")
    return buf.getvalue()


REPORTERS: dict[str, Callable[[LintResult], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}


def render(result: LintResult, fmt: str, terminal_width: int | None = None) -> str:
    """The ``fmt`` report of ``result``; ``text`` for a terminal (its width given) has colours."""
    if fmt == "text" and terminal_width is not None:
        return rich_text(result, terminal_width)
    return REPORTERS[fmt](result)


def nothing_to_lint(where: str) -> str:
    """The note for a tree without cases, graders or goldens (``where``: the tree's label)."""
    from gitevals.text import visible

    return (f"gitevals: nothing to lint in the {visible(where)}: no cases, graders or goldens "
            "under the eval root; `gitevals init` scaffolds an eval tree\n")
