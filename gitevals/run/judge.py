"""``t.llm``: the judge model graders call, over an OpenAI-compatible HTTP API.

Runs inside the grader worker, so it imports the standard library only (no new
dependency, a fast worker start). The model is pinned in settings and sampled at
temperature 0 so a re-run asks the same question the same way.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when first used: most graders never call t.llm
    import urllib.request

    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.settings import Judge

NO_JUDGE = "no judge configured: set [tool.gitevals.judge]"


class JudgeError(Exception):
    """``t.llm`` could not get an answer; recorded as error kind ``judge_error``."""


def judge_config(judge: Judge | None) -> JSONObject | None:
    """``settings.Judge`` (or None) -> the plain dict the worker receives (as JSON)."""
    if judge is None:
        return None
    return {"base_url": judge.base_url, "model": judge.model,
            "api_key_env": judge.api_key_env, "timeout": judge.timeout}


def _request(config: JSONObject, prompt: str) -> urllib.request.Request:
    import urllib.request

    body: JSONObject = {"model": config["model"], "temperature": 0,
                        "messages": [{"role": "user", "content": prompt}]}
    headers = {"Content-Type": "application/json"}
    env = config.get("api_key_env")
    if isinstance(env, str) and env:
        key = os.environ.get(env)
        if not key:
            raise JudgeError(f"the judge key variable {env} is not set: export it before the run")
        headers["Authorization"] = f"Bearer {key}"
    url = str(config["base_url"]).rstrip("/") + "/chat/completions"
    return urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")


def _timeout(config: JSONObject) -> float:
    """Seconds to wait for the judge (60 unless the settings say otherwise)."""
    value = config.get("timeout") or 60
    return float(value) if isinstance(value, int | float | str) else 60.0


def _content(payload: JSON) -> str:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict) or "content" not in message:
        raise JudgeError("judge reply has no choices[0].message.content")
    content = message["content"]
    if not isinstance(content, str):
        raise JudgeError("judge reply content is not a string")
    return content


def llm(config: JSONObject | None, prompt: str) -> str:
    """Ask the judge ``prompt`` (one user message) and return its text answer."""
    if config is None:
        raise JudgeError(NO_JUDGE)
    if not isinstance(prompt, str):
        raise JudgeError(f"t.llm takes a str prompt, not {type(prompt).__name__}")
    import urllib.error
    import urllib.request

    req = _request(config, prompt)
    try:
        with urllib.request.urlopen(req, timeout=_timeout(config)) as resp:
            data = resp.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace").strip()
        raise JudgeError(f"judge answered HTTP {exc.code} at {req.full_url}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise JudgeError(f"cannot reach the judge at {req.full_url}: {reason}") from None
    try:
        payload: JSON = json.loads(data)
    except ValueError:
        raise JudgeError("judge reply is not JSON") from None
    return _content(payload)


class T:
    """The ``t`` graders receive: ``t.llm(prompt) -> str``."""

    def __init__(self, config: JSONObject | None) -> None:
        self._config = config

    def llm(self, prompt: str) -> str:
        """Ask the configured judge model; raises ``JudgeError`` when it cannot."""
        return llm(self._config, prompt)
