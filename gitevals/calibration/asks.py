"""Does one grader function ask the judge? Read from its source, never imported.

A grader asks the judge when its body names ``<x>.llm`` or ``<x>.judge`` (a call, or the
method handed on), or
calls (by plain name) a top-level function of its module that does, or hands ``t`` on
to anything (``helper(t)``, ``x = t``: what it does there cannot be followed, so it is
taken to ask). A deterministic grader that shares a module with a judge grader is
therefore still deterministic: calibration concerns the judge graders alone.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from gitevals.run.judge import JUDGE_METHODS


def asks_judge(source: bytes, function: str) -> bool:
    """Whether grader ``function`` of the module ``source`` may ask the judge. A module
    that does not parse, or a name that is not a top-level ``def``, falls back to the
    module as a whole (``judge.calls_llm``): when in doubt, the grader is a judge."""
    from gitevals.run.judge import calls_llm

    defs = _defs(source)
    if defs is None or function not in defs:
        return calls_llm(source)
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
    from gitevals.graderfile import parse

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
