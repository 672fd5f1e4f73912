"""A task verifier's reward, and what it decides (pure, but ``read_reward``).

The verifier writes ``/logs/verifier/reward.txt`` (one number) or ``reward.json``
(``reward_format``). A JSON reward is ``{"reward": x}``, or -- as Harbor's verifiers
write -- several named rewards and no ``"reward"`` key. Every number is recorded; what
decides:

- ``"reward"`` when the object has that key (the other names are recorded only);
- otherwise **every** named reward must reach the threshold: the deciding reward is
  the smallest of them.

Each reward must be a finite number from 0 to 1. Anything else -- no file, a file
that is not a regular file, not UTF-8, not a number, NaN, infinite, out of range,
empty JSON -- is a *grading failure*: the verifier is run once more, and a second
failure is an error of the trial, never a verdict.

A reward at or above ``pass_threshold`` is **satisfied**; below it the iteration
**needs_revision**: the target gets ``revision_message`` as its next user turn and
the verifier runs again, until ``max_iterations`` are spent
(**max_iterations_reached**).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.jsontypes import JSON
    from gitevals.run.artifact import ErrorRecord, Iteration
    from gitevals.tasks.sandbox import Pending

#: The file each ``reward_format`` names, in ``/logs/verifier/``.
REWARD_FILES = {"reward_text": "reward.txt", "reward_json": "reward.json"}
#: A reward file longer than this is not a reward.
MAX_REWARD_BYTES = 65536
#: Characters of the verifier's output quoted in a revision message.
MESSAGE_TAIL = 2000

SATISFIED = "satisfied"
NEEDS_REVISION = "needs_revision"
MAX_ITERATIONS_REACHED = "max_iterations_reached"
ERROR = "error"

Rewards = dict[str, float]


def _number(value: object) -> float | None:
    """``value`` as a reward (a finite number in 0..1), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) and 0.0 <= x <= 1.0 else None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


#: A reward as text: ASCII decimal digits with an optional point and an optional
#: exponent (``1``, ``0.75``, ``.5``, ``1e0``, ``7.5E-1``), nothing else: no sign, no
#: ``_`` (``0_1``), no other script's digits (``١``), no ``inf``/``nan``/hex.
_DECIMAL = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: What may surround the number: ASCII blanks and line ends.
_BLANKS = " \t\r\n"


