"""What ``gitevals publish-check`` found for one pushed commit: a value its reporters read.

Here, below the command and the reporters, so that ``report/publish.py`` reads it
without importing the command that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.git.pushes import Publication
    from gitevals.lint import LintResult


@dataclass(frozen=True)
class Checked:
    """One checked commit: the refs it publishes and its lint result."""

    publication: Publication
    result: LintResult

    @property
    def ok(self) -> bool:
        return self.result.ok
