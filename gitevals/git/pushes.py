"""Which revisions a publish check covers: pure logic over what git hands a hook.

A pre-push hook gets one stdin line per pushed ref::

    <local ref> <local sha> <remote ref> <remote sha>

Every line is a revision being published, and every one is checked: a release tag
pushed onto a commit the remote already has is exactly the case that must not slip
through (pre-commit's own pre-push skips it, and only looks at the first line).
Annotated tags are peeled to their commit; deletions publish nothing and pass. Each
distinct commit is checked once, and the result names every ref it covers.

Nothing here touches git: peeling is a function the caller passes in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gitevals.errors import UsageError
from gitevals.git.repo import NOTES_REF


def is_zero(sha: str) -> bool:
    """git's "no object" SHA (40 or 64 zeros): a deletion or a ref the remote lacks."""
    return bool(sha) and set(sha) == {"0"}


@dataclass(frozen=True)
class PushedRef:
    """One line of pre-push input."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @property
    def deletion(self) -> bool:
        return is_zero(self.local_sha)

    @property
    def label(self) -> str:
        """The ref as published; ``local -> remote`` when the names differ."""
        if self.local_ref in (self.remote_ref, "(delete)") or not self.local_ref:
            return self.remote_ref
        return f"{self.local_ref} -> {self.remote_ref}"


#: The characters of a malformed pre-push line an error shows.
_SHOWN = 80


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def parse_pre_push(text: str) -> list[PushedRef]:
    """git's pre-push stdin -> refs. A malformed line is a ``UsageError`` naming it."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        # rsplit: the local ref is whatever the user typed and may hold spaces.
        parts = line.rsplit(maxsplit=3)
        if len(parts) != 4 or not (_is_sha(parts[1]) and _is_sha(parts[3])):
            shown = line.strip()
            # a line no git would give may be any size: named by its start
            said = (f"{shown!r}" if len(shown) <= _SHOWN else
                    f"{shown[:_SHOWN]!r} ({len(shown)} characters)")
            raise UsageError(
                f"<stdin>:{n}:1: not a pre-push line: {said}; git gives "
                "'<local ref> <local sha> <remote ref> <remote sha>' (run from a pre-push hook)"
            )
        out.append(PushedRef(*parts))
    return out


def from_pre_commit_env(env: Mapping[str, str]) -> list[PushedRef]:
    """The one ref the pre-commit framework tells a pre-push stage hook about.

    pre-commit consumes git's stdin itself and exports the first pushed ref it
    cares about: ``PRE_COMMIT_TO_REF`` (the local SHA) and ``PRE_COMMIT_FROM_REF``,
    or only ``PRE_COMMIT_LOCAL_BRANCH`` when the push holds the root commit.
    """
    to_ref = env.get("PRE_COMMIT_TO_REF") or env.get("PRE_COMMIT_LOCAL_BRANCH")
    if not to_ref:
        return []
    local = env.get("PRE_COMMIT_LOCAL_BRANCH") or to_ref
    remote = env.get("PRE_COMMIT_REMOTE_BRANCH") or local
    return [PushedRef(local, to_ref, remote, env.get("PRE_COMMIT_FROM_REF", ""))]


@dataclass(frozen=True)
class Publication:
    """One commit to check and the refs (or revisions) that publish it."""

    commit: str
    refs: tuple[str, ...]


@dataclass(frozen=True)
class PushCheck:
    """What a publish check does: ``publications`` to lint, ``passed`` lines needing nothing."""

    publications: tuple[Publication, ...]
    passed: tuple[str, ...]


def group(pairs: Iterable[tuple[str, str]]) -> tuple[Publication, ...]:
    """``(commit, label)`` pairs -> one ``Publication`` per commit, in first-seen order."""
    refs: dict[str, list[str]] = {}
    for commit, label in pairs:
        labels = refs.setdefault(commit, [])
        if label not in labels:
            labels.append(label)
    return tuple(Publication(c, tuple(r)) for c, r in refs.items())


def plan_push(pushed: Iterable[PushedRef], peel: Callable[[str], str | None],
              is_notes: Callable[[str], bool] = lambda sha: False) -> PushCheck:
    """Pushed refs -> the commits to check. ``peel(sha)`` gives a commit SHA or None.

    Only an update of ``refs/notes/gitevals`` whose object ``is_notes`` (a commit of a
    notes tree) is exempt: a branch pushed to ``refs/notes/x`` is checked as what it is.
    """
    pairs: list[tuple[str, str]] = []
    passed: list[str] = []
    for ref in pushed:
        if ref.deletion:
            passed.append(f"{ref.remote_ref}: deleted, nothing published")
            continue
        if ref.remote_ref == NOTES_REF and is_notes(ref.local_sha):
            # `git push origin refs/notes/gitevals` shares run artifacts: no harness revision.
            passed.append(f"{ref.label}: git notes, no eval tree to check")
            continue
        commit = peel(ref.local_sha)
        if commit is None:
            passed.append(f"{ref.label}: {ref.local_sha[:12]} is not a commit, nothing to check")
            continue
        pairs.append((commit, ref.label))
    return PushCheck(group(pairs), tuple(passed))


def expand(plan: PushCheck, history: Callable[[Publication], list[str]]) -> PushCheck:
    """Each target -> every commit ``history`` lists for it (``--each-commit``).

    A commit reached from several refs is still checked once, naming them all.
    """
    pairs = [(c, label) for t in plan.publications for c in history(t) for label in t.refs]
    return PushCheck(group(pairs), plan.passed)
