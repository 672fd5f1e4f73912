"""``t.llm``: the judge model graders call, over an OpenAI-compatible HTTP API.

Runs inside the grader worker, so it imports the standard library and
``gitevals.judgesettings`` (``settings.Judge``, the one home of the judge's settings and
their defaults) only: no new dependency, a fast worker start. The model is pinned in settings
and sampled at temperature 0 so a re-run asks the same question the same way.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from gitevals.judgesettings import RETRIES, Judge

if TYPE_CHECKING:  # imported when first used: most graders never call t.llm
    import urllib.request
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from gitevals.jsontypes import JSON, JSONObject

#: The judge to ask: the settings' ``Judge``, or its ``as_config`` form (what the grader
#: worker receives as JSON), read back once by ``Judge.from_table``; None: no judge.
Config: TypeAlias = "Judge | JSONObject | None"

NO_JUDGE = "no judge configured: set [tool.gitevals.judge]"
#: First backoff in seconds, doubled at each retry (GITEVALS_JUDGE_BACKOFF, for tests).
BACKOFF = 1.0
#: Longest wait between attempts: a longer ``Retry-After`` ends the call instead, so the
#: grader limit (``budget``) always holds every attempt the judge may make.
MAX_WAIT = 30.0


class JudgeError(Exception):
    """``t.llm`` could not get an answer; recorded as error kind ``judge_error``."""


class JudgeParseError(Exception):
    """``t.judge`` got an answer that is not PASS or FAIL, as many times as it may ask:
    recorded as error kind ``judge_unparseable``, never coerced into a FAIL."""


def judge_config(judge: Judge | None) -> JSONObject | None:
    """``settings.Judge`` (or None) -> the plain dict the worker receives (as JSON)."""
    return None if judge is None else judge.as_config()


def _judge(config: Config) -> Judge | None:
    """``config`` as the settings' ``Judge`` (its defaults for what the form leaves out)."""
    return Judge.from_table(config) if isinstance(config, dict) else config


def budget(config: Config) -> float:
    """Seconds the judge may take within one grader call, all its ``t.llm`` and
    ``t.judge`` calls together: every attempt of one call timing out, with the longest
    wait between them. A grader whose module calls the judge gets this on top of its own
    limit (``grading.ceiling``), so a slow judge is a ``judge_error``, never a
    ``grader_timeout``; a grader asking many times shares it, so the ceiling holds."""
    judge = _judge(config)
    if judge is None:
        return 0.0
    return judge.timeout * (judge.retries + 1) + MAX_WAIT * judge.retries


def module_budget(config: Config, source: bytes) -> float:
    """Seconds a call of a grader from ``source`` may add to its own limit for the judge:
    one ``budget`` when the module asks the judge (``graderfile.asks_judge``; however many
    times: the calls share it, ``T.deadline``), else none."""
    from gitevals.graderfile import asks_judge

    return budget(config) if config is not None and asks_judge(source) else 0.0


def _request(judge: Judge, prompt: str) -> urllib.request.Request:
    import urllib.request

    body: JSONObject = {"model": judge.model, "temperature": 0,
                        "messages": [{"role": "user", "content": prompt}]}
    headers = {"Content-Type": "application/json"}
    env = judge.api_key_env
    if env:
        key = os.environ.get(env)
        if not key:
            raise JudgeError(f"the judge key variable {env} is not set: export it before the run")
        headers["Authorization"] = f"Bearer {key}"
    url = judge.base_url.rstrip("/") + "/chat/completions"
    return urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")


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


def llm(config: Config, prompt: str) -> str:
    """Ask the judge ``prompt`` (one user message) and return its text answer.

    HTTP 429, 5xx and timeouts are retried (``retries`` times, backoff doubling from
    1 s, or what ``Retry-After`` asks up to ``MAX_WAIT``); anything else fails at once."""
    return ask(config, prompt)[0]


class Answer(NamedTuple):
    """One judge reply: its text, the token counts it reported (None: none), and the
    model the API answered with (its ``model`` field; None when it named none)."""

    text: str
    tokens: tuple[int, int] | None
    model: str | None


def ask(config: Config, prompt: str, deadline: float | None = None) -> Answer:
    """``llm``'s answer with the token counts its reply reported (OpenAI-compatible
    ``usage.prompt_tokens``/``completion_tokens``), None when it reported none: the judge's
    cost is reported apart from the target's; and the model that answered, the evidence
    that the judge is the pinned snapshot (``calibration.runs``).

    ``deadline`` (``time.monotonic``): no attempt or wait runs past it (the judge's time
    within one grader call, ``T``); reaching it is a ``JudgeError``."""
    judge = _judge(config)
    if judge is None:
        raise JudgeError(NO_JUDGE)
    if not isinstance(prompt, str):
        raise JudgeError(f"t.llm takes a str prompt, not {type(prompt).__name__}")
    req = _request(judge, prompt)
    retries = judge.retries
    for attempt in range(retries + 1):
        data, retry = _attempt(req, _within(judge.timeout, deadline, judge))
        if retry is None:
            break
        wait = retry.wait if retry.wait is not None else _backoff() * 2 ** attempt
        if deadline is not None and _left(deadline) <= 0:
            raise JudgeError(f"{retry.message}: {_spent(judge)}")
        if attempt == retries or wait > MAX_WAIT:
            tried = f"{attempt + 1} attempt{'s' * (attempt > 0)}"
            why = (f"; it asked to wait {wait:g} s, over {MAX_WAIT:g} s"
                   if attempt < retries else "")
            raise JudgeError(f"{retry.message} (gave up after {tried}{why})")
        if deadline is not None and wait >= _left(deadline):
            raise JudgeError(f"{retry.message}; no time left to ask again: "
                             f"{_spent(judge)}")
        import time

        time.sleep(wait)
    try:
        payload: JSON = json.loads(data)
    except ValueError:
        raise JudgeError("judge reply is not JSON") from None
    return Answer(_content(payload), _usage(payload), _answered(payload))


