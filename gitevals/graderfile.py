"""Which top-level functions a grader module defines, and where: the one answer.

Lint (``lint/graders.py``), diff (``diff/graders.py``) and the run-time worker
(``run/grading.py``) all ask :func:`read`, so what lint accepts, what diff
compares and what run calls are the same function. The module is parsed with
:mod:`ast`, never imported: this module runs no code of the tree. It imports the
standard library only (the worker imports it).

A name is a grader only when its binding is *static*: the last unconditional
top-level statement binding it is a plain, undecorated ``def``, and nothing can
rebind it afterwards. Not static (``Binding.why`` says how):

- bound under ``if``/``try``/``with``/``for``/``while``/``match`` (every name bound
  anywhere in such a statement, ``except ... as`` and ``case`` captures included);
- deleted by ``del``, assigned by ``:=`` or rebound by ``from m import *`` after it;
- decorated (a decorator may return anything, None included);
- declared ``global`` in a function or class body (a call may rebind it);
- any name of a module that can reach its own namespace (:data:`ESCAPE_NAMES`,
  :data:`ESCAPE_ATTRS`, ``locals`` at module level). That check is by name and best
  effort; the worker re-checks at run time that the object it calls is the ``def``
  found here.

An unconditional later binding of another kind (``f = 3``, ``import f``,
``class f``) is static: the name is then that, as in Python.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

#: Statements whose bodies run conditionally (or may stop half way).
COMPOUND = {ast.If: "if", ast.For: "for", ast.AsyncFor: "async for", ast.While: "while",
            ast.With: "with", ast.AsyncWith: "async with", ast.Try: "try",
            ast.Match: "match"}
if hasattr(ast, "TryStar"):  # Python 3.11+: try/except*
    COMPOUND[ast.TryStar] = "try"

#: Builtins through which code can rebind its module's names at run time (``vars``
#: only without an argument: ``vars(obj)`` needs the module object, found only through
#: the attributes below; ``locals`` only at module level, where it is ``globals``).
ESCAPE_NAMES = frozenset({"globals", "vars", "exec", "eval", "__import__", "__builtins__"})
#: Attributes that reach a module object or its namespace (``sys.modules``, a
#: function's ``__globals__``, a frame's ``f_globals``/``f_locals``) or those builtins.
ESCAPE_ATTRS = ESCAPE_NAMES | {"modules", "__globals__", "f_globals", "f_locals"}

#: How a ``Binding.why`` ends when the whole module is dynamic, not just one name.
ANY_NAME = "which can rebind any name"

#: How each kind of binding reads in a message ("'f' is a variable").
WHAT = {"def": "a function", "async": "an `async def`", "method": "a method",
        "class": "a class", "import": "an import", "variable": "a variable",
        "lambda": "a lambda"}


class ParseError(NamedTuple):
    """Why a module does not parse, at 1-based ``line``/``col``."""

    line: int
    col: int
    message: str


class Binding(NamedTuple):
    """What one top-level name of a grader module is bound to, and where (1-based).

    ``kind`` is a key of :data:`WHAT`; "method" means no module-level binding, only
    a method of that name in class ``owner``. ``signature`` (``def`` only) says why
    ``fn(t, case, run)`` would fail. ``why`` is None when the binding is static,
    else a clause saying why not ("it is deleted by `del` on line 9").
    """

    kind: str
    line: int
    col: int
    signature: str | None = None
    owner: str | None = None
    why: str | None = None


class Statement(NamedTuple):
    """A top-level statement and the module names it may bind or delete."""

    node: ast.stmt
    names: tuple[str, ...]


class GraderFile(NamedTuple):
    """A grader module as :func:`read` sees it."""

    error: ParseError | None
    names: dict[str, Binding]
    statements: tuple[Statement, ...]

    def function(self, name: str) -> Binding | None:
        """The static plain ``def`` bound to ``name`` (what run calls), or None."""
        b = self.names.get(name)
        return b if b is not None and b.kind == "def" and b.why is None else None

    def graders(self) -> frozenset[str]:
        """Names a case can name as a grader (lint resolves them, run calls them): static
        plain ``def``s that accept ``(t, case, run)``; helpers such as ``normalize(text)``,
        ``async def`` and methods are not."""
        return frozenset(n for n in self.names
                         if (b := self.function(n)) is not None and b.signature is None)


def parse(source: bytes) -> ast.Module | ParseError:
    """``source`` as an AST, or why it does not parse (never raises)."""
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        return ParseError(line, max(col, 1), exc.msg or "invalid syntax")
    except ValueError as exc:  # NUL bytes (3.11)
        return ParseError(1, 1, str(exc) or type(exc).__name__)
    except (RecursionError, MemoryError) as exc:  # absurd nesting; the parser says no line
        return ParseError(_longest_statement(source), 1,
                          f"nested too deeply for Python's parser ({type(exc).__name__}); "
                          "split the expression into smaller statements")


#: Deepest AST a grader module may have. Real code stays far below; past about 900,
#: ``ast.dump`` (which diff compares with) and the compiler recurse out of stack, so
#: lint, diff and run refuse the module alike rather than each at its own depth.
MAX_DEPTH = 500


def _too_deep(tree: ast.Module) -> ParseError | None:
    """Where ``tree`` nests past ``MAX_DEPTH``, or None. Iterative (no recursion)."""
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > MAX_DEPTH:
            return ParseError(line, 1, f"nested more than {MAX_DEPTH} levels deep; split "
                              "the expression into smaller statements")
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return None


@lru_cache(maxsize=8)
def _longest_statement(source: bytes) -> int:
    """The first line of the logical line with the most tokens: where a parser that
    ran out of stack most likely was (it gives no position). 1 when tokenizing fails.
    Kept per source: tokenizing a module that nests past the parser takes most of a
    second, and lint reads the module for its index and again for the judge."""
    import io
    import tokenize

    best, count, start, top = 1, 0, 0, 0
    try:
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if not start:
                start = tok.start[0]
            count += 1
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if count > top:
                    best, top = start, count
                count, start = 0, 0
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        pass
    return best


def read(source: bytes) -> GraderFile:
    """Describe a grader module's top-level names from its bytes (never executing it)."""
    tree = parse(source)
    if not isinstance(tree, ParseError):
        deep = _too_deep(tree)
        tree = deep if deep is not None else tree
    if isinstance(tree, ParseError):
        return GraderFile(tree, {}, ())
    return _Reader().read(tree)


