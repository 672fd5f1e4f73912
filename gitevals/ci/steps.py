"""The IO of each CI step: environment, files, subprocesses. Decisions and text are in
pure functions (``decide``, :mod:`gitevals.ci.comment`, :mod:`gitevals.tasks.userns`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from gitevals.ci import checkrun, comment
from gitevals.errors import GitevalsError, UsageError
from gitevals.jsontypes import JSON, JSONObject
from gitevals.tasks import userns

#: A diff's markdown larger than this is refused rather than read (it is cut far below).
MAX_INPUT = 64 * 1024 * 1024


def say(line: str) -> None:
    print(f"gitevals: {line}", file=sys.stderr)


def read_markdown(path: str) -> str:
    """The diff's markdown file: a regular file, bounded, UTF-8 (undecodable bytes shown)."""
    p = Path(path)
    if not p.is_file() or p.is_symlink():
        raise UsageError(f"{path}: not a regular file; give the file `gitevals diff "
                         "--format markdown` wrote")
    if p.stat().st_size > MAX_INPUT:
        raise UsageError(f"{path}: over {MAX_INPUT:,} bytes; not a diff's markdown")
    return p.read_bytes().decode("utf-8", "replace")


# -- base-run ---------------------------------------------------------------------------

def decide(rev: str, has_run: bool) -> str:
    """``none`` (no base: a new branch's first push), ``reuse`` or ``run``."""
    if not rev.strip("0"):
        return "none"
    return "reuse" if has_run else "run"


def base_run(rev: str, env: Mapping[str, str]) -> str:
    """Whether the base must be run: asks ``gitevals show`` (the same rule as ``diff``
    picks a run by), after the notes were fetched. Writes ``base=...`` to $GITHUB_OUTPUT."""
    has_run = False
    if rev.strip("0"):
        shown = subprocess.run([sys.executable, "-m", "gitevals", "show", rev, "--format",
                                "json"], capture_output=True, check=False)
        has_run = shown.returncode == 0
    choice = decide(rev, has_run)
    short = rev[:12]
    say({"none": "no base revision (a new branch): nothing to compare with",
         "reuse": f"the base {short} has a run (fetched with the notes): reused, not run again",
         "run": f"the base {short} has no run yet: running it"}[choice])
    _output(env, "base", choice)
    return choice


def _output(env: Mapping[str, str], key: str, value: str) -> None:
    target = env.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(f"{key}={value}\n")


def _fail_on(env: Mapping[str, str]) -> str:
    """The diff's ``--fail-on``, which the verdict line explains (``GITEVALS_FAIL_ON``)."""
    given = env.get("GITEVALS_FAIL_ON", "") or "regressed"
    if given not in ("regressed", "any-change", "never"):
        raise UsageError(f"GITEVALS_FAIL_ON={given!r}: give regressed, any-change or never")
    return given


# -- summary ----------------------------------------------------------------------------

def summary(path: str, exit_code: int, env: Mapping[str, str]) -> int:
    """Append the diff to the job's step summary (GitHub); elsewhere, say there is none."""
    text = comment.summary_body(read_markdown(path), exit_code,
                                env.get("GITEVALS_DIFF_WHERE", f"in {path}"), _fail_on(env))
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        say("$GITHUB_STEP_SUMMARY is not set (not a GitHub Actions step): no summary written")
        return 0
    with open(target, "a", encoding="utf-8") as out:
        out.write(text if text.endswith("\n") else text + "\n")
    return 0


# -- comment ----------------------------------------------------------------------------

