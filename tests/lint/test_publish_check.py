"""``gitevals publish-check``: revisions read from git objects alone, every pushed ref checked."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli

Z = "0" * 40
GOOD = """\
defaults: {trials: 2}
scenarios:
  - id: greets
    user: Hello
    expect:
      - final_answer_contains: Hello
"""
# Line 2 holds the refused key: every finding below points there.
BAD = """\
scenarios:
  - suite: nightly
    id: greets
    user: Hello
    expect:
      - final_answer_contains: Hello
"""
BAD_FINDING = re.compile(r"^  evals/cases/c\.yaml:2:5: GE\d+ .*suite", re.M)


def commit_case(repo: Repo, text: str, msg: str) -> str:
    return repo.commit({"evals/cases/c.yaml": text}, msg=msg)


def pre_push(repo: Repo, stdin: str, *extra: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return run_cli("publish-check", "--pre-push", "origin", "/remote.git", *extra,
                   cwd=repo.path, input=stdin, env=env)


def test_bad_commit_refused_even_when_working_tree_is_fixed(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    repo.write({"evals/cases/c.yaml": GOOD})
    repo.git("add", "-A")  # fixed and staged, but not committed
    assert run_cli("lint", cwd=repo.path).code == 0  # the working tree is fine
    r = run_cli("publish-check", cwd=repo.path)
    assert r.code == 1, r.err
    assert r.out.startswith(f"refused: HEAD at {bad}: 1 error\n")
    assert BAD_FINDING.search(r.out)
    assert "the commit is what is published" in r.out


def test_good_commit_passes(repo: Repo) -> None:
    good = commit_case(repo, GOOD, "good")
    r = run_cli("publish-check", cwd=repo.path)
    assert r.code == 0, r.out + r.err
    assert r.out == (f"ok: HEAD at {good} (1 eval files)\n"
                     "publish check: 1 revision(s) ok\n")


def test_named_revisions_each_checked_once(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    good = commit_case(repo, GOOD, "good")
    repo.git("tag", "v1")
    r = run_cli("publish-check", "HEAD", "v1", "HEAD~1", cwd=repo.path)
    assert r.code == 1
    assert f"ok: HEAD, v1 at {good}" in r.out
    assert f"refused: HEAD~1 at {bad}: 1 error" in r.out
    assert "publish check: 1 of 2 revision(s) refused" in r.out


def test_unknown_revision_is_one_line_exit_2(repo: Repo) -> None:
    commit_case(repo, GOOD, "good")
    r = run_cli("publish-check", "HEAD", "no-such-tag", cwd=repo.path)
    assert r.code == 2
    assert r.out == ""
    assert r.err.strip().splitlines() == [
        "gitevals: error: unknown revision 'no-such-tag': name a commit, branch or tag of "
        "this repository (`git log --oneline` lists commits)"
    ]


def test_pre_push_refuses_naming_the_bad_ref_only(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    good = commit_case(repo, GOOD, "good")
    stdin = (f"refs/heads/main {good} refs/heads/main {Z}\n"
             f"refs/heads/old {bad} refs/heads/old {Z}\n")
    r = pre_push(repo, stdin)
    assert r.code == 1
    assert f"ok: refs/heads/main at {good}" in r.out
    assert f"refused: refs/heads/old at {bad}: 1 error" in r.out
    assert BAD_FINDING.search(r.out)


def test_pre_push_peels_annotated_tags(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    commit_case(repo, GOOD, "good")
    repo.git("tag", "-a", "-m", "release", "v1", bad)
    tag_object = repo.git("rev-parse", "v1")
    assert tag_object != bad
    r = pre_push(repo, f"refs/tags/v1 {tag_object} refs/tags/v1 {Z}\n")
    assert r.code == 1
    assert f"refused: refs/tags/v1 at {bad}: 1 error" in r.out


def test_pre_push_same_commit_checked_once_naming_its_refs(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    repo.git("tag", "-a", "-m", "release", "v1")
    tag_object = repo.git("rev-parse", "v1")
    stdin = (f"refs/heads/main {bad} refs/heads/main {Z}\n"
             f"refs/tags/v1 {tag_object} refs/tags/v1 {Z}\n")
    r = pre_push(repo, stdin)
    assert r.code == 1
    assert [ln for ln in r.out.splitlines() if ln.startswith("refused:")] == [
        f"refused: refs/heads/main, refs/tags/v1 at {bad}: 1 error"]


def test_pre_push_deletion_passes(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    r = pre_push(repo, f"(delete) {Z} refs/tags/v0 {bad}\n")
    assert r.code == 0, r.out
    assert r.out == ("ok: refs/tags/v0: deleted, nothing published\n"
                     "publish check: nothing to check\n")


def test_pre_push_malformed_stdin_is_a_usage_error(repo: Repo) -> None:
    commit_case(repo, GOOD, "good")
    r = pre_push(repo, "refs/heads/main\n")
    assert r.code == 2
    assert r.err.startswith("gitevals: error: <stdin>:1:1: not a pre-push line: 'refs/heads/main'")


def test_a_huge_malformed_pre_push_line_is_shown_clipped(repo: Repo) -> None:
    """A megabyte on stdin (not git's) is named by its start, not echoed whole as the
    error 'line'."""
    commit_case(repo, GOOD, "good")
    r = pre_push(repo, "x" * 1_000_000 + "\n")
    assert r.code == 2
    assert r.err == ("gitevals: error: <stdin>:1:1: not a pre-push line: '" + "x" * 80
                     + "' (1000000 characters); git gives '<local ref> <local sha> "
                     "<remote ref> <remote sha>' (run from a pre-push hook)\n")


def test_pre_push_too_many_arguments(repo: Repo) -> None:
    r = pre_push(repo, "", "HEAD")
    assert r.code == 2
    assert "with --pre-push, the arguments are git's <remote name> <url>" in r.err


def test_pre_commit_framework_environment_when_stdin_is_empty(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    good = commit_case(repo, GOOD, "good")
    env = {"PRE_COMMIT_FROM_REF": good, "PRE_COMMIT_TO_REF": bad,
           "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/topic",
           "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/topic"}
    r = run_cli("publish-check", "--pre-push", cwd=repo.path, input="", env=env)
    assert r.code == 1
    assert f"refused: refs/heads/topic at {bad}" in r.out


def test_each_commit_checks_the_commits_a_push_adds(repo: Repo) -> None:
    base = commit_case(repo, GOOD, "base")
    bad = commit_case(repo, BAD, "bad")
    tip = commit_case(repo, GOOD, "fixed")
    stdin = f"refs/heads/main {tip} refs/heads/main {base}\n"
    assert pre_push(repo, stdin).code == 0  # the tip is what is published
    r = pre_push(repo, stdin, "--each-commit")
    assert r.code == 1
    assert f"refused: refs/heads/main at {bad}" in r.out
    assert base not in r.out  # the remote has it: not checked again
    assert f"ok: refs/heads/main at {tip}" in r.out


def test_json_format(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    r = run_cli("publish-check", "--format", "json", cwd=repo.path)
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["ok"] is False
    (rev,) = doc["revisions"]
    assert (rev["commit"], rev["refs"], rev["ok"]) == (bad, ["HEAD"], False)
    assert rev["findings"][0]["path"] == "evals/cases/c.yaml"
    assert (rev["findings"][0]["line"], rev["findings"][0]["col"]) == (2, 5)


def test_github_format(repo: Repo) -> None:
    commit_case(repo, BAD, "bad")
    r = run_cli("publish-check", "--format", "github", cwd=repo.path)
    assert r.code == 1
    assert re.search(r"^::error file=evals/cases/c\.yaml,line=2,col=5,title=GE\d+::.*\(HEAD at ",
                     r.out, re.M)


def test_grader_module_is_never_imported(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "IMPORTED"
    grader = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n\n\n"
              "def ok(t, case, run):\n    return True\n")
    case = GOOD.replace("- final_answer_contains: Hello", "- grader: {name: g.ok}")
    repo.commit({"evals/cases/c.yaml": case, "evals/graders/g.py": grader}, msg="grader")
    r = run_cli("publish-check", cwd=repo.path)
    assert r.code == 0, r.out + r.err
    assert "(2 eval files)" in r.out
    assert not marker.exists()


# --- the installed plain hook, driven by a real `git push` to a local bare remote ---


@pytest.fixture
def pushing(repo: Repo, tmp_path: Path) -> Repo:
    remote = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    # Only pre-push: these tests commit bad cases on purpose.
    assert run_cli("hooks", "install", "pre-push", cwd=repo.path).code == 0
    return repo


def push(repo: Repo, *args: str) -> tuple[int, str]:
    """A real ``git push`` with this venv's gitevals on PATH, as an activated venv has it."""
    import subprocess

    env = dict(os.environ)  # the venv first on PATH (tests/conftest.py)
    proc = subprocess.run(["git", "push", "-q", "origin", *args], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def remote_refs(repo: Repo) -> set[str]:
    out = repo.git("ls-remote", "origin")
    names = {line.split("\t")[1] for line in out.splitlines()}
    return {n for n in names if not n.endswith("^{}")}  # peeled tags listed twice


def test_push_of_several_refs_refused_when_one_is_bad(pushing: Repo) -> None:
    bad = commit_case(pushing, BAD, "bad")
    pushing.git("tag", "v0.9", bad)
    commit_case(pushing, GOOD, "good")
    pushing.git("tag", "-a", "-m", "release", "v1.0")
    code, out = push(pushing, "main", "v1.0", "v0.9")
    assert code != 0
    assert f"refused: refs/tags/v0.9 at {bad}" in out
    assert "ok: refs/heads/main, refs/tags/v1.0 at" in out
    assert remote_refs(pushing) == set()  # a refused pre-push publishes nothing
    code, out = push(pushing, "main", "v1.0")
    assert code == 0, out
    assert remote_refs(pushing) == {"refs/heads/main", "refs/tags/v1.0"}


def test_release_tag_on_an_already_pushed_commit_is_checked(pushing: Repo) -> None:
    bad = commit_case(pushing, BAD, "bad")
    code, out = push(pushing, "--no-verify", "main")  # it slipped in before the hook
    assert code == 0, out
    commit_case(pushing, GOOD, "fixed")
    code, out = push(pushing, "main")
    assert code == 0, out
    # The remote already has `bad`; tagging it for release must still be refused.
    pushing.git("tag", "-a", "-m", "release", "v1.0", bad)
    code, out = push(pushing, "v1.0")
    assert code != 0
    assert f"refused: refs/tags/v1.0 at {bad}: 1 error" in out
    assert "refs/tags/v1.0" not in remote_refs(pushing)


def test_push_delete_of_a_tag_passes(pushing: Repo) -> None:
    bad = commit_case(pushing, BAD, "bad")
    pushing.git("tag", "v0", bad)
    assert push(pushing, "--no-verify", "v0")[0] == 0
    code, out = push(pushing, "--delete", "v0")
    assert code == 0, out
    assert remote_refs(pushing) == set()


def test_each_commit_needs_pre_push(repo: Repo) -> None:
    commit_case(repo, GOOD, "good")
    r = run_cli("publish-check", "--each-commit", cwd=repo.path)
    assert r.code == 2
    assert r.err.strip() == ("gitevals: error: --each-commit checks the commits a push adds: "
                             "use it with --pre-push")


def test_each_commit_skips_what_the_remote_tracking_refs_have(repo: Repo) -> None:
    bad = commit_case(repo, BAD, "bad")
    repo.git("update-ref", "refs/remotes/origin/main", bad)  # the remote already has it
    tip = commit_case(repo, GOOD, "fixed")
    r = pre_push(repo, f"refs/heads/topic {tip} refs/heads/topic {Z}\n", "--each-commit")
    assert r.code == 0, r.out
    assert r.out == (f"ok: refs/heads/topic at {tip} (1 eval files)\n"
                     "publish check: 1 revision(s) ok\n")
