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
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitevals.run.artifact import ErrorRecord, Iteration

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


def parse_reward(fmt: str, data: bytes) -> tuple[Rewards, str | None]:
    """The rewards in the bytes of a reward file of format ``fmt``, or ``({}, why not)``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {}, "is not UTF-8"
    if fmt == "reward_json":
        return _json_rewards(text)
    word = text.strip()
    if not word:
        return {}, "is empty"
    try:
        value = float(word)
    except ValueError:
        return {}, f"holds {_shown(word)}, not a number"
    got = _number(value)
    if got is None:
        return {}, f"holds {word[:40]}, not a finite number from 0 to 1"
    return {"reward": got}, None


def _json_rewards(text: str) -> tuple[Rewards, str | None]:
    try:
        doc = json.loads(text, parse_constant=lambda c: c)
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


def read_reward(logs: str, fmt: str) -> tuple[Rewards, str | None]:
    """The rewards the verifier left in the host directory ``logs``, or ``({}, why not)``.

    The directory was writable by the verifier: the file is opened without following a
    link and read only when it is a regular file, at most ``MAX_REWARD_BYTES``.
    """
    name = REWARD_FILES.get(fmt, "reward.txt")
    path = os.path.join(logs, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        other = next((n for f, n in REWARD_FILES.items() if f != fmt
                      and os.path.lexists(os.path.join(logs, n))), None)
        hint = (f" (it wrote {other}: set [verifier] reward_format to match)"
                if other else "")
        return {}, f"the verifier wrote no /logs/verifier/{name}{hint}"
    except OSError as exc:
        return {}, f"/logs/verifier/{name} cannot be read: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}, f"/logs/verifier/{name} is not a regular file"
        data = os.read(fd, MAX_REWARD_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_REWARD_BYTES:
        return {}, f"/logs/verifier/{name} is over {MAX_REWARD_BYTES} bytes"
    rewards, why = parse_reward(fmt, data)
    return rewards, None if why is None else f"/logs/verifier/{name} {why}"


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