def why_not(file: GraderFile, name: str) -> str | None:
    """Why ``name`` is not a grader run can call, in a clause for "has no function X: ...";
    None when it is (a signature problem shows when it is called)."""
    b = file.names.get(name)
    if b is None:
        return "nothing of that name is bound at top level"
    if b.why:
        return f"{b.why}, so it is not bound statically (`gitevals lint` says how to fix it)"
    if b.kind == "method":
        return f"it is a method of class {b.owner} (line {b.line})"
    if b.kind != "def":
        return f"it is {WHAT[b.kind]} (line {b.line})"
    return None


# --- the reader ------------------------------------------------------------------


class _Event(NamedTuple):
    """Something one top-level statement does to a module name."""

    what: str  # bind | walrus | delete | star | global | escape
    name: str
    binding: Binding


#: Events that bind or delete a module name.
_TOUCH = ("bind", "walrus", "delete")


class _Reader:
    """One pass over a module: bindings in statement order, then the order-free rules."""

    def __init__(self) -> None:
        self.names: dict[str, Binding] = {}
        self.methods: dict[str, Binding] = {}

    def read(self, tree: ast.Module) -> GraderFile:
        statements = []
        late = list(_dynamic(tree))  # global declarations and namespace escapes
        for stmt in tree.body:
            events = _events(stmt)
            late += [e for e in events if e.what == "escape"]
            keyword = COMPOUND.get(type(stmt))
            if keyword is None:
                self._simple(stmt, events)
            else:
                for e in events:
                    if e.what in _TOUCH:
                        self._unsettle(e, f"it is bound under `{keyword}` on line {stmt.lineno}",
                                       create=e.what != "delete")
            touched = dict.fromkeys(e.name for e in events if e.what in _TOUCH)
            statements.append(Statement(stmt, tuple(touched)))
        for e in late:
            self._late(e)
        for name, hint in self.methods.items():
            self.names.setdefault(name, hint)
        return GraderFile(None, self.names, tuple(statements))

    def _simple(self, stmt: ast.stmt, events: list[_Event]) -> None:
        """Apply an unconditional statement: its walruses run before its own binding."""
        line = stmt.lineno
        for e in events:
            if e.what == "walrus":
                self._unsettle(e, f"it is assigned by `:=` on line {line}", create=True)
        for e in events:
            if e.what == "bind":
                self.names[e.name] = e.binding
            elif e.what == "delete":
                self._unsettle(e, f"it is deleted by `del` on line {line}", create=False)
            elif e.what == "star":
                for name in list(self.names):
                    self._unsettle(e._replace(name=name), f"`{e.name}` on line {line} may "
                                                          "rebind it", create=False)
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.methods.setdefault(item.name, Binding(
                        "method", item.lineno, item.col_offset + 1, owner=stmt.name))

    def _late(self, e: _Event) -> None:
        if e.what == "global":
            self._unsettle(e, f"{e.binding.owner} declares it `global` (line "
                              f"{e.binding.line}) and may rebind it", create=False)
            return
        why = f"the module uses `{e.name}` (line {e.binding.line}), {ANY_NAME}"
        for name in list(self.names):
            self._unsettle(e._replace(name=name), why, create=False)

    def _unsettle(self, e: _Event, why: str, create: bool) -> None:
        """Mark ``e.name`` not static; the first reason after its last static binding stays."""
        current = self.names.get(e.name)
        if current is None:
            if create:
                self.names[e.name] = e.binding._replace(why=why)
        elif current.why is None:
            self.names[e.name] = current._replace(why=why)


