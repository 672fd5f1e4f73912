"""The worker of the endpoint targets (``[target] openai`` and ``[target] http``): a
standalone script that speaks the command target's JSON lines to gitevals and HTTP to the
harness, so an agent served as an API is evaluated without a line of glue.

    python httpworker.py openai CONFIG    an OpenAI-compatible chat-completions endpoint
    python httpworker.py http CONFIG      a plain HTTP endpoint: a turn in, a reply out

``CONFIG`` is a JSON object (``url``, ``model``, ``api_key_env``): the key itself is read
from the environment variable named there, never from the argv (which ``ps`` shows).

Why a process and not a thread of gitevals: the scenario timeout, Ctrl-C and the cost
limit already stop a target by killing its process; an HTTP call stuck in a thread could
not be stopped that way. The script imports the standard library only.

When it cannot go on it writes one line on stderr and exits with a status gitevals reads
as the trial's error kind: ``START_FAILED`` (target_start: the key variable is not
set), ``BAD_REPLY`` (target_protocol: the endpoint answered something that is not a
reply), any other (target_crash: the endpoint cannot be reached or answered an HTTP
error).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import IO

#: Exit statuses gitevals maps to error kinds (``gitevals.run.targets``).
START_FAILED = 97
BAD_REPLY = 98
UNREACHABLE = 1
#: An answer longer than this is refused (a runaway endpoint must not eat the run's memory).
MAX_BODY = 16 * 1024 * 1024
#: The HTTP call's own timeout: the scenario's timeout kills the process well before.
CALL_TIMEOUT = 3600.0
#: In a later turn's history, what stands for a tool call the endpoint asked the client
#: to run: gitevals records such calls and runs no tools.
NOT_RUN = "not run: the evaluation records tool calls and runs no tools"

Message = dict[str, object]


class Stop(Exception):
    """The conversation cannot go on: ``status`` is the exit status, ``line`` says why."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status
        self.line = line


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _headers(config: Message) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    name = config.get("api_key_env")
    if isinstance(name, str):
        key = os.environ.get(name)
        if not key:
            raise Stop(START_FAILED, f"the API key variable {name} is not set: export it, "
                                     "or give it with run --target-env")
        headers["Authorization"] = f"Bearer {key}"
    return headers


