"""Bytes -> plain data + positions, refusing what YAML should never do in a case file.

``parse`` composes with libyaml (``CSafeLoader``) and converts nodes to plain
Python itself, so that it can refuse duplicate keys (PyYAML keeps the last one
silently), anchors and aliases (an alias bomb is refused before anything is
expanded), non-standard tags (``!!python/...``) and non-string keys, and keep
the node tree to answer "where is this key?" for any finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gitevals.findings import Finding, Severity
from gitevals.jsontypes import JSON, JSONObject

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64

_Loader: type[yaml.SafeLoader | yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_T = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _T + "str", _T + "map", _T + "seq"
_Scalar = bool | int | float | str | None
_CONSTRUCT: dict[str, Callable[[SafeConstructor, ScalarNode], _Scalar]] = {
    _T + "int": yaml.SafeLoader.construct_yaml_int,
    _T + "float": yaml.SafeLoader.construct_yaml_float,
    _T + "bool": yaml.SafeLoader.construct_yaml_bool,
    _T + "null": yaml.SafeLoader.construct_yaml_null,
}
# A date-looking scalar stays the text it was written as: JSON has no dates.
_AS_TEXT = {_STR, _T + "timestamp"}
_CONSTRUCTOR = yaml.SafeLoader("")
_DEEP_INDENT = re.compile(rb"\n[ \t]{256}")

Path_ = Sequence[str | int]


class _Mark(Protocol):
    """A position: ``yaml.error.Mark``, or libyaml's own ``Mark`` class."""

    line: int
    column: int


@dataclass(frozen=True)
class Document:
    """Parsed YAML: ``data`` as plain Python, ``root`` node kept for positions."""

    path: str
    data: JSON
    root: Node

    def node_at(self, path: Path_, key: bool = False) -> Node | None:
        """The node at ``path`` (keys and indexes); with ``key``, the last key's own node."""
        node: Node = self.root
        for i, part in enumerate(path):
            last = i == len(path) - 1
            if isinstance(node, MappingNode) and isinstance(part, str):
                for k, v in node.value:
                    if k.value == part:
                        node = k if (key and last) else v
                        break
                else:
                    return node
            elif isinstance(node, SequenceNode) and isinstance(part, int):
                if not 0 <= part < len(node.value):
                    return node
                node = node.value[part]
            else:
                return node
        return node

    def position(self, path: Path_, key: bool = False) -> tuple[int, int]:
        """1-based (line, col) of the node at ``path`` (its key with ``key=True``)."""
        node = self.node_at(path, key)
        mark = (node or self.root).start_mark
        return mark.line + 1, mark.column + 1

    def finding(self, path: Path_, code: str, message: str, key: bool = False,
                severity: Severity = "error") -> Finding:
        line, col = self.position(path, key)
        return Finding(self.path, line, col, code, message, severity)


class _Refused(Exception):
    def __init__(self, node: Node, code: str, message: str) -> None:
        self.node, self.code, self.message = node, code, message


def _at(path: str, mark: _Mark | None, code: str, message: str) -> Finding:
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return Finding(path, line, col, code, message)


