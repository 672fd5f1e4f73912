"""Text from a tree or a target, made safe to print on a terminal.

Case names, scenario ids, revisions and answers come from files and processes gitevals
does not control: an ESC or OSC sequence in them must not reach a terminal as a
command. ``visible`` shows each control character as an escape (``\\x1b``), keeping the
name recognisable; ``one_line`` folds a message (it may quote a harness's multi-line
output) into one line.

The patterns are compiled on first use (``_pattern``): a command that prints nothing from
the tree -- the commit hook on a clean file -- never pays for their large classes.
"""

from __future__ import annotations

import re
from functools import cache

#: Unicode's format characters (category Cf, Unicode 15): the bidirectional controls
#: (an RLO U+202E makes a name read backwards, so ``txt.exe`` shows as ``exe.txt``),
#: zero-width characters, the BOM, interlinear annotations, tags. Listed, not computed:
#: a sweep of every code point at each start would cost more than the whole command
#: (tests check the list against ``unicodedata``).
FORMAT_CHARS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
                "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
                "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                "\U000e0020-\U000e007f")
#: C0 and C1 controls and DEL, plus line/paragraph separators some terminals honour,
#: the format characters, and lone UTF-16 surrogates (JSON can spell them; no
#: terminal encoding can write them).
_CONTROL = f"[\x00-\x1f\x7f-\x9f\u2028\u2029{FORMAT_CHARS}\ud800-\udfff]"
_SOURCES: dict[str, str] = {"CONTROL": _CONTROL, "_CONTROL_RUN": f"(?:{_CONTROL})+"}


@cache
def _pattern(name: str) -> re.Pattern[str]:
    """The compiled pattern ``name`` of ``_SOURCES``, compiled once."""
    return re.compile(_SOURCES[name])


def __getattr__(name: str) -> re.Pattern[str]:
    """``CONTROL``, ``XML_FORBIDDEN``, ``UNSAFE`` as module attributes, compiled on use."""
    if name in _SOURCES and name[0] != "_":
        return _pattern(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def visible(text: object) -> str:
    """``text`` with every control character written as its escape (``\\n``, ``\\x1b``)."""
    return _pattern("CONTROL").sub(lambda m: repr(m.group())[1:-1], str(text))


def one_line(text: object) -> str:
    """``text`` as one line: runs of control characters become one space."""
    return _pattern("_CONTROL_RUN").sub(" ", str(text)).strip()


def fold(text: str, limit: int = 500) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out:
    ``first 500 characters… (1,234 more)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more)"


#: What XML 1.0 cannot hold even escaped (C0 controls but tab/LF/CR, lone surrogates,
#: U+FFFE/U+FFFF), plus DEL and C1 controls, which it allows but terminals obey.
_SOURCES["XML_FORBIDDEN"] = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]"


def xml_text(text: object) -> str:
    """``text`` as an XML 1.0 document can carry it, in names and attributes too: each
    forbidden character written as its escape (``\\x01``, ``\\ufffe``, ``\\ud800``)."""
    return _pattern("XML_FORBIDDEN").sub(lambda m: repr(m.group())[1:-1], str(text))


#: Markdown syntax to write as a backslash escape (CommonMark escapes any ASCII
#: punctuation): HTML and autolinks (``<``), links and images (``[ ] !``; without them
#: ``(`` is text), code (`` ` ``), emphasis, strikethrough and math (``* ~ $``, and ``_``
#: unless inside a word, where it cannot emphasize), entities (``&``), table cells
#: (``|``), the escape itself; and ``.``, ``:``, ``@`` before a word, which GitHub-style
#: renderers turn into links (``example.com``, ``http://``, ``a@b.io``). A ``.`` between
#: two digits stays (``100.0%``, ``1.2.3``): no scheme, ``www.`` or top-level domain
#: holds one, and the dot before a domain's last label (a letter) is still escaped.
_SOURCES["_MD_SYNTAX"] = (r"[\\`*\[\]!<|~&$#]|(?<![^\W_])_|_(?![^\W_])|[:@](?=[\w/])"
                          r"|\.(?=[\w/])(?<!\d\.(?=\d))")
#: What makes a block when it starts the text (a list item of data would nest one):
#: a quote, a list marker, an ordered-list number (its ``.`` or ``)`` ends the text or
#: comes before a space: ``1.5`` is no list).
_SOURCES["_MD_BLOCK_START"] = r"^(?:[>+-]|\d+(?=[.)](?:[ \t]|$)))"


def md_inert(text: object) -> str:
    """``text`` as Markdown that renders as exactly that text on one line: no HTML,
    link, image, code span, emphasis or block can come out of it (a table cell, a list
    item)."""
    inline = _pattern("_MD_SYNTAX").sub(lambda m: "\\" + m.group(), one_line(text))
    block = _pattern("_MD_BLOCK_START").match(inline)
    if block is None:
        return inline
    end = block.end()  # ``-`` gets the escape; ``1.`` gets it on its ``.``
    return (f"\\{inline}" if not block.group()[0].isdigit()
            else f"{inline[:end]}\\{inline[end:]}")


#: What ``task compile`` writes as ``\uXXXX`` in both of its outputs: C0 and C1 controls,
#: DEL, U+2028/U+2029, the bidirectional controls (an RLO U+202E can make text read
#: backwards), and lone surrogates (no terminal encoding can write them).
_NOT_C0 = ("\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
           "\ud800-\udfff")
_UNSAFE = f"[\x00-\x1f{_NOT_C0}]"
_SOURCES["UNSAFE"] = _UNSAFE
_SOURCES["_QUOTED"] = f'[\\\\"]|{_UNSAFE}'
#: In a block, ``\u`` would read as an escape: its backslash is written ``\u005c``.
_SOURCES["_BLOCK"] = f"\\\\(?=u)|{_UNSAFE}"


def _u(m: re.Match[str]) -> str:
    c = m.group()
    quoting = m.re is _pattern("_QUOTED")
    return "\\" + c if c in '\\"' and len(c) == 1 and quoting else f"\\u{ord(c):04x}"


def quoted(text: str) -> str:
    """``text`` as a JSON string literal whose every unsafe character is ``\\uXXXX``: its
    boundaries are visible (an argv member ``"a b"`` is one member) and it parses back."""
    return '"' + _pattern("_QUOTED").sub(_u, text) + '"'


def block(text: str) -> list[str]:
    """``text`` as display lines: split at each newline, every other unsafe character
    written ``\\uXXXX`` (a literal backslash before ``u`` as ``\\u005c``), so each escape
    reads back to exactly one character."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no new one
    return [_pattern("_BLOCK").sub(_u, line) for line in lines]


def json_safe(doc: object) -> str:
    """``doc`` as indented JSON (keys sorted) with no unsafe character left raw: JSON's own
    escapes for C0, ``\\uXXXX`` for the rest. ``json.loads`` gives back exactly ``doc``."""
    import json

    text = json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True)
    # json.dumps escapes C0 in strings; the newlines and spaces left are its indentation.
    # Outside strings JSON holds none of the others: each one sits in a string.
    return _pattern("_RAW_IN_JSON").sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_SOURCES["_RAW_IN_JSON"] = f"[{_NOT_C0}]"
