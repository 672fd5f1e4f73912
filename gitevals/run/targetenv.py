"""Environment variables given to the target (``run --target-env``, an experiment lane's
``env:``): parsed, checked, and recorded in the artifact without leaking secrets.

Every value is recorded as the SHA-256 of its value unless its name is marked public
(``--target-env-public NAME``): a value such as ``DB_PASSWORD`` or a URL with a
password in it has no tell-tale name, and the artifact is a git note others fetch. The
hash still shows that two runs (two lanes of an experiment) used the same value or not.
A name that looks like a credential's (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, any case)
cannot be marked public.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping

from gitevals.run.artifact import TargetEnvValue as Recorded

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_UTF8 = re.compile("[\ud800-\udfff]")
_SECRET_PARTS = ("KEY", "TOKEN", "SECRET")


def parse(text: str, flag: str = "--target-env") -> tuple[str, str]:
    """``KEY=VALUE`` -> ``(KEY, VALUE)``; a bad name is a ``UsageError`` saying the form."""
    from gitevals.errors import UsageError

    name, sep, value = text.partition("=")
    if not sep or not _NAME.fullmatch(name):
        raise UsageError(f"{flag} {text!r}: expected NAME=VALUE with NAME a variable "
                         "name (letters, digits, _; not starting with a digit)")
    if "\0" in value:
        raise UsageError(f"{flag} {name}: a value cannot hold a NUL character")
    if _NOT_UTF8.search(value):  # argv bytes that are not UTF-8 (surrogateescape)
        raise UsageError(f"{flag} {name}: the value is not valid UTF-8, and the artifact "
                         "records text; give it in UTF-8")
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
    """True when ``name`` looks like a credential's: it can never be marked public."""
    upper = name.upper()
    return any(part in upper for part in _SECRET_PARTS)


def public_names(names: list[str] | None, given: Collection[str],
                 flag: str = "--target-env-public") -> frozenset[str]:
    """The names ``--target-env-public`` marks, each checked: one of the variables
    ``given``, and not a credential's name."""
    from gitevals.errors import UsageError

    out = set()
    for name in names or []:
        if name not in given:
            known = ", ".join(sorted(given)) or "none"
            raise UsageError(f"{flag} {name!r}: no variable of that name is given to the "
                             f"target (given: {known}); name one of them")
        if is_secret(name):
            raise UsageError(f"{flag} {name}: a name holding KEY, TOKEN or SECRET is always "
                             f"recorded as a hash; drop it from {flag}")
        out.add(name)
    return frozenset(out)


def record(env: Mapping[str, str], public: Collection[str] = ()) -> dict[str, Recorded]:
    """``env`` as an artifact keeps it: the SHA-256 of every value, the value itself only
    for the names marked ``public``."""
    out: dict[str, Recorded] = {}
    for name in sorted(env):
        value = env[name]
        if name in public and not is_secret(name):
            out[name] = {"value": value}
        else:
            out[name] = {"sha256": hashlib.sha256(value.encode("utf-8", "surrogatepass"))
                         .hexdigest()}
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
