"""gitevals.git.pushes: pre-push lines -> the commits a publish check covers (pure, no git)."""

from __future__ import annotations

import pytest

from gitevals.errors import UsageError
from gitevals.git.pushes import (
    Publication,
    PushCheck,
    PushedRef,
    expand,
    from_pre_commit_env,
    is_zero,
    parse_pre_push,
    plan_push,
)

Z = "0" * 40
A, B, C, TAG = "a" * 40, "b" * 40, "c" * 40, "7" * 40
# The fake object store: the annotated tag TAG peels to commit A; "e"*40 is a tree.
PEEL = {A: A, B: B, C: C, TAG: A}


def peel(sha: str) -> str | None:
    return PEEL.get(sha)


def line(local: str, lsha: str, remote: str, rsha: str) -> str:
    return f"{local} {lsha} {remote} {rsha}"


def test_parse_keeps_every_line_in_order() -> None:
    text = "\n".join([
        line("refs/heads/main", A, "refs/heads/main", Z),
        line("refs/tags/v1", TAG, "refs/tags/v1", Z),
        "",
    ])
    assert parse_pre_push(text) == [
        PushedRef("refs/heads/main", A, "refs/heads/main", Z),
        PushedRef("refs/tags/v1", TAG, "refs/tags/v1", Z),
    ]


def test_parse_local_ref_with_spaces() -> None:
    # git passes the source as the user typed it; rsplit keeps it whole.
    (ref,) = parse_pre_push(line("HEAD~1 x", A, "refs/heads/x", Z))
    assert ref.local_ref == "HEAD~1 x"


@pytest.mark.parametrize("text", [
    "refs/heads/main",
    f"refs/heads/main {A} refs/heads/main",
    f"refs/heads/main nothex refs/heads/main {Z}",
    f"refs/heads/main {A} refs/heads/main {A[:12]}",
], ids=["one-field", "three-fields", "bad-local-sha", "short-remote-sha"])
def test_parse_refuses_malformed_line_naming_it(text: str) -> None:
    with pytest.raises(UsageError, match=r"^<stdin>:1:1: not a pre-push line"):
        parse_pre_push(text)


def test_sha256_zero_is_zero() -> None:
    assert is_zero("0" * 64) and is_zero(Z) and not is_zero(A) and not is_zero("")


def test_every_ref_is_checked_even_when_remote_has_the_commit() -> None:
    # A release tag on a commit the remote already has: pre-commit would skip it.
    pushed = parse_pre_push("\n".join([
        line("refs/heads/main", B, "refs/heads/main", A),
        line("refs/tags/v1", TAG, "refs/tags/v1", Z),
        line("refs/tags/v0", C, "refs/tags/v0", Z),
    ]))
    plan = plan_push(pushed, peel)
    assert plan.publications == (
        Publication(B, ("refs/heads/main",)),
        Publication(A, ("refs/tags/v1",)),
        Publication(C, ("refs/tags/v0",)),
    )


def test_same_commit_checked_once_naming_every_ref() -> None:
    pushed = parse_pre_push("\n".join([
        line("refs/heads/main", A, "refs/heads/main", Z),
        line("refs/tags/v1", TAG, "refs/tags/v1", Z),
        line("refs/heads/release", A, "refs/heads/release", Z),
    ]))
    assert plan_push(pushed, peel).publications == (
        Publication(A, ("refs/heads/main", "refs/tags/v1", "refs/heads/release")),
    )


def test_deletion_passes_without_check() -> None:
    pushed = parse_pre_push(line("(delete)", Z, "refs/tags/v1", A))
    plan = plan_push(pushed, peel)
    assert plan.publications == ()
    assert plan.passed == ("refs/tags/v1: deleted, nothing published",)


def test_tag_on_non_commit_passes_with_note() -> None:
    pushed = parse_pre_push(line("refs/tags/t", "e" * 40, "refs/tags/t", Z))
    plan = plan_push(pushed, peel)
    assert plan.publications == ()
    assert plan.passed == ("refs/tags/t: eeeeeeeeeeee is not a commit, nothing to check",)


def test_label_shows_rename() -> None:
    (ref,) = parse_pre_push(line("HEAD", A, "refs/heads/feature", Z))
    assert ref.label == "HEAD -> refs/heads/feature"


@pytest.mark.parametrize(("env", "expected"), [
    ({}, []),
    ({"PRE_COMMIT_FROM_REF": B, "PRE_COMMIT_TO_REF": A,
      "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main", "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main"},
     [PushedRef("refs/heads/main", A, "refs/heads/main", B)]),
    # A push that holds the root commit: pre-commit exports only the branch names.
    ({"PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main", "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/x"},
     [PushedRef("refs/heads/main", "refs/heads/main", "refs/heads/x", "")]),
    # `pre-commit run --from-ref X --to-ref Y` outside a push.
    ({"PRE_COMMIT_FROM_REF": "HEAD~1", "PRE_COMMIT_TO_REF": "HEAD"},
     [PushedRef("HEAD", "HEAD", "HEAD", "HEAD~1")]),
], ids=["none", "push", "root-push", "manual-range"])
def test_from_pre_commit_env(env: dict[str, str], expected: list[PushedRef]) -> None:
    assert from_pre_commit_env(env) == expected


def test_expand_checks_each_new_commit_once() -> None:
    plan = PushCheck((Publication(B, ("refs/heads/main",)), Publication(C, ("refs/tags/v2",))), ())
    history = {B: [A, B], C: [A, C]}
    assert expand(plan, lambda t: history[t.commit]).publications == (
        Publication(A, ("refs/heads/main", "refs/tags/v2")),
        Publication(B, ("refs/heads/main",)),
        Publication(C, ("refs/tags/v2",)),
    )
