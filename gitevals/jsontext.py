"""JSON text as gitevals writes it to disk: sorted keys, one space indent, unicode kept.

``json.dumps(v, sort_keys=True, indent=1, ensure_ascii=False)`` is the canonical text of
a run artifact (its sha256 names the run's archive; notes and diffs read it), but any
``indent`` sends CPython's ``json`` to its pure-Python encoder, a chain of generators
yielding a few characters each: about 28 ms an artifact in the tests, seconds for a run
of thousands of trials. ``dumps`` writes the same bytes two to four times faster: one
recursive walk appending whole lines to a list joined once, making the same type tests
in the same order as ``json`` and calling the same C pieces (``encode_basestring``,
``int.__repr__``, ``float.__repr__``, NaN and the infinities spelled as ``json`` spells
them), so subclasses (``IntEnum``, ``OrderedDict``) come out as ``json`` writes them.

What the walk does not write is handed to ``json.dumps`` whole, so the text (or the
error) is always exactly ``json``'s: a key that is not exactly a ``str`` (``json``
converts numbers, rejects others), a value of no JSON type, an int too long for
``repr``, nesting deeper than ``DEEPEST`` (a cycle among them).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import NamedTuple

#: Indent (characters) past which ``json.dumps`` writes the text (a run nests about 10 deep):
#: far below the recursion limit, so the walk never fails where ``json`` would not.
DEEPEST = 100

_INT = int.__repr__
_FLOAT = float.__repr__
#: ``float.__repr__`` of the floats JSON has no number for, and what ``json`` writes.
_SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class _Unusual(Exception):
    """A value the walk does not write: ``json.dumps`` writes the whole text."""


def dumps(value: object, *, indent: int = 1, sort_keys: bool = True) -> str:
    """``json.dumps(value, sort_keys=sort_keys, indent=indent, ensure_ascii=False)``, byte
    for byte (the defaults are the artifact's text; the SARIF log is ``indent=2`` in the
    order it was built)."""
    out: list[str] = []
    how = _How(" " * indent, sort_keys, {})
    try:
        if isinstance(value, dict):
            _object(value, "\n", out, how)
        elif isinstance(value, (list, tuple)):
            _array(value, "\n", out, how)
        elif isinstance(value, str):
            out.append(encode_basestring(value))
        else:
            out.append(_scalar(value))
    except (_Unusual, RecursionError, ValueError, TypeError):
        # ValueError: an int past sys.get_int_max_str_digits(); TypeError: keys that
        # sorted() cannot order. json.dumps writes, or raises, as it always did.
        return json.dumps(value, sort_keys=sort_keys, indent=indent, ensure_ascii=False)
    return "".join(out)


class _How(NamedTuple):
    """How the walk writes: one level's indent, whether keys are sorted, and each key's
    text, made once."""

    step: str
    sort: bool
    keys: dict[str, str]


def _object(obj: dict[str, object], nl: str, out: list[str], how: _How) -> None:
    """Append the text of ``obj``, whose first line is already written; ``nl`` is a
    newline and the indent of that line."""
    if not obj:
        out.append("{}")
        return
    if len(nl) > DEEPEST:
        raise _Unusual
    inner, keys = nl + how.step, how.keys
    lead, sep = "{" + inner, "," + inner
    for key, value in sorted(obj.items()) if how.sort else obj.items():  # json's order
        if type(key) is not str:
            raise _Unusual
        head = keys.get(key)
        if head is None:
            head = keys[key] = encode_basestring(key) + ": "
        if isinstance(value, str):
            out.append(lead + head + encode_basestring(value))
        elif isinstance(value, dict):
            out.append(lead + head)
            _object(value, inner, out, how)
        elif isinstance(value, (list, tuple)):
            out.append(lead + head)
            _array(value, inner, out, how)
        elif value is None:
            out.append(lead + head + "null")
        elif value is True:
            out.append(lead + head + "true")
        elif value is False:
            out.append(lead + head + "false")
        elif isinstance(value, int):
            out.append(lead + head + _INT(value))
        elif isinstance(value, float):
            text = _FLOAT(value)
            out.append(lead + head + _SPECIAL.get(text, text))
        else:
            raise _Unusual
        lead = sep
    out.append(nl + "}")


def _array(items: list[object] | tuple[object, ...], nl: str, out: list[str],
           how: _How) -> None:
    """Append the text of ``items`` (``json`` writes lists and tuples alike), as
    ``_object`` does."""
    if not items:
        out.append("[]")
        return
    if len(nl) > DEEPEST:
        raise _Unusual
    inner = nl + how.step
    lead, sep = "[" + inner, "," + inner
    for value in items:
        if isinstance(value, str):
            out.append(lead + encode_basestring(value))
        elif isinstance(value, dict):
            out.append(lead)
            _object(value, inner, out, how)
        elif isinstance(value, (list, tuple)):
            out.append(lead)
            _array(value, inner, out, how)
        elif value is None:
            out.append(lead + "null")
        elif value is True:
            out.append(lead + "true")
        elif value is False:
            out.append(lead + "false")
        elif isinstance(value, int):
            out.append(lead + _INT(value))
        elif isinstance(value, float):
            text = _FLOAT(value)
            out.append(lead + _SPECIAL.get(text, text))
        else:
            raise _Unusual
        lead = sep
    out.append(nl + "]")


def _scalar(value: object) -> str:
    """The text of a JSON scalar, tested in ``json``'s order (``True`` is an int)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return _INT(value)
    if isinstance(value, float):
        text = _FLOAT(value)
        return _SPECIAL.get(text, text)
    raise _Unusual
