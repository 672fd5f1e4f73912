"""The one exception root. ``cli.main`` maps these to a single line and an exit code."""

from __future__ import annotations


class GitevalsError(Exception):
    """An error the user can act on: printed as one line, exit code ``exit_code``."""

    exit_code = 2


class UsageError(GitevalsError):
    """The command line or the environment it names is wrong (bad flag value, no repo)."""


class RevisionError(GitevalsError):
    """A revision that git cannot resolve to a commit."""


class ArtifactError(GitevalsError):
    """A run artifact that cannot be read or does not match its schema."""


class GitError(GitevalsError):
    """git could not do what was asked (a locked ref, a damaged object): the message
    names the action and git's reason."""