def pull_request(env: Mapping[str, str]) -> int | None:
    """The pull request number of this GitHub event, or None (a push)."""
    event = env.get("GITHUB_EVENT_PATH")
    if not event:
        return None
    try:
        doc = json.loads(Path(event).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    pr = doc.get("pull_request") if isinstance(doc, dict) else None
    number = pr.get("number") if isinstance(pr, dict) else None
    return number if isinstance(number, int) and number > 0 else None


def post_comment(path: str, exit_code: int, env: Mapping[str, str]) -> int:
    """Create or update the sticky comment. A failure (a fork's read-only token, an API
    down) is one line and exit 0: the diff's exit code gates the job, not the comment."""
    where = env.get("GITEVALS_DIFF_WHERE", "in the job's summary")
    try:
        if env.get("GITLAB_CI") == "true":
            return _gitlab(path, exit_code, env, where)
        return _github(path, exit_code, env, where)
    except GitevalsError as exc:
        say(f"could not update the comment: {exc}; the job needs `pull-requests: write` "
            "(GitHub) or a token with the api scope (GitLab); the diff is in the summary")
        return 0


def _github(path: str, exit_code: int, env: Mapping[str, str], where: str) -> int:
    number = pull_request(env)
    if number is None:
        say("not a pull request event: no comment")
        return 0
    token, repo = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
    if not token or "/" not in repo:
        raise GitevalsError("GITHUB_TOKEN or GITHUB_REPOSITORY is not set")
    api = comment.github(env.get("GITHUB_API_URL", "https://api.github.com"), token,
                         env.get("GITEVALS_COMMENT_AUTHOR", "github-actions[bot]"))
    text = comment.body(read_markdown(path), exit_code, comment.GITHUB_LIMIT, where,
                        fail_on=_fail_on(env))
    done = comment.upsert_github(api, repo, number, text)
    say(f"pull request #{number}: comment {done}")
    return 0


def _gitlab(path: str, exit_code: int, env: Mapping[str, str], where: str) -> int:
    iid = env.get("CI_MERGE_REQUEST_IID", "")
    if not iid.isdigit():
        say("not a merge request pipeline: no comment")
        return 0
    token = env.get("GITEVALS_GITLAB_TOKEN", "")
    author = env.get("GITEVALS_COMMENT_AUTHOR", "")
    if not token or not author:
        raise GitevalsError("GITEVALS_GITLAB_TOKEN (a token with the api scope) and "
                            "GITEVALS_COMMENT_AUTHOR (its user name) must be set")
    api = comment.gitlab(env.get("CI_API_V4_URL", ""), token, author)
    text = comment.body(read_markdown(path), exit_code, comment.GITLAB_LIMIT, where,
                        fail_on=_fail_on(env))
    done = comment.upsert_gitlab(api, env.get("CI_PROJECT_ID", ""), int(iid), text)
    say(f"merge request !{iid}: comment {done}")
    return 0


# -- check-run ----------------------------------------------------------------------------

def read_bounded(path: str, what: str, limit: int) -> str:
    """A regular file of at most ``limit`` bytes, as UTF-8 (undecodable bytes shown)."""
    p = Path(path)
    if not p.is_file() or p.is_symlink():
        raise UsageError(f"{path}: not a regular file; give {what}")
    if p.stat().st_size > limit:
        raise UsageError(f"{path}: over {limit:,} bytes; not {what}")
    return p.read_bytes().decode("utf-8", "replace")


def case_files() -> tuple[Path, dict[str, Path]]:
    """The work tree's top, and each case's file in it by case name (its file's stem;
    the first in path order when two share one)."""
    from gitevals.git.repo import require_repo
    from gitevals.git.trees import open_tree
    from gitevals.model import case_name
    from gitevals.settings import load_settings

    settings, _ = load_settings(open_tree())
    top = require_repo().work_root
    cases = top / settings.root / "cases"
    found = sorted(p for p in cases.rglob("*.y*ml") if p.is_file() and not p.is_symlink()
                   ) if cases.is_dir() else []
    return top, {case_name(p.name): p for p in reversed(found)}


def _locator(top: Path, files: Mapping[str, Path]
             ) -> Callable[[str, str], tuple[str, int] | None]:
    def locate(case: str, scenario: str) -> tuple[str, int] | None:
        path = files.get(case)
        if path is None:
            return None
        text = read_bounded(str(path), "a case file", MAX_INPUT)
        return path.relative_to(top).as_posix(), checkrun.scenario_line(text, scenario)
    return locate


def check_run(junit: Sequence[str], markdown: str, exit_code: int,
              env: Mapping[str, str]) -> int:
    """Publish the JUnit results as a check run with annotations. A failure (a fork's
    read-only token, an API down) is one line and exit 0, as for the comment."""
    read = [checkrun.read_junit(read_bounded(p, "a JUnit file gitevals wrote",
                                             checkrun.MAX_JUNIT), p) for p in junit]
    counts = {source: c for source, c, _ in read}
    results = [r for _, _, rs in read for r in rs]
    notes = checkrun.annotate(results, _locator(*case_files()))
    left = max(0, len(notes) - checkrun.MAX_ANNOTATIONS)
    where = env.get("GITEVALS_DIFF_WHERE", "in the job's summary")
    text = checkrun.summary(read_markdown(markdown), exit_code, where, _fail_on(env), left)
    line = checkrun.title(exit_code, counts.get("diff"), counts.get("run"))
    try:
        return _send_check_run(env, line, text, notes[:checkrun.MAX_ANNOTATIONS], exit_code)
    except GitevalsError as exc:
        say(f"could not publish the check run: {exc}; the job needs `checks: write`; the "
            "results are in the summary and the artifact")
        return 0


def _send_check_run(env: Mapping[str, str], line: str, text: str, notes: list[JSONObject],
                    exit_code: int) -> int:
    token, repo = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
    if not token or "/" not in repo:
        raise GitevalsError("GITHUB_TOKEN or GITHUB_REPOSITORY is not set")
    event = _event(env)
    sha = checkrun.head_sha(event, env)
    if not sha:
        raise GitevalsError("neither the event nor GITHUB_SHA names the commit")
    api = comment.github(env.get("GITHUB_API_URL", "https://api.github.com"), token)
    name = env.get("GITEVALS_CHECK_NAME") or "gitevals"
    where = f"/repos/{quote(repo, safe='/')}/check-runs"
    made: JSON = None
    for i, body in enumerate(checkrun.requests(name, sha, exit_code, line, text, notes)):
        if i == 0:
            made = api.call("POST", where, body)
            if not isinstance(made, dict) or not isinstance(made.get("id"), int):
                raise GitevalsError(f"POST {where}: the answer names no check run id")
        else:
            assert isinstance(made, dict)
            api.call("PATCH", f"{where}/{made['id']}", body)
    say(f"check run {name!r} on {sha[:12]}: {checkrun.conclusion(exit_code)}, "
        f"{len(notes)} annotations")
    return 0


def _event(env: Mapping[str, str]) -> JSONObject:
    path = env.get("GITHUB_EVENT_PATH")
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


# -- setup-sandbox ----------------------------------------------------------------------

def as_root(argv: Sequence[str], euid: int | None = None) -> list[str]:
    """``argv`` as root: directly when this is root, else through ``sudo -n`` (never asks
    for a password: a CI job has no one to answer)."""
    return list(argv) if (os.geteuid() if euid is None else euid) == 0 else ["sudo", "-n", *argv]


def _ok(argv: Sequence[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, check=False,
                              timeout=600).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _sysctl(name: str) -> str | None:
    """``sysctl -n NAME`` (the command, as a user would check it), or None."""
    try:
        done = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True,
                              check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def setup_sandbox() -> int:
    """bubblewrap installed and able to make a sandbox; 0 when it can, else 1 with one
    line saying what to do."""
    if shutil.which("bwrap") is None:
        install = as_root(["apt-get", "install", "-y", "-qq", "bubblewrap"])
        if shutil.which("apt-get") is None or not (
                _ok(install) or (_ok(as_root(["apt-get", "update", "-qq"])) and _ok(install))):
            say("bubblewrap is not installed and could not be (no apt-get, or no sudo): "
                "install it in an earlier step, or run with --no-sandbox")
            return 1
    if _sysctl(userns.APPARMOR) == "1":
        if _ok(as_root(["sysctl", "-w", f"{userns.APPARMOR}=0"])):
            say(f"{userns.APPARMOR} was 1 (AppArmor refused bwrap user namespaces): set to 0")
        else:
            how = ("`sysctl -w` was refused" if os.geteuid() == 0
                   else "this is not root and `sudo -n` failed")
            say(f"{userns.APPARMOR} is 1 and could not be set to 0 ({how}): run `sudo sysctl "
                f"-w {userns.APPARMOR}=0` in an earlier step, or run with --no-sandbox")
            return 1
    from gitevals.tasks.sandbox import find_bwrap, probe

    bwrap = find_bwrap()
    why = probe(bwrap) if bwrap else "bwrap is not on PATH"
    if why is not None:
        cause = userns.diagnose(userns.read_settings(), os.environ)
        from gitevals.text import one_line, visible

        say(f"bubblewrap cannot make a sandbox here ({visible(one_line(why))}): "
            f"{cause or 'allow unprivileged user namespaces'}, or run with --no-sandbox")
        return 1
    say(f"bubblewrap ready: {bwrap}")
    return 0