def _events(stmt: ast.stmt) -> list[_Event]:
    """What ``stmt`` binds, deletes or assigns by walrus in module scope (iteratively:
    deep nesting must not overflow the stack)."""
    out: list[_Event] = []
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            out.extend(_name_events(node, stmt))
        else:
            out.extend(_binding_events(node))
        stack.extend(_module_children(node))
    return out


def _name_events(node: ast.Name, stmt: ast.stmt) -> list[_Event]:
    if isinstance(node.ctx, ast.Load):  # at module level, locals() is globals()
        return [_Event("escape", "locals", _at("variable", node))] if node.id == "locals" else []
    kind = "lambda" if isinstance(getattr(stmt, "value", None), ast.Lambda) else "variable"
    what = "delete" if isinstance(node.ctx, ast.Del) else "bind"
    return [_Event(what, node.id, _at(kind, node))]


def _binding_events(node: ast.AST) -> list[_Event]:
    """Module-scope bindings that are not a plain name."""
    if isinstance(node, ast.FunctionDef):
        binding = _at("def", node, signature=_signature_problem(node.args))
        if node.decorator_list:
            line = node.decorator_list[0].lineno
            binding = binding._replace(why=f"a decorator (line {line}) may replace it "
                                           "with anything")
        return [_Event("bind", node.name, binding)]
    if isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)):
        kind = "async" if isinstance(node, ast.AsyncFunctionDef) else "class"
        return [_Event("bind", node.name, _at(kind, node))]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_events(node)
    if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        return [_Event("walrus", node.target.id, _at("variable", node))]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return [_Event("bind", node.name, _at("variable", node))]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [_Event("bind", node.rest, _at("variable", node))]
    return []


def _import_events(node: ast.Import | ast.ImportFrom) -> list[_Event]:
    module = node.module if isinstance(node, ast.ImportFrom) else None
    return [_Event("star", f"from {module} import *", _at("import", node)) if a.name == "*"
            else _Event("bind", a.asname or a.name.split(".")[0], _at("import", node))
            for a in node.names]


