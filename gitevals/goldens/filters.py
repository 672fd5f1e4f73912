"""The drift suite's filter language: ``tag == 'drift-suite'`` and little more. Never eval.

Grammar (keywords lowercase)::

    expr    := conj ("or" conj)*
    conj    := neg ("and" neg)*
    neg     := "not" neg | "(" expr ")" | test
    test    := operand (("==" | "!=" | "in" | "not" "in") operand)?
    operand := field | 'text' | "text" | integer | true | false | null

A field is a row key (``a.b`` reads nested objects). ``field == x`` also holds when
the field is a list holding ``x`` (``tags == 'drift-suite'``); ``x in field`` is
membership in a list or a substring of a string; a bare field holds when present and
truthy. A missing field is null. ``parse`` returns a tree of tuples (data, not code);
``matches`` walks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitevals.jsontypes import JSON, JSONObject

_TOKEN = re.compile(r"""\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)"""
                    r"""|(?P<op>==|!=|\(|\))|(?P<word>[A-Za-z_][A-Za-z0-9_.-]*))""")
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}
_LITERALS: dict[str, JSON] = {"true": True, "false": False, "null": None}

#: ``("field", name) | ("lit", value) | ("cmp", op, a, b) | ("and"|"or", a, b) | ("not", a)``
Node = tuple[object, ...]


@dataclass(frozen=True)
class FilterError(Exception):
    """A filter that does not parse: ``col`` (1-based) and what is wrong."""

    col: int
    message: str


@dataclass(frozen=True)
class _Tok:
    kind: str  # str | num | op | word | end
    text: str
    col: int


def _tokens(text: str) -> list[_Tok]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if m is None or m.lastgroup is None:
            col = i + len(text[i:]) - len(text[i:].lstrip()) + 1
            raise FilterError(col, f"unexpected {text[col - 1]!r}")
        out.append(_Tok(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup) + 1))
        i = m.end()
    out.append(_Tok("end", "", len(text) + 1))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, text: str) -> bool:
        t = self.toks[self.i]
        return t.kind in ("op", "word") and t.text == text

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expr(self) -> Node:
        node = self.conj()
        while self.peek("or"):
            self.take()
            node = ("or", node, self.conj())
        return node

    def conj(self) -> Node:
        node = self.neg()
        while self.peek("and"):
            self.take()
            node = ("and", node, self.neg())
        return node

    def neg(self) -> Node:
        if self.peek("not"):
            self.take()
            return ("not", self.neg())
        if self.peek("("):
            self.take()
            node = self.expr()
            if not self.peek(")"):
                raise FilterError(self.toks[self.i].col, "missing ')'")
            self.take()
            return node
        return self.test()

    def test(self) -> Node:
        left = self.operand()
        if self.peek("==") or self.peek("!=") or self.peek("in"):
            op = self.take().text
            return ("cmp", op, left, self.operand())
        if self.peek("not") and self.toks[self.i + 1].text == "in":
            self.i += 2
            return ("not", ("cmp", "in", left, self.operand()))
        return ("cmp", "truthy", left, ("lit", None))

    def operand(self) -> Node:
        t = self.take()
        if t.kind == "str":
            return ("lit", _unquote(t.text))
        if t.kind == "num":
            return ("lit", int(t.text))
        if t.kind == "word" and t.text in _LITERALS:
            return ("lit", _LITERALS[t.text])
        if t.kind == "word" and t.text not in _KEYWORDS:
            return ("field", t.text)
        what = "the end" if t.kind == "end" else repr(t.text)
        raise FilterError(t.col, f"expected a field or a value, found {what}")


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def parse(text: str) -> Node:
    """The filter ``text`` as a tree; ``FilterError`` when it does not parse."""
    p = _Parser(text)
    try:
        node = p.expr()
    except RecursionError:
        raise FilterError(1, "nested too deep; write a flatter filter") from None
    t = p.toks[p.i]
    if t.kind != "end":
        raise FilterError(t.col, f"unexpected {t.text!r} (join tests with and / or)")
    return node


def _value(node: object, row: JSONObject) -> JSON:
    assert isinstance(node, tuple)
    if node[0] == "lit":
        return node[1]  # type: ignore[no-any-return]
    value: JSON = row
    for part in str(node[1]).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _compare(op: object, a: JSON, b: JSON) -> bool:
    if op == "truthy":
        return bool(a)
    if op == "in":
        return (b is not None and isinstance(b, list) and a in b) or (
            isinstance(a, str) and isinstance(b, str) and a in b)
    same = a == b or (isinstance(a, list) and b in a) or (isinstance(b, list) and a in b)
    return same if op == "==" else not same


def matches(node: Node, row: JSONObject) -> bool:
    """Whether ``row`` passes the parsed filter ``node``."""
    kind = node[0]
    if kind == "and":
        return matches(_node(node[1]), row) and matches(_node(node[2]), row)
    if kind == "or":
        return matches(_node(node[1]), row) or matches(_node(node[2]), row)
    if kind == "not":
        return not matches(_node(node[1]), row)
    return _compare(node[1], _value(node[2], row), _value(node[3], row))


def _node(value: object) -> Node:
    assert isinstance(value, tuple)
    return value
