"""Environment variables given to the target (``run --target-env``, an experiment lane's
``env:``): parsed, checked, and recorded in the artifact without leaking secrets.

A value whose name looks like a credential (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, any
case) is recorded as the SHA-256 of its value: a later run can be shown to have used
the same one, and the artifact (a git note others fetch) never carries it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from gitevals.run.artifact import TargetEnvValue as Recorded

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_PARTS = ("KEY", "TOKEN", "SECRET")


def parse(text: str, flag: str = "--target-env") -> tuple[str, str]:
    """``KEY=VALUE`` -> ``(KEY, VALUE)``; a bad name is a ``UsageError`` saying the form."""
    from gitevals.errors import UsageError

    name, sep, value = text.partition("=")
    if not sep or not _NAME.match(name):
        raise UsageError(f"{flag} {text!r}: expected NAME=VALUE with NAME a variable name "
                         "(letters, digits, _; not starting with a digit)")
    if "\0" in value:
        raise UsageError(f"{flag} {name}: a value cannot hold a NUL character")
    return name, value


def collect(items: list[str] | None, flag: str = "--target-env") -> dict[str, str]:
    """Every ``KEY=VALUE`` of ``items``, sorted by name; a name given twice is refused."""
    from gitevals.errors import UsageError

    out: dict[str, str] = {}
    for item in items or []:
        name, value = parse(item, flag)
        if name in out:
            raise UsageError(f"{flag} {name} is given twice: give each variable once")
        out[name] = value
    return dict(sorted(out.items()))


def is_secret(name: str) -> bool:
    """True when ``name`` looks like a credential's, so only its hash is recorded."""
    upper = name.upper()
    return any(part in upper for part in _SECRET_PARTS)


def record(env: Mapping[str, str]) -> dict[str, Recorded]:
    """``env`` as an artifact keeps it: values, and hashes of the secrets' values."""
    out: dict[str, Recorded] = {}
    for name in sorted(env):
        value = env[name]
        if is_secret(name):
            out[name] = {"sha256": hashlib.sha256(value.encode("utf-8", "surrogatepass"))
                         .hexdigest()}
        else:
            out[name] = {"value": value}
    return out


def shown(recorded: Mapping[str, Recorded]) -> str:
    """``MODEL=base-7b API_KEY=sha256:1a2b3c4d…`` for reports (not yet escaped)."""
    parts = []
    for name, rec in sorted(recorded.items()):
        if "value" in rec:
            parts.append(f"{name}={rec['value']}")
        else:
            parts.append(f"{name}=sha256:{rec.get('sha256', '')[:12]}…")
    return " ".join(parts)
