"""JSON values as types: what ``json.loads`` and ``yamlsafe.parse`` return.

A module of its own (typing only) so that lint and yamlsafe can name these
types without importing the run subsystem at startup.
"""

from __future__ import annotations

from typing import TypeAlias

#: Any JSON value: what targets and graders send is kept as they sent it.
JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"
