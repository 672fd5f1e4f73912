"""Reporters for a compiled task definition (``gitevals task compile``): text and JSON.

Both are terminal-safe: every string from the task goes through ``report.text``
(``quoted`` for values, ``block`` for the instruction and the Dockerfile, ``json_safe``
for the document), so an ESC sequence, a U+2028 or a U+202E in a task reaches the
screen as ``\\u001b``, ``\\u2028``, ``\\u202e``; ``--json`` parses back to the exact values.
"""

from __future__ import annotations

from gitevals.jsontypes import JSON, JSONObject
from gitevals.text import block, json_safe, quoted


def as_json(doc: JSONObject) -> str:
    return json_safe(doc) + "\n"


def _value(value: JSON) -> str:
    """A scalar or list as it would be written: strings quoted, lists of them bracketed."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quoted(k)}: {_value(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "(not set)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _seconds(value: JSON) -> str:
    return f"{value:g}s" if isinstance(value, int | float) else "(not set)"


def _block(title: str, text: str) -> list[str]:
    lines = block(text)
    return [f"{title} ({len(text):,} characters, {len(lines)} lines):",
            *(f"  | {line}" for line in lines)]


def text(doc: JSONObject) -> str:
    """The compiled definition for a person: every field, values quoted, blocks framed."""
    v = _obj(doc.get("verifier"))
    env = _obj(doc.get("environment"))
    t = _obj(doc.get("timeouts"))
    rows = [
        ("task", f"{_value(doc.get('name'))} at {_value(doc.get('path'))}"),
        ("declared name", _value(doc.get("declared_name"))),
        ("iteration budget", f"{doc.get('max_iterations')} (max_iterations)"),
        ("pass threshold", f"{doc.get('pass_threshold')} (a reward at or above it "
                           "satisfies the task)"),
        ("reward", f"{_value(v.get('reward_format'))} in {_value(v.get('reward_file'))}"
                   + (" (not set in task.toml: the default)"
                      if v.get("reward_format_default") else "")),
        ("verifier argv", f"{_value(v.get('argv'))} ({len(_list(v.get('argv')))} members)"),
        ("verifier env", _value(v.get("env"))),
        ("timeouts", f"agent {_seconds(t.get('agent_sec'))}, verifier "
                     f"{_seconds(t.get('verifier_sec'))}, build {_seconds(t.get('build_sec'))}"),
    ]
    out = [f"{k:<18}{val}" for k, val in rows]
    if v.get("note"):
        out.append(f"{'':<18}note: {_value(v.get('note'))[1:-1]}")
    out += ["", *_block(f"description ({_value(doc.get('instruction_file'))})",
                        str(doc.get("description", "")))]
    metadata = doc.get("metadata")
    if metadata:
        out.append(f"{'metadata':<18}{_value(metadata)}")
    out += ["", *_environment(env)]
    unused = _list(doc.get("unused_keys"))
    if unused:
        out += ["", f"not used by gitevals: {', '.join(_value(k)[1:-1] for k in unused)}"]
    return "\n".join(out) + "\n"


def _environment(env: JSONObject) -> list[str]:
    out = ["environment:"]
    for key in ("image", "workdir", "cpus", "memory_mb", "storage_mb", "allow_internet"):
        out.append(f"  {key:<16}{_value(env.get(key))}")
    out.append("  realized:")
    out += [f"    - {line}" for line in map(str, _list(env.get("realized")))]
    enforced = _list(env.get("not_enforced"))
    if enforced:
        out.append(f"  recorded, not enforced: {', '.join(map(str, enforced))}")
    for g in _list(env.get("gaps")):
        gap = _obj(g)
        out.append(f"  gap {gap.get('kind')}: {_value(gap.get('detail'))[1:-1]}")
    dockerfile = env.get("dockerfile")
    if isinstance(dockerfile, str):
        out += _block("  Dockerfile (environment/Dockerfile, in full)", dockerfile)
    return out


def _obj(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []
