"""Text from a tree or a target, made safe to print on a terminal.

Case names, scenario ids, revisions and answers come from files and processes gitevals
does not control: an ESC or OSC sequence in them must not reach a terminal as a
command. ``visible`` shows each control character as an escape (``\\x1b``), keeping the
name recognisable; ``one_line`` folds a message (it may quote a harness's multi-line
output) into one line.
"""

from __future__ import annotations

import re

#: C0 and C1 controls and DEL, plus line/paragraph separators some terminals honour.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: object) -> str:
    """``text`` with every control character written as its escape (``\\n``, ``\\x1b``)."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def one_line(text: object) -> str:
    """``text`` as one line: runs of control characters become one space."""
    return re.sub(f"(?:{CONTROL.pattern})+", " ", str(text)).strip()
