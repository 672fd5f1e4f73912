"""The sandbox's tests run the CLI as root and as an unprivileged user (``users.py``)."""

from .users import me, who

__all__ = ["me", "who"]
