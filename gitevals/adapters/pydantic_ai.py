"""A pydantic-ai ``Agent`` as a gitevals python target::

    from gitevals.adapters.pydantic_ai import target
    from myapp.agent import agent

    respond = target(agent)

Each turn runs ``agent.run_sync(text, message_history=...)`` with the conversation's own
pydantic-ai history (every earlier request, response, tool call and tool return), and
answers with the run's output, its tool calls paired with their returns by
``tool_call_id``, the tokens of every model response of the turn and the model's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gitevals.adapters import Histories, Messages, Reply, answer_text, jsonable, paired, user_text
from gitevals.adapters import reply as make_reply


class _Result(Protocol):
    @property
    def output(self) -> object: ...

    def new_messages(self) -> list[object]: ...


class _Agent(Protocol):
    """What is used of ``pydantic_ai.Agent`` (any deps and output types)."""

    def run_sync(self, user_prompt: str, *, message_history: list[object] | None = ...,
                 deps: object = ...) -> _Result: ...


def target(agent: _Agent, deps: object = None,
           deps_factory: Callable[[], object] | None = None) -> Callable[[Messages], Reply]:
    """The python target that runs ``agent`` once per user turn. ``deps`` are handed to
    every run; ``deps_factory`` instead makes fresh ones for each conversation."""
    histories: Histories[object] = Histories()
    conversation_deps: dict[int, object] = {}

    def respond(messages: Messages) -> Reply:
        history = histories.of(messages)
        if deps_factory is not None:
            given = conversation_deps.setdefault(id(messages), deps_factory())
        else:
            given = deps
        result = agent.run_sync(user_text(messages), message_history=history or None,
                                deps=given)
        new = result.new_messages()
        history.extend(new)
        return turn_reply(result.output, new)

    return respond


def turn_reply(output: object, new: list[object]) -> Reply:
    """One turn's reply from the run's output and the messages the run added."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    calls: list[tuple[str, str, object]] = []
    results: dict[str, object] = {}
    tokens_in = tokens_out = 0
    model = None
    for message in new:
        if isinstance(message, ModelResponse):
            tokens_in += message.usage.input_tokens
            tokens_out += message.usage.output_tokens
            model = message.model_name or model
            calls += [(p.tool_call_id, p.tool_name, jsonable(p.args_as_dict()))
                      for p in message.parts if isinstance(p, ToolCallPart)]
        elif isinstance(message, ModelRequest):
            results.update((p.tool_call_id, jsonable(p.content))
                           for p in message.parts if isinstance(p, ToolReturnPart))
    return make_reply(answer_text(output), paired(calls, results), (tokens_in, tokens_out),
                      model)
