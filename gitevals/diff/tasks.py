"""Task definitions between two revisions: field by field (pure).

A task's definition is its compiled document (``gitevals.tasks.compile``) flattened to
dotted fields (``verifier.argv``, ``environment.dockerfile``...), plus one field per file
of the directory besides those (``file tests/test.sh`` -> its blob SHA): a changed verifier
script is a changed task even when task.toml is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitevals.diff.rules import Change
from gitevals.jsontypes import JSON, JSONObject
from gitevals.tasks.definition import Task

#: Compiled fields that follow from others (or name the task): not compared.
_DERIVED = frozenset({"format", "name", "path", "files", "verifier.note",
                      "verifier.reward_file", "verifier.reward_format_default",
                      "environment.realized", "environment.not_enforced", "environment.gaps"})

#: Files whose content is in the compiled fields already (read as text, compared as such).
_COMPILED = frozenset({"task.toml", "instruction.md", "prompt.md", "environment/Dockerfile"})


@dataclass(frozen=True)
class TaskChange:
    """A task directory added, removed or changed; ``problem``: why a side did not load."""

    name: str
    kind: str  # added | removed | changed | unreadable
    fields: tuple[Change, ...] = ()
    problem: str | None = None


def definition_fields(task: Task) -> dict[str, JSON]:
    """The compared fields of ``task``, sorted by name."""
    from gitevals.tasks.compile import compile_task

    out: dict[str, JSON] = {}
    _flatten(compile_task(task), "", out)
    prefix = task.path + "/"
    for path, sha in task.files.items():
        if path[len(prefix):] not in _COMPILED:
            out[f"file {path[len(prefix):]}"] = sha
    return dict(sorted(out.items()))


def _flatten(doc: JSONObject, base: str, out: dict[str, JSON]) -> None:
    for k, v in doc.items():
        key = f"{base}{k}"
        if key in _DERIVED:
            continue
        if isinstance(v, dict) and k in ("timeouts", "verifier", "environment"):
            _flatten(v, key + ".", out)
        else:
            out[key] = v


def diff_task(name: str, a: Task | None, b: Task | None, problem: str | None = None
              ) -> TaskChange | None:
    """The change of one task between A and B (None when its definition is the same).
    ``problem`` (a side that exists and does not load) makes it ``unreadable``."""
    if problem is not None:
        return TaskChange(name, "unreadable", (), problem)
    if a is None and b is None:
        return None
    if a is None or b is None:
        return TaskChange(name, "added" if a is None else "removed")
    fa, fb = definition_fields(a), definition_fields(b)
    changes = tuple(Change(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb))
                    if fa.get(k) != fb.get(k))
    return TaskChange(name, "changed", changes) if changes else None