def parse_reward(fmt: str, data: bytes) -> tuple[Rewards, str | None]:
    """The rewards in the bytes of a reward file of format ``fmt``, or ``({}, why not)``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}, "is not UTF-8"
    if fmt == "reward_json":
        return _json_rewards(text)
    word = text.strip(_BLANKS)
    if not word:
        return {}, "is empty"
    if not _DECIMAL.fullmatch(word):
        return {}, (f"holds {_shown(word)}, not a decimal number (ASCII digits, an optional "
                    "point and exponent, as 0.75 or 1e0)")
    got = _number(float(word))
    if got is None:
        return {}, f"holds {word[:40]}, not a finite number from 0 to 1"
    return {"reward": got}, None


class _Twice(ValueError):
    """A JSON object names one key twice."""


def _unique(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for k, v in pairs:
        if k in out:
            raise _Twice(k)
        out[k] = v
    return out


def _json_rewards(text: str) -> tuple[Rewards, str | None]:
    try:
        doc = json.loads(text, parse_constant=lambda c: c, object_pairs_hook=_unique)
    except _Twice as exc:
        return {}, (f"names {_shown(exc.args[0])} twice: which one counts would be a guess; "
                    "write each reward once")
    except (ValueError, RecursionError):
        return {}, "is not JSON"
    if not isinstance(doc, dict) or not doc:
        return {}, 'is not a JSON object of rewards such as {"reward": 1.0}'
    out: Rewards = {}
    for name, value in sorted(doc.items()):
        got = _number(value)
        if got is None:
            return {}, f"has {name!r}: {_shown(value)}, not a finite number from 0 to 1"
        out[name] = got
    return out, None


def deciding(rewards: Rewards) -> float | None:
    """The reward that decides: ``"reward"`` when present, else the smallest named one."""
    if not rewards:
        return None
    return rewards["reward"] if "reward" in rewards else min(rewards.values())


def satisfied(rewards: Rewards, threshold: float) -> bool:
    """Whether ``rewards`` reach ``threshold`` (see ``deciding``)."""
    reward = deciding(rewards)
    return reward is not None and reward >= threshold


def read_reward(logs: str | int, fmt: str) -> tuple[Rewards, str | None]:
    """The rewards the verifier left in its logs directory (a host path, or a descriptor
    of it: a sandbox's own ``/logs/verifier``), or ``({}, why not)``.

    The directory was writable by the verifier: the file is opened without following a
    link and read only when it is a regular file, at most ``MAX_REWARD_BYTES``.
    """
    name = REWARD_FILES.get(fmt, "reward.txt")
    where = f"/logs/verifier/{name}"
    d = logs if isinstance(logs, int) else os.open(logs, os.O_PATH | os.O_DIRECTORY)
    try:
        try:
            st = os.stat(name, dir_fd=d, follow_symlinks=False)
        except FileNotFoundError:
            other = next((n for f, n in REWARD_FILES.items() if f != fmt
                          and _exists(n, d)), None)
            hint = (f" (it wrote {other}: set [verifier] reward_format to match)"
                    if other else "")
            return {}, f"the verifier wrote no {where}{hint}"
        if stat.S_ISLNK(st.st_mode):
            return {}, (f"{where} is a symbolic link, not a regular file: gitevals follows "
                        "no link out of the verifier's logs; write the reward into the file "
                        "itself")
        if not stat.S_ISREG(st.st_mode):
            return {}, f"{where} is not a regular file"
        data = _read(name, d)
    except OSError as exc:
        return {}, f"{where} cannot be read: {exc.strerror or exc}"
    finally:
        if not isinstance(logs, int):
            os.close(d)
    if data is None:
        return {}, f"{where} is not a regular file"
    if len(data) > MAX_REWARD_BYTES:
        return {}, f"{where} is over {MAX_REWARD_BYTES} bytes"
    rewards, why = parse_reward(fmt, data)
    return rewards, None if why is None else f"{where} {why}"


def pending_rewards(pending: Pending, fmt: str) -> tuple[dict[str, float], str | None]:
    """The rewards of a call whose verifier ran, read from its own logs (by descriptor)."""
    try:
        logs = pending.open_logs()
    except OSError as exc:
        return {}, f"/logs/verifier cannot be read: {exc.strerror or exc}"
    try:
        return read_reward(logs, fmt)
    finally:
        os.close(logs)


def _exists(name: str, d: int) -> bool:
    try:
        os.stat(name, dir_fd=d, follow_symlinks=False)
    except OSError:
        return False
    return True


def _read(name: str, d: int) -> bytes | None:
    """At most ``MAX_REWARD_BYTES + 1`` bytes of regular file ``name`` in directory ``d``
    (None: not a regular file once opened)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=d)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_REWARD_BYTES + 1)
    finally:
        os.close(fd)


def revision_message(reward: float, threshold: float, iteration: int, budget: int,
                     tail: str) -> str:
    """The user turn that asks the target to revise its work (iteration counts from 0)."""
    quoted = tail[-MESSAGE_TAIL:].rstrip("\n")
    return (f"The verifier scored your work {reward:g}; this task needs {threshold:g} or "
            f"more. This is attempt {iteration + 2} of {budget}. The end of the "
            f"verifier's output:\n\n{quoted}\n\nRevise the work in the workspace and "
            "answer again.")


def judge(iterations: Sequence[Iteration], threshold: float, budget: int,
          failed: bool) -> tuple[str, float | None]:
    """The state of a trial and its final reward, from its stored iterations alone.

    The first iteration whose rewards reach ``threshold`` makes it satisfied. Else a
    trial that ended in an error is ``error``; one that spent ``budget`` iterations
    is max_iterations_reached; one that stopped earlier (its run used a lower
    threshold) still needs_revision: only running it again can say more.
    """
    for it in iterations:
        if it["error"] is None and satisfied(it["rewards"], threshold):
            return SATISFIED, it["reward"]
    rewarded = [it["reward"] for it in iterations if it["reward"] is not None]
    final = rewarded[-1] if rewarded else None
    if failed:
        return ERROR, final
    if len(iterations) >= budget:
        return MAX_ITERATIONS_REACHED, final
    return NEEDS_REVISION, final


def summary(state: str, reward: float | None, threshold: float, used: int,
            ended: ErrorRecord | None = None) -> str:
    """One line on a trial's outcome, as its assertion message. ``ended``: the error
    that ended the trial when no verifier's did (the target crashed, say)."""
    got = "no reward" if reward is None else f"reward {reward:g}"
    cmp = ">=" if state == SATISFIED else "<"
    tries = f"{used} iteration{'s' * (used != 1)}"
    if state == ERROR and ended is not None:
        why = f"{ended['kind']}: {' '.join(ended['message'].split())}"
        return (f"no iteration ran: {why}" if not used
                else f"{got} after {tries}, then {why}")
    if state == ERROR:
        return f"{got} after {tries}: the verifier's reward could not be read"
    return f"{state}: {got} {cmp} pass_threshold {threshold:g} after {tries}"
