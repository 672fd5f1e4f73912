"""Adapters: an agent built on a framework becomes a gitevals ``python`` target by naming
the agent object, with no glue of the user's own (docs/integrations.md)::

    # evals/agent_target.py
    from gitevals.adapters.pydantic_ai import target
    from myapp.agent import agent

    respond = target(agent)

and ``[tool.gitevals.target] python = "evals.agent_target:respond"``. Each adapter keeps
the framework's own message history per conversation (so earlier turns' tool calls are
seen again), pairs every tool call with its result, and reports the token usage and
model so cost is priced (``[tool.gitevals.pricing]``).

They run in the agent's interpreter (``[target] interpreter``), where gitevals must be
installed beside the framework; they import nothing of gitevals but this package, and
the framework only when called.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

#: What a python target gets (the conversation so far, the new user turn last) and returns.
Messages = list[dict[str, object]]
Reply = dict[str, object]
Respond = Callable[[Messages], Reply]
#: An item of a framework's own history (a pydantic-ai message, an input item...).
Item = TypeVar("Item")


class Histories(Generic[Item]):
    """The framework's history of each conversation, kept between its turns.

    Keyed by the ``messages`` list the worker hands every turn of one conversation (one
    list per conversation, never copied); the list is held so its id is not reused."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Messages, list[Item]]] = {}

    def of(self, messages: Messages) -> list[Item]:
        """The history of the conversation ``messages`` is (empty at its first turn)."""
        return self._by_id.setdefault(id(messages), (messages, []))[1]


def user_text(messages: Messages) -> str:
    """The new user turn's text (the last message)."""
    content = messages[-1].get("content") if messages else None
    return content if isinstance(content, str) else ""


def answer_text(output: object) -> str | None:
    """An agent's output as the turn's final answer: text as is, structured output
    (a pydantic model, a dict) as JSON."""
    if output is None or isinstance(output, str):
        return output
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        output = dump(mode="json")
    return json.dumps(output, ensure_ascii=False, default=str, sort_keys=True)


def paired(calls: Iterable[tuple[str, str, object]],
           results: dict[str, object]) -> list[dict[str, object]]:
    """Tool calls ``(id, name, args)`` in order, each with the result of the same id (a
    call whose result never came has none)."""
    out: list[dict[str, object]] = []
    for call_id, name, args in calls:
        call: dict[str, object] = {"name": name, "args": args, "id": call_id}
        if call_id in results:
            call["result"] = results[call_id]
        out.append(call)
    return out


def reply(final: str | None, calls: list[dict[str, object]], tokens: tuple[int, int],
          model: str | None) -> Reply:
    """The reply line: answer, tool calls, and OpenAI-style usage for pricing."""
    out: Reply = {"final_answer": final, "tool_calls": calls, "hooks": [], "error": None,
                  "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}}
    if model:
        out["model"] = model
    return out


def jsonable(value: object) -> object:
    """A tool's argument or result as JSON can hold it (what the transcript keeps)."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return jsonable(dump(mode="json"))
        return str(value)
