"""Text from a tree or a target, made safe to print on a terminal.

Case names, scenario ids, revisions and answers come from files and processes gitevals
does not control: an ESC or OSC sequence in them must not reach a terminal as a
command. ``visible`` shows each control character as an escape (``\\x1b``), keeping the
name recognisable; ``one_line`` folds a message (it may quote a harness's multi-line
output) into one line.
"""

from __future__ import annotations

import re

#: C0 and C1 controls and DEL, plus line/paragraph separators some terminals honour,
#: and lone UTF-16 surrogates (JSON can spell them; no terminal encoding can write them).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


_CONTROL_RUN = re.compile(f"(?:{CONTROL.pattern})+")


def visible(text: object) -> str:
    """``text`` with every control character written as its escape (``\\n``, ``\\x1b``)."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def one_line(text: object) -> str:
    """``text`` as one line: runs of control characters become one space."""
    return _CONTROL_RUN.sub(" ", str(text)).strip()


def fold(text: str, limit: int = 500) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out:
    ``first 500 characters… (1,234 more)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more)"


#: What XML 1.0 cannot hold even escaped (C0 controls but tab/LF/CR, lone surrogates,
#: U+FFFE/U+FFFF), plus DEL and C1 controls, which it allows but terminals obey.
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """``text`` as an XML 1.0 document can carry it, in names and attributes too: each
    forbidden character written as its escape (``\\x01``, ``\\ufffe``, ``\\ud800``)."""
    return XML_FORBIDDEN.sub(lambda m: repr(m.group())[1:-1], str(text))


#: Markdown syntax to write as a backslash escape (CommonMark escapes any ASCII
#: punctuation): HTML and autolinks (``<``), links and images (``[ ] !``; without them
#: ``(`` is text), code (`` ` ``), emphasis, strikethrough and math (``* ~ $``, and ``_``
#: unless inside a word, where it cannot emphasize), entities (``&``), table cells
#: (``|``), the escape itself; and ``.``, ``:``, ``@`` before a word, which GitHub-style
#: renderers turn into links (``example.com``, ``http://``, ``a@b.io``).
_MD_SYNTAX = re.compile(r"[\\`*\[\]!<|~&$#]|(?<![^\W_])_|_(?![^\W_])|[.:@](?=[\w/])")
#: What makes a block when it starts the text (a list item of data would nest one):
#: a quote, a list marker, an ordered-list number.
_MD_BLOCK_START = re.compile(r"^(?:[>+-]|\d+(?=[.)]))")


def md_inert(text: object) -> str:
    """``text`` as Markdown that renders as exactly that text on one line: no HTML,
    link, image, code span, emphasis or block can come out of it (a table cell, a list
    item)."""
    inline = _MD_SYNTAX.sub(lambda m: "\\" + m.group(), one_line(text))
    block = _MD_BLOCK_START.match(inline)
    if block is None:
        return inline
    end = block.end()  # ``-`` gets the escape; ``1.`` gets it on its ``.``
    return (f"\\{inline}" if not block.group()[0].isdigit()
            else f"{inline[:end]}\\{inline[end:]}")