#: Longest model name kept from a reply: a name is evidence, not a payload.
MAX_MODEL = 200


def _answered(payload: JSON) -> str | None:
    model = payload.get("model") if isinstance(payload, dict) else None
    return model if isinstance(model, str) and 0 < len(model) <= MAX_MODEL else None


def _left(deadline: float) -> float:
    import time

    return deadline - time.monotonic()


def _spent(judge: Judge) -> str:
    return (f"the judge's {budget(judge):g} s for this grader call are spent (timeout x "
            "(retries + 1) + 30 s x retries, shared by every judge call of one grader call)")


def _within(timeout: float, deadline: float | None, judge: Judge) -> float:
    """One attempt's timeout: the judge's, cut to what is left before ``deadline``."""
    if deadline is None:
        return timeout
    left = _left(deadline)
    if left <= 0:
        raise JudgeError(_spent(judge))
    return min(timeout, left)


def _usage(payload: JSON) -> tuple[int, int] | None:
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
    if not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**53
               for c in counts):
        return None
    p, c = counts
    assert isinstance(p, int) and isinstance(c, int)
    return p, c


class _Retry(NamedTuple):
    message: str
    wait: float | None  # what Retry-After asked, in seconds


def _attempt(req: urllib.request.Request, timeout: float) -> tuple[bytes, _Retry | None]:
    """One request: its body, or what to retry (raises ``JudgeError`` for the rest)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read(), None
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace").strip()
        message = f"judge answered HTTP {exc.code} at {req.full_url}: {detail}"
        if exc.code == 429 or exc.code >= 500:
            return b"", _Retry(message, _retry_after(exc.headers.get("Retry-After")))
        raise JudgeError(message) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            return b"", _Retry(f"the judge at {req.full_url} did not answer within "
                               f"{timeout:g} s", None)
        raise JudgeError(f"cannot reach the judge at {req.full_url}: {reason}") from None


def _retry_after(value: str | None) -> float | None:
    """``Retry-After``: delta seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    import time
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - time.time())


def _backoff() -> float:
    try:
        return float(os.environ.get("GITEVALS_JUDGE_BACKOFF") or BACKOFF)
    except ValueError:
        return BACKOFF


def verdict(answer: str) -> bool | None:
    """``PASS`` -> True, ``FAIL`` -> False (any case, surrounding whitespace allowed);
    anything else (``Maybe``, ``PASS.``, ``I think PASS``) -> None."""
    word = answer.strip().upper() if isinstance(answer, str) else ""
    return True if word == "PASS" else False if word == "FAIL" else None


def judge(config: Config, prompt: str, asker: Callable[[Config, str], str] = llm) -> bool:
    """Ask the judge ``prompt`` for exactly PASS or FAIL; True for PASS.

    An answer that is neither is asked again, up to ``retries`` more times (the judge's
    retry setting); then ``JudgeParseError`` names the last answer. It is never read as
    a FAIL: a judge that cannot say is an error, not a decision."""
    settings = _judge(config)
    asks = (settings.retries if settings is not None else RETRIES) + 1
    last = ""
    for _ in range(asks):
        last = asker(settings, prompt)
        said = verdict(last)
        if said is not None:
            return said
    shown = last if len(last) <= 80 else last[:79] + "…"
    raise JudgeParseError(f"the judge answered {shown!r}, not PASS or FAIL "
                          f"(asked {asks} times); ask for exactly one word, PASS or FAIL")


class T:
    """The ``t`` graders receive: ``t.llm(prompt) -> str``, ``t.judge(prompt) -> bool``.
    It counts the judge's calls and tokens since ``reset`` (one grader call's usage), and
    bounds the judge's time within it (``budget``). ``paused`` (the grader worker's own
    clock) is entered around each judge call: waiting for the judge is not the grader's
    own time."""

    def __init__(self, config: Config,
                 paused: Callable[[], AbstractContextManager[object]] | None = None) -> None:
        self._config = _judge(config)
        self._paused = paused
        self.reset()

    def reset(self) -> None:
        import time

        self.calls = self.reported = self.prompt_tokens = self.completion_tokens = 0
        self.models: list[str | None] = []  # the model each answered call named
        self.deadline = (time.monotonic() + budget(self._config)
                         if self._config is not None else None)

    def usage(self) -> JSONObject | None:
        """The judge usage since ``reset``, as recorded on a grader answer; None: no call."""
        if not self.calls:
            return None
        return {"calls": self.calls, "reported": self.reported,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "models": list(self.models)}

    def _ask(self, config: Config, prompt: str) -> str:
        from contextlib import nullcontext

        self.calls += 1
        with self._paused() if self._paused is not None else nullcontext():
            answer, tokens, model = ask(config, prompt, self.deadline)
        self.models.append(model)
        if tokens is not None:
            self.reported += 1
            self.prompt_tokens += tokens[0]
            self.completion_tokens += tokens[1]
        return answer

    def llm(self, prompt: str) -> str:
        """Ask the configured judge model; raises ``JudgeError`` when it cannot."""
        return self._ask(self._config, prompt)

    def judge(self, prompt: str) -> bool:
        """Ask the judge for exactly PASS or FAIL (temperature 0, the pinned model): True
        for PASS, False for FAIL; ``JudgeParseError`` for any other answer."""
        return judge(self._config, prompt, self._ask)
