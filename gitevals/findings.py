"""``Finding``: one problem in one file, the value every lint rule produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gitevals.jsontypes import JSONObject

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Finding:
    """A problem at ``path:line:col`` (both 1-based) with a stable ``code``.

    Ordering is (path, line, col, code, ...) so sorted findings read top to bottom.
    """

    path: str
    line: int
    col: int
    code: str
    message: str
    severity: Severity = "error"

    def as_dict(self) -> JSONObject:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
            "severity": self.severity,
        }

    def location(self) -> str:
        """``path:line:col``."""
        return f"{self.path}:{self.line}:{self.col}"

    def label(self) -> str:
        """The code, with ``(warning)`` after it for a warning."""
        return f"{self.code} (warning)" if self.severity == "warning" else self.code

    def __str__(self) -> str:
        """``path:line:col: CODE message``: the one line every text reporter prints.

        The path (a file name) and the message (it may quote a value of the file) are
        data: control characters show as escapes (``\\x1b``), never reach a terminal."""
        from gitevals.text import visible

        return f"{visible(self.location())}: {self.label()} {visible(self.message)}"


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
