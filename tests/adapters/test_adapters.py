"""The framework adapters (gitevals.adapters): a pydantic-ai agent, an OpenAI Agents SDK
agent and a LangGraph graph, each built with the real library on a deterministic model,
evaluated by the real CLI through the target file docs/integrations/ shows (at most
five lines of the user's own). Each conversation asks for the weather (a tool call and
its result), then asks again: the second answer proves the first turn's tool call and
result were in the history the framework was given."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from tests.conftest import Repo, run_cli
from tests.support import fake_openai
from tests.support.paths import PROJECT
from tests.support.runs import only_artifact

DOCS = PROJECT / "docs" / "integrations"

CASE = """\
defaults: {timeout: 60s}
scenarios:
  - id: weather
    user: ["weather in Paris?", "anything else?"]
    expect:
      - tool_called: {name: get_weather, args: {city: Paris}}
      - result_contains: {name: get_weather, substring: sunny}
"""

SETTINGS = '[tool.gitevals.target]\npython = "agent_target:respond"\n'


def docs_target(module: str) -> str:
    """The ``agent_target.py`` block of docs/integrations/ that imports ``module``."""
    pages = "".join(p.read_text() for p in sorted(DOCS.glob("*.md")))
    blocks = re.findall(r"```python\n(# agent_target\.py\n.*?)```", pages, re.S)
    found = [b for b in blocks if f"from gitevals.adapters.{module} import" in b]
    assert len(found) == 1, f"docs/integrations/ shows no target file for {module}"
    code = [line for line in found[0].splitlines()
            if line.strip() and not line.startswith("#")]
    assert len(code) <= 5, code  # the bar: at most five lines of user code
    return found[0]


def _run(repo: Repo, agent_module: str, adapter: str, where: str = "myapp/agent.py",
         cases: dict[str, str | bytes] | None = None, code: int = 0) -> dict[str, Any]:
    repo.commit({"pyproject.toml": SETTINGS, "evals/cases/weather.yaml": CASE,
                 "myapp/__init__.py": "", where: textwrap.dedent(agent_module),
                 "agent_target.py": docs_target(adapter), **(cases or {})})
    res = run_cli("run", "--jobs", "1", cwd=repo.path, timeout=300)
    assert res.code == code, res.out + res.err
    assert "Traceback" not in res.err
    return only_artifact(repo)


def _turns(art: dict[str, Any], case: str = "weather") -> list[dict[str, Any]]:
    found = next(c for c in art["cases"] if c["name"] == case)
    turns: list[dict[str, Any]] = found["scenarios"][0]["results"][0]["transcript"]["turns"]
    return turns


# --- pydantic-ai -------------------------------------------------------------------------

PYDANTIC_AGENT = """\
from pydantic_ai import Agent
from pydantic_ai.messages import (ModelResponse, TextPart, ToolCallPart, ToolReturnPart,
                                  UserPromptPart)
from pydantic_ai.models.function import FunctionModel


def weather_model(messages, info):
    parts = messages[-1].parts
    returned = [p for p in parts if isinstance(p, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart(f"It is {returned[0].content} in Paris.")])
    text = [p for p in parts if isinstance(p, UserPromptPart)][-1].content
    if text == "explode":
        raise RuntimeError("no network")
    if text.startswith("weather in "):
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": text[11:-1]})])
    seen = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
    return ModelResponse(parts=[TextPart(f"{len(messages)} messages, {seen} tool results")])


agent = Agent(FunctionModel(weather_model))


@agent.tool_plain
def get_weather(city: str) -> str:
    return "sunny"
"""


def test_a_pydantic_ai_agent_in_five_lines(repo: Repo) -> None:
    explode = "scenarios:\n  - id: s\n    user: explode\n    expect: [{no_error: true}]\n"
    art = _run(repo, PYDANTIC_AGENT, "pydantic_ai", cases={"evals/cases/explode.yaml": explode},
               code=1)
    first, second = _turns(art)
    assert first["final_answer"] == "It is sunny in Paris."
    (call,) = first["tool_calls"]
    assert call["name"] == "get_weather" and call["args"] == {"city": "Paris"}
    assert call["result"] == "sunny" and call["id"]
    # the second run was given the first's four messages, tool call and return among them
    assert second["final_answer"] == "5 messages, 1 tool results"
    assert second["tool_calls"] == []
    assert first["model"] == "function:weather_model:"
    assert first["usage"]["prompt_tokens"] > 0 and first["usage"]["completion_tokens"] > 0
    verdicts = {c["name"]: c["scenarios"][0]["verdict"]["verdict"] for c in art["cases"]}
    assert verdicts == {"weather": "pass", "explode": "fail"}
    # an agent that raises: the turn's error, the conversation's outcome, not a crash
    (raised,) = _turns(art, "explode")
    assert raised["final_answer"] is None and raised["error"] == "RuntimeError: no network"


# --- OpenAI Agents SDK --------------------------------------------------------------------

AGENTS_SDK_AGENT = """\
from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    return "sunny"