def _module_children(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` that run in module scope.

    Bodies of functions, lambdas and classes are scopes of their own, and so is a
    comprehension's target; decorators, defaults, annotations and class bases run
    where the ``def``/``class`` stands. A walrus target is its ``NamedExpr``'s event.
    """
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, ast.Lambda):
        return [node.args]
    if isinstance(node, ast.comprehension):
        return [node.iter, *node.ifs]
    if isinstance(node, ast.NamedExpr):
        return [node.value]
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return [node.annotation]  # `f: int` alone binds nothing
    return list(ast.iter_child_nodes(node))


def _dynamic(tree: ast.Module) -> Iterator[_Event]:
    """``global`` declarations and namespace escapes anywhere in the module: they rebind
    whatever they rebind whenever their code runs, so their order does not matter."""
    for stmt in tree.body:
        owner = (f"{stmt.name}()" if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                 else f"class {stmt.name}" if isinstance(stmt, ast.ClassDef) else "a function")
        exempt: set[int] = set()
        for node in ast.walk(stmt):  # breadth first: a call comes before its callee name
            if isinstance(node, ast.Global) and node is not stmt:
                yield from (_Event("global", n, _at("variable", node, owner=owner))
                            for n in node.names)
            elif isinstance(node, ast.Call) and _reads_an_object(node):
                exempt.add(id(node.func))
            elif (isinstance(node, ast.Name) and node.id in ESCAPE_NAMES
                  and isinstance(node.ctx, ast.Load) and id(node) not in exempt):
                yield _Event("escape", node.id, _at("variable", node))
            elif isinstance(node, ast.Attribute) and node.attr in ESCAPE_ATTRS:
                base = f"{node.value.id}." if isinstance(node.value, ast.Name) else "."
                yield _Event("escape", base + node.attr, _at("variable", node))
            elif isinstance(node, ast.ImportFrom):  # from sys import modules
                yield from (_Event("escape", f"from {node.module} import {a.name}",
                                   _at("import", node))
                            for a in node.names if a.name in ESCAPE_ATTRS)


def _reads_an_object(call: ast.Call) -> bool:
    """``vars(obj)``: reads ``obj``, which cannot be this module without an escape."""
    return isinstance(call.func, ast.Name) and call.func.id == "vars" and bool(call.args)


def _at(kind: str, node: ast.AST, signature: str | None = None,
        owner: str | None = None) -> Binding:
    line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
    return Binding(kind, line, col, signature, owner)


def _signature_problem(args: ast.arguments) -> str | None:
    """Why ``fn(t, case, run)`` would fail against this signature, or None."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    required = len(positional) - len(args.defaults)
    if len(positional) < 3 and args.vararg is None:
        listed = ", ".join(positional) or "no parameters"
        return f"takes {len(positional)} positional parameter(s) ({listed})"
    if required > 3:
        return f"requires {required} positional arguments ({', '.join(positional[:required])})"
    missing = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
               if d is None]
    if missing:
        return f"has keyword-only parameter(s) without a default: {', '.join(missing)}"
    return None


# -- does a grader ask the judge? ---------------------------------------------------------

#: The methods of ``t`` that ask the judge model.
JUDGE_METHODS = frozenset(("llm", "judge"))


def judge_methods(source: bytes) -> frozenset[str]:
    """Which of ``JUDGE_METHODS`` a module names as an attribute, called or handed on
    (read, not run): ``f(t.llm)`` calls the judge as surely as ``t.llm(...)``."""
    module = parse(source)
    if not isinstance(module, ast.Module):
        return frozenset()
    return frozenset(n.attr for n in ast.walk(module)
                     if isinstance(n, ast.Attribute) and n.attr in JUDGE_METHODS)


def asks_judge(source: bytes, function: str | None = None) -> bool:
    """Whether grader ``function`` of the module ``source`` may ask the judge: the one
    answer preflight, the grader budget, doctor and calibration use.

    A grader asks when its body names ``<x>.llm`` or ``<x>.judge`` (a call, or the method
    handed on), or calls (by plain name) a top-level function of its module that does, or
    hands ``t`` on to anything (``helper(t)``, ``x = t``: what happens there cannot be
    followed, so it is taken to ask). A deterministic grader beside a judge grader in one
    module is therefore still deterministic. ``function`` None asks about the module: does
    any of its top-level functions ask. A name that is not a top-level ``def`` falls back
    to the module's text (``judge_methods``); a module that does not parse runs nothing,
    so it asks nothing."""
    defs = _defs(source)
    if defs is None:  # does not parse: no need to parse it again to find nothing
        return False
    if function is not None and function not in defs:
        return bool(judge_methods(source))
    names = list(defs) if function is None else [function]
    return any(_asks(defs, name) for name in names)


def _asks(defs: dict[str, ast.FunctionDef], function: str) -> bool:
    seen: set[str] = set()
    todo = [function]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # ``t`` is the grader's own first parameter; a helper's first one is anything.
        asks, called = _scan(defs[name], name == function)
        if asks:
            return True
        todo.extend(c for c in called if c in defs)
    return False


@lru_cache(maxsize=64)
def _defs(source: bytes) -> dict[str, ast.FunctionDef] | None:
    """The top-level ``def``s of a module, parsed once per source (a module of many graders
    is asked about each); None when it does not parse."""
    module = parse(source)
    if not isinstance(module, ast.Module):
        return None
    return {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}


def _scan(fn: ast.FunctionDef, grader: bool) -> tuple[bool, set[str]]:
    """(asks the judge itself or, for the grader, lets ``t`` escape; plain names it calls)."""
    params = fn.args.posonlyargs + fn.args.args
    t = params[0].arg if params and grader else None
    called: set[str] = set()
    carried: set[int] = set()  # ids of Name nodes that are ``t.<attr>`` bases
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            carried.add(id(node.value))
        if isinstance(node, ast.Attribute) and node.attr in JUDGE_METHODS:
            return True, called  # a call, or the bound method handed on (``f(t.llm)``)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
    escapes = any(isinstance(n, ast.Name) and n.id == t and id(n) not in carried
                  and isinstance(n.ctx, ast.Load) for n in ast.walk(fn))
    return escapes, called