def _decode(data: bytes, path: str) -> tuple[str | None, Finding | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        return None, Finding(path, line, col, "GE102",
                             f"not UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8")


def _tab_at(text: str, mark: _Mark) -> bool:
    """Whether libyaml stopped at a tab: it refuses tabs in indentation (and only
    there: tabs inside block scalars, quotes or flow collections are content)."""
    index = getattr(mark, "index", None)
    return isinstance(index, int) and 0 <= index < len(text) and text[index] == "\t"


def _event_scan(text: str, path: str) -> Finding | None:
    """Walk events (iteratively: no recursion, no expansion) for anchors, aliases, depth."""
    depth = 0
    for ev in yaml.parse(text, Loader=_Loader):
        if isinstance(ev, yaml.AliasEvent):
            return _at(path, ev.start_mark, "GE106",
                       f"alias *{ev.anchor} refused: write the value out in full")
        anchor = getattr(ev, "anchor", None)
        if anchor is not None:
            return _at(path, ev.start_mark, "GE106",
                       f"anchor &{anchor} refused: cases spell every value out")
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return _at(path, ev.start_mark, "GE111",
                           f"nested deeper than {MAX_DEPTH} levels; flatten the structure")
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return None


def _needs_event_scan(data: bytes) -> bool:
    return (b"&" in data or b"*" in data
            or data.count(b"[") + data.count(b"{") > 256
            or _DEEP_INDENT.search(data) is not None)


def _scalar(node: ScalarNode) -> _Scalar:
    tag = node.tag
    if tag in _AS_TEXT:
        text: str = node.value
        return text
    fn = _CONSTRUCT.get(tag)
    if fn is None:
        raise _Refused(node, "GE107", f"tag {tag.replace(_T, '!!')} refused: "
                       "plain strings, numbers, booleans and null only")
    try:
        return fn(_CONSTRUCTOR, node)
    except ValueError:  # Python refuses int() of more than 4,300 digits
        raise _Refused(node, "GE112", f"number with {len(str(node.value))} characters is "
                       "too large to read; write a smaller number") from None


def _tag(node: Node) -> str:
    return str(node.tag).replace(_T, "!!")


def _convert(node: Node) -> JSON:
    # `__class__ is` rather than isinstance: exact classes, and the cheapest test per node
    if node.__class__ is ScalarNode:
        return node.value if node.tag == _STR else _scalar(node)
    if node.__class__ is SequenceNode:
        if node.tag != _SEQ:
            raise _Refused(node, "GE107", f"tag {_tag(node)} refused: use a plain list")
        return [_convert(v) for v in node.value]
    if node.tag != _MAP:
        raise _Refused(node, "GE107", f"tag {_tag(node)} refused: use a plain mapping")
    out: JSONObject = {}
    for k, v in node.value:
        if k.__class__ is not ScalarNode:
            raise _Refused(k, "GE110", "mapping key is not a plain scalar; keys are names")
        name = k.value
        if name in out:
            raise _Refused(k, "GE108", f"duplicate key {name!r} (first at line "
                           f"{_first_line(node.value, name)}); YAML would keep only the last one")
        out[name] = _convert(v)
    return out


def _first_line(pairs: list[tuple[Node, Node]], name: str) -> int:
    line: int = next(k.start_mark.line for k, _ in pairs if k.value == name)
    return line + 1


def parse(data: bytes, path: str) -> tuple[Document | None, list[Finding]]:
    """Parse one YAML file. Returns the document, or None with the finding that stopped it."""
    if len(data) > MAX_BYTES:
        return None, [Finding(path, 1, 1, "GE104",
                              f"file is {len(data)} bytes, over the 1 MiB limit; split it")]
    text, bad = _decode(data, path)
    if text is None:
        return None, [bad] if bad else []
    stop = _event_scan_safe(text, path) if _needs_event_scan(data) else None
    if stop:
        return None, [stop]
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax(path, text, exc)]
    except yaml.YAMLError as exc:
        return None, [_other_error(path, text, exc)]
    if root is None:
        return None, [Finding(path, 1, 1, "GE105", "empty file; write a mapping or delete it")]
    try:
        return Document(path, _convert(root), root), []
    except _Refused as r:
        return None, [_at(path, r.node.start_mark, r.code, r.message)]
    except RecursionError:
        return None, [Finding(path, 1, 1, "GE111", "nested too deeply; flatten the structure")]


def _event_scan_safe(text: str, path: str) -> Finding | None:
    try:
        return _event_scan(text, path)
    except yaml.MarkedYAMLError as exc:
        return _syntax(path, text, exc)
    except yaml.YAMLError as exc:
        return _other_error(path, text, exc)


def _syntax(path: str, text: str, exc: yaml.MarkedYAMLError) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    if mark is not None and _tab_at(text, mark):
        return _at(path, mark, "GE103", "tab in indentation; YAML indents with spaces only")
    problem = exc.problem or exc.context or "invalid YAML"
    return _at(path, mark, "GE101", f"YAML syntax error: {problem}; fix the syntax here")


def _other_error(path: str, text: str, exc: yaml.YAMLError) -> Finding:
    """Unmarked errors: a control character (ReaderError) has a position; others are
    reduced to their first line so a finding stays one line."""
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.position, int):
        before = text[: exc.position]
        line = before.count("\n") + 1
        col = exc.position - (before.rfind("\n") + 1) + 1
        char = exc.character
        shown = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        return Finding(path, line, col, "GE101",
                       f"character {shown} is not allowed in YAML (control character); remove it")
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return Finding(path, 1, 1, "GE101", f"YAML error: {first}; fix the file")