def post(url: str, body: Message, headers: dict[str, str]) -> object:
    """POST ``body`` as JSON; the parsed JSON answer, or ``Stop`` saying what went wrong."""
    data = json.dumps(body, ensure_ascii=False).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as answer:
            raw = answer.read(MAX_BODY + 1)
    except urllib.error.HTTPError as exc:
        said = exc.read(4096).decode("utf-8", "replace")
        raise Stop(UNREACHABLE, f"{url} answered HTTP {exc.code}: "
                                f"{_short(said) or exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Stop(UNREACHABLE, f"cannot reach {url}: {reason}") from None
    if len(raw) > MAX_BODY:
        raise Stop(BAD_REPLY, f"{url} answered more than {MAX_BODY:,} bytes")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise Stop(BAD_REPLY, f"{url} answered something that is not JSON: "
                              f"{_short(raw.decode('utf-8', 'replace'))!r}") from None


# --- OpenAI-compatible chat completions ---------------------------------------------------


def _arguments(raw: object) -> object:
    """A tool call's ``arguments`` (a JSON string by the API) as the value it encodes;
    kept as given when it does not parse (the transcript shows what the model wrote)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _tool_call(call: object, url: str) -> Message:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(call, dict) or not isinstance(function, dict) or not isinstance(name, str):
        raise Stop(BAD_REPLY, f"{url}: a tool call has no function name: {_short(repr(call))}")
    out: Message = {"name": name, "args": _arguments(function.get("arguments"))}
    if isinstance(call.get("id"), str):
        out["id"] = call["id"]
    if "result" in call:  # a harness that ran the tool may say what it returned
        out["result"] = call["result"]
    return out


def _message(answer: object, url: str) -> tuple[Message, Message, Message]:
    """The chat completion's first choice's message, that choice, and the completion."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        said = answer["error"].get("message")
        raise Stop(UNREACHABLE, f"{url} answered an error: {_short(str(said))}")
    choices = answer.get("choices") if isinstance(answer, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(answer, dict) or not isinstance(first, dict) \
            or not isinstance(message, dict):
        raise Stop(BAD_REPLY, f"{url} answered JSON that is not a chat completion (no "
                              f"choices[0].message): {_short(json.dumps(answer))}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise Stop(BAD_REPLY, f"{url}: choices[0].message.content is a "
                              f"{type(content).__name__}, not a string or null")
    return message, first, answer


def chat_reply(answer: object, url: str) -> tuple[Message, list[Message]]:
    """A chat completion -> the turn's reply line, and the messages it adds to the history
    (the assistant's, then one ``tool`` message a call: the API wants each call answered
    before the next user turn)."""
    message, first, completion = _message(answer, url)
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise Stop(BAD_REPLY, f"{url}: choices[0].message.tool_calls is not a list")
    calls = [_tool_call(c, url) for c in raw_calls]
    reply: Message = {"final_answer": message.get("content"), "tool_calls": calls,
                      "hooks": [], "error": None}
    for key in ("model", "usage"):
        if key in completion:
            reply[key] = completion[key]
    if "finish_reason" in first:
        reply["finish_reason"] = first["finish_reason"]
    added: list[Message] = [{"role": "assistant", "content": message.get("content") or ""}]
    if raw_calls:
        added[0]["tool_calls"] = raw_calls
        added += [{"role": "tool", "tool_call_id": c.get("id", ""),
                   "content": json.dumps(c["result"]) if "result" in c else NOT_RUN}
                  for c in calls]
    return reply, added


def serve_openai(config: Message, lines: IO[str], out: IO[str]) -> None:
    """One conversation with a chat-completions endpoint: the whole history each turn."""
    base = str(config["url"]).rstrip("/")
    url = base if base.endswith("/chat/completions") else base + "/chat/completions"
    headers = _headers(config)
    history: list[Message] = []
    for line in lines:
        turn = json.loads(line)
        history.append({"role": "user", "content": turn.get("text")})
        body: Message = {"model": config["model"], "messages": history}
        if isinstance(turn.get("max_tokens"), int):  # a multiple-choice drift row's budget
            body["max_tokens"] = turn["max_tokens"]
        reply, added = chat_reply(post(url, body, headers), url)
        history += added
        out.write(json.dumps(reply, ensure_ascii=False) + "\n")
        out.flush()


# --- a plain HTTP endpoint ----------------------------------------------------------------


def serve_http(config: Message, lines: IO[str], out: IO[str]) -> None:
    """One conversation with a plain endpoint: each turn is POSTed as the command target's
    input line plus ``conversation`` (an id for servers that keep state) and ``messages``
    (the conversation so far, for servers that keep none); the answer is the reply."""
    url = str(config["url"])
    headers = _headers(config)
    history: list[Message] = []
    for line in lines:
        turn = json.loads(line)
        history.append({"role": "user", "content": turn.get("text")})
        conversation = f"{turn.get('case')}#{turn.get('trial')}"
        answer = post(url, {**turn, "conversation": conversation, "messages": history},
                      headers)
        if not isinstance(answer, dict):
            raise Stop(BAD_REPLY, f"{url} answered a JSON {type(answer).__name__}, not an "
                                  "object with final_answer")
        history.append({"role": "assistant", "content": answer.get("final_answer")})
        # gitevals checks the reply against the protocol, as for a command target's line
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
        out.flush()


def main(argv: list[str]) -> int:
    kind, config = argv[1], json.loads(argv[2])
    serve = serve_openai if kind == "openai" else serve_http
    try:
        serve(config, sys.stdin, sys.stdout)
    except Stop as exc:
        print(f"{kind} target: {exc.line}", file=sys.stderr)
        sys.stderr.flush()
        return exc.status
    except BrokenPipeError:
        return 1  # gitevals ended the conversation
    except (ValueError, RecursionError) as exc:  # an answer JSON cannot hold as a line
        print(f"{kind} target: the endpoint's answer cannot be passed on: "
              f"{type(exc).__name__}: {_short(str(exc))}", file=sys.stderr)
        return BAD_REPLY
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