client = AsyncOpenAI(base_url="{url}", api_key="sk-fake")
agent = Agent(name="weather", instructions="Answer about the weather.",
              model=OpenAIChatCompletionsModel(model="harness-2026-01", openai_client=client),
              tools=[get_weather])
"""


def test_an_openai_agents_sdk_agent_in_five_lines(repo: Repo) -> None:
    with fake_openai.serve() as fake:
        art = _run(repo, AGENTS_SDK_AGENT.replace("{url}", fake.url), "openai_agents")
    first, second = _turns(art)
    assert first["final_answer"] == "It is sunny in Paris."
    assert first["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"},
                                    "id": "call_1", "result": "sunny"}]
    assert second["final_answer"] == "You said: anything else? (turn 2)"
    # the second turn's request carried the first turn's call and its output
    last = fake.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert last[3]["content"] == "sunny"
    # two model calls in the first turn (10*2 + 10*4 prompt tokens), one in the second
    assert first["usage"] == {"prompt_tokens": 60, "completion_tokens": 10}
    assert second["usage"] == {"prompt_tokens": 60, "completion_tokens": 5}
    assert first["model"] == "harness-2026-01"


# --- LangGraph ----------------------------------------------------------------------------

LANGGRAPH_GRAPH = """\
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent


class WeatherModel(BaseChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        usage = {"input_tokens": 10 * len(messages), "output_tokens": 5,
                 "total_tokens": 10 * len(messages) + 5}
        meta = {"model_name": "fake-chat-2026-01"}
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"It is {last.content} in Paris.")
        elif last.content.startswith("weather in "):
            call = {"name": "get_weather", "args": {"city": last.content[11:-1]},
                    "id": "call_1", "type": "tool_call"}
            reply = AIMessage("", tool_calls=[call])
        else:
            seen = sum(isinstance(m, ToolMessage) for m in messages)
            reply = AIMessage(f"{len(messages)} messages, {seen} tool results")
        reply.usage_metadata = usage
        reply.response_metadata = meta
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools, **kwargs):
        return self

    @property
    def _llm_type(self):
        return "weather-fake"


@tool
def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "sunny"


graph = create_react_agent(WeatherModel(), [get_weather])
"""


def test_a_langgraph_graph_in_five_lines(repo: Repo) -> None:
    art = _run(repo, LANGGRAPH_GRAPH, "langgraph", where="myapp/graph.py")
    first, second = _turns(art)
    assert first["final_answer"] == "It is sunny in Paris."
    assert first["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"},
                                    "id": "call_1", "result": "sunny"}]
    assert second["final_answer"] == "5 messages, 1 tool results"
    assert first["usage"] == {"prompt_tokens": 10 + 30, "completion_tokens": 10}
    assert first["model"] == "fake-chat-2026-01"


def test_a_langgraph_graph_with_a_checkpointer_keeps_each_conversation_apart() -> None:
    """A graph compiled with a checkpointer keeps the history itself: the adapter sends
    only the new turn, under a thread of the conversation's own (in process: the
    adapter is a library function)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    from gitevals.adapters.langgraph import target

    space: dict[str, Any] = {}
    exec(compile(LANGGRAPH_GRAPH, "graph.py", "exec"), space)
    graph = create_react_agent(space["WeatherModel"](), [space["get_weather"]],
                               checkpointer=InMemorySaver())
    respond = target(graph)
    one: list[dict[str, object]] = [{"role": "user", "content": "weather in Paris?"}]
    two: list[dict[str, object]] = [{"role": "user", "content": "hello?"}]
    assert respond(one)["final_answer"] == "It is sunny in Paris."
    assert respond(two)["final_answer"] == "1 messages, 0 tool results"
    one += [{"role": "assistant", "content": "..."}, {"role": "user", "content": "and?"}]
    again = respond(one)
    assert again["final_answer"] == "5 messages, 1 tool results"  # its own thread only
    assert again["tool_calls"] == []
