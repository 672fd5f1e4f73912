"""The sandbox's tests run the CLI as root and as an unprivileged user (``users.py``)."""

from tests.support.users import me, who

__all__ = ["me", "who"]
