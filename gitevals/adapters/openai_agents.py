"""An OpenAI Agents SDK ``Agent`` as a gitevals python target::

    from gitevals.adapters.openai_agents import target
    from myapp.agent import agent

    respond = target(agent)

Each turn runs ``Runner.run_sync(agent, input)`` where ``input`` is the conversation's
own history (``result.to_input_list()`` of the turn before: every message, tool call and
tool output) plus the new user turn, and answers with the final output, the turn's tool
calls paired with their outputs by ``call_id``, the run's token usage and the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gitevals.adapters import Histories, Messages, Reply, answer_text, jsonable, paired, user_text
from gitevals.adapters import reply as make_reply

if TYPE_CHECKING:
    from agents import TResponseInputItem


def target(agent: object, context: object = None,
           max_turns: int = 10) -> Callable[[Messages], Reply]:
    """The python target that runs ``agent`` (an ``agents.Agent``) once per user turn;
    ``context`` is handed to every run, ``max_turns`` bounds the model calls of a turn."""
    from agents import Agent, Runner

    if not isinstance(agent, Agent):
        raise TypeError(f"target() wants an agents.Agent, not a {type(agent).__name__}")
    histories: Histories[TResponseInputItem] = Histories()

    def respond(messages: Messages) -> Reply:
        history = histories.of(messages)
        text = user_text(messages)
        given: str | list[TResponseInputItem] = (
            [*history, {"role": "user", "content": text}] if history else text)
        result = Runner.run_sync(agent, given, context=context, max_turns=max_turns)
        history[:] = result.to_input_list()
        usage = result.context_wrapper.usage
        return make_reply(answer_text(result.final_output), _calls(result.new_items),
                          (usage.input_tokens, usage.output_tokens),
                          _model_name(result.last_agent.model))

    return respond


def _calls(items: Sequence[object]) -> list[dict[str, object]]:
    """The run's function calls in order, each with its output."""
    from agents.items import ToolCallItem, ToolCallOutputItem

    calls: list[tuple[str, str, object]] = []
    results: dict[str, object] = {}
    for item in items:
        raw = getattr(item, "raw_item", None)
        if isinstance(item, ToolCallItem):
            name, args = getattr(raw, "name", None), getattr(raw, "arguments", None)
            if isinstance(name, str):
                calls.append((str(getattr(raw, "call_id", "")), name, _arguments(args)))
        elif isinstance(item, ToolCallOutputItem):
            call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(
                raw, "call_id", None)
            results[str(call_id)] = jsonable(item.output)
    return paired(calls, results)


def _arguments(raw: object) -> object:
    """A function call's arguments (a JSON string) as the value they encode."""
    if isinstance(raw, str):
        try:
            parsed: object = json.loads(raw)
            return parsed
        except ValueError:
            return raw
    return jsonable(raw)


def _model_name(model: object) -> str | None:
    """The agent's model by name: a string, or a model object's ``model``."""
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None
