"""A LangGraph graph (any compiled graph whose state has ``messages``, such as
``create_react_agent``'s) as a gitevals python target::

    from gitevals.adapters.langgraph import target
    from myapp.graph import graph

    respond = target(graph)

Each turn invokes the graph with the new user turn as a ``HumanMessage``: after the
conversation's own history when the graph keeps none, or alone under the conversation's
own ``thread_id`` when it was compiled with a checkpointer. It answers with the last AI
message's text, the turn's tool calls paired with their ``ToolMessage`` by
``tool_call_id``, the tokens of the AI messages' ``usage_metadata`` and the model name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from gitevals.adapters import Histories, Messages, Reply, jsonable, paired, user_text
from gitevals.adapters import reply as make_reply


class _Graph(Protocol):
    """What is used of a compiled LangGraph graph."""

    def invoke(self, input: dict[str, list[object]], config: dict[str, object] | None = ...,
               ) -> object: ...


def target(graph: _Graph, recursion_limit: int = 25) -> Callable[[Messages], Reply]:
    """The python target that invokes ``graph`` once per user turn; ``recursion_limit``
    bounds its steps in a turn (LangGraph's own default)."""
    from langchain_core.messages import HumanMessage

    histories: Histories[object] = Histories()
    threads: dict[int, str] = {}
    keeps_state = getattr(graph, "checkpointer", None) is not None

    def respond(messages: Messages) -> Reply:
        history = histories.of(messages)
        thread = threads.setdefault(id(messages), uuid.uuid4().hex)
        asked = HumanMessage(content=user_text(messages))
        config: dict[str, object] = {"recursion_limit": recursion_limit,
                                     "configurable": {"thread_id": thread}}
        state = graph.invoke({"messages": [asked] if keeps_state else [*history, asked]},
                             config)
        after = _messages(state)
        history[:] = after
        return turn_reply(_since_last_human(after))

    return respond


def _messages(state: object) -> list[object]:
    found = state.get("messages") if isinstance(state, dict) else getattr(
        state, "messages", None)
    if not isinstance(found, list):
        raise TypeError("the graph's state has no 'messages' list: the langgraph adapter "
                        "drives graphs whose state holds the conversation's messages")
    return found


def _since_last_human(messages: list[object]) -> list[object]:
    from langchain_core.messages import HumanMessage

    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return messages[last + 1:]


def turn_reply(new: Sequence[object]) -> Reply:
    """One turn's reply from the messages the graph added after the user's."""
    from langchain_core.messages import AIMessage, ToolMessage

    calls: list[tuple[str, str, object]] = []
    results: dict[str, object] = {}
    tokens_in = tokens_out = 0
    model = final = None
    for message in new:
        if isinstance(message, AIMessage):
            calls += [(str(c.get("id")), c["name"], jsonable(c["args"]))
                      for c in message.tool_calls]
            usage = message.usage_metadata
            if usage is not None:
                tokens_in += usage["input_tokens"]
                tokens_out += usage["output_tokens"]
            named = message.response_metadata.get("model_name")
            model = named if isinstance(named, str) else model
            final = _text(message.content)
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = jsonable(message.content)
    return make_reply(final, paired(calls, results), (tokens_in, tokens_out), model)


def _text(content: object) -> str:
    """A message's content as text (a list of content parts: their text joined)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts
                   if isinstance(p, str | dict))
