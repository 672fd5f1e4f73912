"""What ``gitevals init`` writes: templates as strings, and a pure plan of the files.

``plan`` decides every file from values (the eval root, the current pyproject.toml,
whether a pre-commit config exists) so the command can check all of them before it
writes any.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

SCHEMA_FILE = "case.schema.json"

CASE = """\
# yaml-language-server: $schema=../{schema}
# An example case: scripted scenarios of the harness this repository is.
# Run `gitevals lint` after editing; every problem is reported as path:line:col.
defaults: {{trials: 3, timeout: 300s}}
scenarios:
  - id: answers-the-question
    user: What is the capital of France?
    expect:
      - final_answer_contains: Paris
      - final_answer_max_chars: 200
      - no_error: true
  - id: answer-reads-well
    user: [Explain recursion in one sentence., Now give an example.]
    expect:
      - grader: {{name: example.answers, pass_below: 0.5}}
"""

GRADER = '''\
"""Example graders: called from cases as ``example.<function>``.

A grader is a top-level function ``fn(t, case, run)``:
  case = {"id", "user": [...], "expect": [...]}
  run  = {"final_answer", "tool_calls", "error", "turns", "duration_ms"}
  t.llm(prompt) -> str asks the judge model configured in [tool.gitevals.judge].
Return True/False, or {"pass": bool, "score": float, "why": str}.
"""


def answers(t, case, run):
    """A non-empty answer that stays short scores higher."""
    answer = (run["final_answer"] or "").strip()
    score = max(0.0, 1.0 - len(answer) / 1000) if answer else 0.0
    return {"pass": bool(answer), "score": round(score, 3), "why": f"{len(answer)} chars"}
'''

SETTINGS_BODY = """\
root = "{root}"

# How to start the harness under test (pick one):
# [tool.gitevals.target]
# command = ["python", "harness.py"]      # speaks JSON lines on stdin/stdout
# python = "harness:respond"             # or a module:function in this tree

# The judge behind t.llm (any OpenAI-compatible endpoint, a pinned model):
# [tool.gitevals.judge]
# base_url = "http://127.0.0.1:8000/v1"
# model = "judge-model-2026-01-15"
# api_key_env = "JUDGE_API_KEY"
"""

#: The commands that install the hooks beside the pre-commit framework, in either order:
#: gitevals' own pre-push hook also refuses a release tag on a commit the remote already
#: has, a push pre-commit's pre-push stage skips.
INSTALL_COMMANDS = (
    "pre-commit install --hook-type pre-commit --hook-type pre-push",
    "gitevals hooks install pre-push",
)

PRE_COMMIT_CONFIG = """\
# gitevals hooks for the pre-commit framework (https://pre-commit.com). Install with
#   {install}
# gitevals' own pre-push hook (the second command, either order) also refuses a release
# tag on a commit the remote already has: pre-commit's pre-push stage skips such a push.
repos:
  - repo: local
    hooks:
      - id: gitevals-lint
        name: gitevals lint (staged eval files)
        entry: gitevals lint --staged
        language: system
        # Settings set the root and refused keys; always_run: a commit that only
        # deletes a grader module still re-lints the cases that name it.
        files: '{files}'
        always_run: true
        stages: [pre-commit]
      - id: gitevals-publish-check
        name: gitevals publish-check (pushed revisions)
        entry: gitevals publish-check --pre-push
        language: system
        pass_filenames: false
        always_run: true
        stages: [pre-push]
"""


@dataclass(frozen=True)
class File:
    """One file ``init`` writes: ``append`` adds to an existing file instead of creating it."""

    path: str
    text: str
    append: bool = False


def settings_body(root: str, table: str) -> str:
    """The settings text under ``[table]`` (``tool.gitevals`` or none for gitevals.toml)."""
    head = f"[{table}]\n" if table else ""
    return head + SETTINGS_BODY.format(root=root).replace(
        "[tool.gitevals.", f"[{table + '.' if table else ''}"
    )


def _append_to_pyproject(pyproject: str | None, root: str) -> str | None:
    """The text to append to pyproject.toml, or None when gitevals.toml must hold settings.

    None when there is no pyproject.toml, when it already has ``[tool.gitevals]``,
    or when appending the table would not parse (say ``tool`` is an inline table).
    """
    if pyproject is None or has_settings(pyproject):
        return None
    sep = "" if pyproject.endswith("\n\n") else "\n" if pyproject.endswith("\n") else "\n\n"
    extra = sep + settings_body(root, "tool.gitevals")
    try:
        tomllib.loads(pyproject + extra)
    except tomllib.TOMLDecodeError:
        return None
    return extra


def has_settings(pyproject: str | None) -> bool:
    """Whether pyproject.toml already holds a ``[tool.gitevals]`` table."""
    try:
        return pyproject is not None and "gitevals" in tomllib.loads(pyproject).get("tool", {})
    except (tomllib.TOMLDecodeError, AttributeError):
        return False


def plan(root: str, schema: str, pyproject: str | None, settings_exist: bool) -> list[File]:
    """Every file of a fresh eval tree under ``root`` (repo-relative, posix)."""
    files = [
        File(f"{root}/{SCHEMA_FILE}", schema),
        File(f"{root}/cases/example.yaml", CASE.format(schema=SCHEMA_FILE)),
        File(f"{root}/graders/example.py", GRADER),
        File(f"{root}/results/.gitignore", RESULTS_IGNORE),
    ]
    if not settings_exist:
        extra = _append_to_pyproject(pyproject, root)
        if extra is not None:
            files.append(File("pyproject.toml", extra, append=True))
        else:
            files.append(File("gitevals.toml", settings_body(root, "")))
    return files


#: Run artifacts stay out of commits by default: each run is pinned to a commit and
#: shared through git notes (refs/notes/gitevals). Delete this file to commit them.
RESULTS_IGNORE = """\
# gitevals run artifacts: shared as git notes (refs/notes/gitevals), not committed.
# Delete this file to commit them instead.
*
!.gitignore
"""


def files_pattern(root: str) -> str:
    """The lint hook's ``files:`` regex: cases, graders, goldens and tasks under ``root``, and
    the settings files (they set the root and the refused keys)."""
    root_re = "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in root)
    evals = r"(cases/.+\.ya?ml|graders/.+\.py|goldens\.jsonl|tasks/.+)"
    return rf"^({root_re}/{evals}|pyproject\.toml|gitevals\.toml)$"


def pre_commit_config(root: str) -> str:
    """The ``.pre-commit-config.yaml`` that runs both gitevals hooks."""
    return PRE_COMMIT_CONFIG.format(files=files_pattern(root),
                                    install="\n#   ".join(INSTALL_COMMANDS))
