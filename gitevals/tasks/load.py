"""Task directories of a tree -> ``Task`` values and ``Finding``s (read, never executed).

A task directory is ``<root>/tasks/<name>/`` holding ``task.toml``. Everything is read
through a ``Tree`` (working tree, index or revision), so lint, the commit hook, the
publish check and ``task compile --rev`` see exactly the same files.

The files gitevals reads itself (*selected* files: ``task.toml``, the instruction,
``environment/Dockerfile``, each verifier script the argv names under ``/tests/``)
must be regular, strict UTF-8 and at most 1,048,576 bytes. Other files of the task
(data under ``environment/`` and ``tests/``) may hold any bytes of any size, but no
symlink may lead out of the task and nothing may be a FIFO, socket, device or
submodule: a run copies them.
"""

from __future__ import annotations

import datetime
import math
import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitevals.findings import Finding
from gitevals.tasks import tasks_dir as tasks_dir
from gitevals.tasks.definition import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_PASS_THRESHOLD,
    DEFAULT_VERIFIER,
    DEFAULT_WORKDIR,
    Environment,
    Task,
    Verifier,
)

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.jsontypes import JSON, JSONObject
    from gitevals.schema import SchemaError
    from gitevals.settings import Settings

#: The most bytes of a selected file (the seed's bound; the same as ``tree.MAX_FILE``).
MAX_BYTES = 1_048_576
TASK_TOML = "task.toml"
INSTRUCTION = "instruction.md"
PROMPT = "prompt.md"
DOCKERFILE = "environment/Dockerfile"
DOCS = "see docs/tasks.md"
#: task.toml keys gitevals reads into the ``Task``; any other key present is ``unused``.
USED = frozenset({
    "version", "schema_version", "name", "max_iterations", "reward_format", "pass_threshold",
    "metadata", "task.name", "agent.timeout_sec", "agent.sandbox", "verifier.command",
    "verifier.timeout_sec", "verifier.env", "verifier.reward_format", "verifier.pass_threshold",
    "environment.docker_image", "environment.image", "environment.workdir", "environment.cpus",
    "environment.memory_mb", "environment.storage_mb", "environment.memory",
    "environment.storage", "environment.allow_internet", "environment.build_timeout_sec",
})
#: Keys that may be written in two places (or under two names): one of each pair.
_TWICE = ((("reward_format",), ("verifier", "reward_format")),
          (("pass_threshold",), ("verifier", "pass_threshold")),
          (("environment", "docker_image"), ("environment", "image")))


def task_dirs(tree: Tree, root: str) -> dict[str, str]:
    """Task name -> tree path ``<root>/tasks/<name>`` of each directory holding a ``task.toml``
    (of any kind: a symlinked or FIFO ``task.toml`` is a task with a finding, not no task)."""
    return {name: path for name, path in _children(tree, root).items()
            if tree.exists(f"{path}/{TASK_TOML}")}


def _children(tree: Tree, root: str) -> dict[str, str]:
    """Name -> path of each directory directly under ``<root>/tasks/`` (a symlink there is
    no directory: lint's GE801 names it)."""
    base = tasks_dir(root)
    return children(base, [*tree.blob_shas(base + "/"), *tree.refused(base + "/")])


def children(base: str, paths: Sequence[str]) -> dict[str, str]:
    """Name -> path of the directories directly under ``base`` that ``paths`` lie in."""
    top = base + "/"
    names = {p[len(top):].split("/", 1)[0] for p in paths
             if p.startswith(top) and "/" in p[len(top):]}
    return {n: top + n for n in sorted(names)}


def load_tasks(tree: Tree, settings: Settings, names: Sequence[str] = ()
               ) -> tuple[list[Task], list[Finding], list[str]]:
    """The tasks of ``tree`` that load clean (sorted by name), every finding, and notes.

    ``names`` restricts the tasks to those named (a name with no task directory is left
    out; the caller says so). A directory without ``task.toml`` is skipped with a note.
    """
    tasks: list[Task] = []
    findings: list[Finding] = []
    notes: list[str] = []
    for name, path in _children(tree, settings.root).items():
        if names and name not in names:
            continue
        if not tree.exists(f"{path}/{TASK_TOML}"):
            notes.append(skipped_note(tree, path))
            continue
        task, found = load_task(tree, path, settings)
        findings.extend(found)
        if task is not None:
            tasks.append(task)
    return tasks, sorted(findings), notes


def skipped_note(tree: Tree, path: str) -> str:
    """Why a directory under tasks/ is no task (it has no task.toml)."""
    if tree.exists(f"{path}/task.yaml"):
        return (f"skipped {path}: a Terminal-Bench 1 task.yaml directory; gitevals reads "
                "task.toml tasks (Harbor's format)")
    return f"skipped {path}: no task.toml, so not a task directory"


def load_task(tree: Tree, path: str, settings: Settings, *, hashed: bool = True
              ) -> tuple[Task | None, list[Finding]]:
    """The task directory at tree path ``path``: its ``Task`` (None when any error was
    found) and every finding. Nothing of the task is imported or executed. ``files`` holds
    real blob SHAs (``Tree.hashed``) unless ``hashed=False`` (lint: only the findings are
    wanted, and a working-tree file over the size limit is never read)."""
    path = path.strip("/")
    toml_path = f"{path}/{TASK_TOML}"
    text, found = read_selected(tree, toml_path)
    if text is None:
        return None, found or [Finding(toml_path, 1, 1, "GE901", "missing: a task directory "
                                       "holds task.toml, instruction.md and tests/; add "
                                       f"task.toml ({DOCS})")]
    doc, found = parse_task_toml(text, toml_path)
    if doc is None:
        return None, found
    if "steps" in doc:
        return None, [_steps_finding(text, toml_path)]
    verifier, v_found = _verifier(tree, path, doc, text)
    instruction, i_found = _instruction(tree, path, settings.max_instruction_chars)
    dockerfile, d_found = read_selected(tree, f"{path}/{DOCKERFILE}")
    found += [*v_found, *i_found, *d_found, *_others(tree, path, verifier)]
    found += _no_solution(tree, path)
    if any(f.severity == "error" for f in found) or instruction is None or verifier is None:
        return None, sorted(found)
    return _task(tree, path, doc, instruction, verifier, dockerfile, hashed), sorted(found)


def _no_solution(tree: Tree, path: str) -> list[Finding]:
    """GE913 (a warning) when the task holds no ``solution/solve.sh``: without a reference
    solution, ``task check`` cannot show the task can be passed at all."""
    solve = f"{path}/solution/solve.sh"
    if tree.entry(solve) is not None or tree.refused(solve):
        return []
    return [Finding(solve, 1, 1, "GE913", "missing: the task has no reference solution, so "
                    "`gitevals task check` cannot run its oracle control (does anything pass "
                    "the verifier?); add solution/solve.sh, which solves the task in the "
                    "workspace", "warning")]


# -- selected files -----------------------------------------------------------------


def read_selected(tree: Tree, path: str) -> tuple[str | None, list[Finding]]:
    """The text of a file gitevals reads, or the finding that refuses it; ``(None, [])``
    when nothing at all is at ``path`` (absent, which callers treat as they must)."""
    e = tree.entry(path)
    if e is None:
        why = tree.refused(path).get(path)
        if why is None and not tree.exists(path):
            return None, []
        if why is not None and why.endswith(" limit"):
            return None, [_too_big(path, why)]
        return None, [_not_regular(path, why or "a directory")]
    if e.is_link:
        return None, [_not_regular(path, "a symlink")]
    if e.size > MAX_BYTES:
        return None, [_too_big(path, f"{e.size} bytes")]
    data = tree.read(path)
    if data is None:
        return None, [_not_regular(path, "a file that could not be read")]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [Finding(path, line, col, "GE902", f"not UTF-8 (byte "
                              f"0x{data[exc.start]:02x} at this column); save the file as "
                              "UTF-8")]


def _not_regular(path: str, what: str) -> Finding:
    name = path.rsplit("/", 1)[-1]
    return Finding(path, 1, 1, "GE901", f"{what}, not a regular file: gitevals reads {name} "
                   "itself and follows no links; commit the file itself at this path")


def _too_big(path: str, what: str) -> Finding:
    size = what.split(",")[0]
    return Finding(path, 1, 1, "GE903", f"{size}, over the {MAX_BYTES:,}-byte limit of the "
                   "files gitevals reads (task.toml, the instruction, environment/Dockerfile, "
                   "the verifier script); shorten it")


# -- task.toml ----------------------------------------------------------------------


def parse_task_toml(text: str, path: str) -> tuple[JSONObject | None, list[Finding]]:
    """task.toml's table checked against ``schemas/task.schema.json``: the table (None on
    any error) and the findings; unknown keys are warnings (Harbor ignores them too)."""
    from gitevals.settings import key_position, parse_toml, too_large

    _, raw, bad = parse_toml(text.encode(), path, "GE904", "task.toml",
                              "task.toml nests tables a few levels at most")
    if bad is not None:
        return None, [bad]
    key = too_large(raw)
    if key is not None:
        *parents, last = key.split(".")
        line, col = key_position(text, last, ".".join(parents))
        return None, [Finding(path, line, col, "GE904", f"cannot read task.toml: {key} is a "
                              "number too large to use (or not finite); write an ordinary "
                              "number")]
    doc = _jsonable(raw)
    assert isinstance(doc, dict)
    found = [_schema_finding(err, text, path) for err in _schema_errors(doc)]
    found += _twice(doc, text, path)
    errors = any(f.severity == "error" for f in found)
    return (None if errors else doc), found


def _schema_errors(doc: JSONObject) -> list[SchemaError]:
    from gitevals.schema import validate

    return validate("task", doc)


def _jsonable(value: object) -> JSON:
    """TOML's dates and times as ISO strings: the rest of a TOML table is JSON already."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    assert value is None or isinstance(value, bool | int | float | str)
    return value


def _position(text: str, keys: Sequence[str | int]) -> tuple[int, int]:
    """line:col of the key a schema path leads to (array indexes point at their key)."""
    from gitevals.settings import key_position

    named = [str(k) for k in keys if isinstance(k, str)]
    if not named:
        return 1, 1
    return key_position(text, named[-1], ".".join(named[:-1]))


def _schema_finding(err: SchemaError, text: str, path: str) -> Finding:
    from gitevals.schema import closest
    from gitevals.settings import toml_hint

    line, col = _position(text, err.path)
    where = ".".join(str(k) for k in err.path)
    if err.key:
        return Finding(path, line, col, "GE906", f"{err.message}; gitevals ignores it "
                       f"({DOCS})", "warning")
    if tuple(err.path) == ("verifier", "command") and err.keyword == "type":
        return Finding(path, line, col, "GE907", _shell_message(text, line))
    message = toml_hint(err)
    if err.keyword == "enum":
        value = _value_at(text, line)
        near = closest(value, ("reward_text", "reward_json")) if value else None
        message += f"; did you mean {near}?" if near else ""
    return Finding(path, line, col, "GE905", f"bad task.toml value {where}: {message}; "
                   f"see schemas/task.schema.json")


def _value_at(text: str, line: int) -> str:
    """The quoted string on ``line`` of the text (for a "did you mean")."""
    lines = text.splitlines()
    m = re.search(r"=\s*[\"']([^\"']*)[\"']", lines[line - 1]) if line <= len(lines) else None
    return m.group(1) if m else ""


def _shell_message(text: str, line: int) -> str:
    import json
    import shlex

    example = '["bash", "/tests/test.sh"]'
    value = _value_at(text, line)
    try:
        words = shlex.split(value)
    except ValueError:
        words = []
    if words and not any(ch in value for ch in "|&;<>$`*?(){}"):
        example = json.dumps(words)
    return ("[verifier] command is a shell string: gitevals runs an argv, never a shell; "
            f"write one string per argument: command = {example} (a pipeline needs its own "
            "script under tests/)")


def _twice(doc: JSONObject, text: str, path: str) -> list[Finding]:
    """GE912 for a value written in two places (top level and [verifier], or two names)."""
    out = []
    for first, second in _TWICE:
        if _get(doc, first) is not None and _get(doc, second) is not None:
            line, col = _position(text, second)
            out.append(Finding(path, line, col, "GE912", f"{'.'.join(second)} is also written "
                               f"as {'.'.join(first)}: write it once"))
    return out


def _get(doc: JSON, keys: Sequence[str]) -> JSON:
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


def _steps_finding(text: str, path: str) -> Finding:
    m = re.search(r"^[ \t]*\[\[[ \t]*steps[ \t]*\]\]|^[ \t]*steps[ \t]*=", text, re.M)
    line = text.count("\n", 0, m.start()) + 1 if m else 1
    col = len(m.group()) - len(m.group().lstrip()) + 1 if m else 1
    return Finding(path, line, col, "GE911", "a multi-step task ([[steps]]) is not supported "
                   "yet: gitevals runs one instruction per task; split it into one task "
                   "directory per step")


# -- the parts of a task -------------------------------------------------------------


def _verifier(tree: Tree, path: str, doc: JSONObject, text: str
              ) -> tuple[Verifier | None, list[Finding]]:
    """The verifier task.toml asks for (Harbor's ``bash /tests/test.sh`` when it names
    none) and findings for the scripts it names under /tests/ that the task lacks."""
    table = doc.get("verifier")
    v: JSONObject = table if isinstance(table, dict) else {}
    command = v.get("command")
    argv = tuple(str(a) for a in command) if isinstance(command, list) else DEFAULT_VERIFIER
    env = v.get("env")
    fmt = v.get("reward_format", doc.get("reward_format"))
    verifier = Verifier(argv, command is None, _seconds(v.get("timeout_sec")),
                        tuple(sorted((str(k), str(x)) for k, x in env.items()))
                        if isinstance(env, dict) else (),
                        str(fmt) if fmt is not None else "reward_text", fmt is None)
    where = (path + "/" + TASK_TOML, *_position(text, ("verifier", "command")))
    bad = _unpassable(verifier, text, path + "/" + TASK_TOML)
    if bad:  # no argv or environment can carry these: nothing more to check
        return None, bad
    return verifier, [f for a in argv if (f := _script(tree, path, a, verifier, where))]


def _unpassable(verifier: Verifier, text: str, file: str) -> list[Finding]:
    """GE905 for what no process can be given: a NUL in the command or an environment
    value, an environment name that is empty or holds ``=`` or a NUL."""
    out = []
    for i, a in enumerate(verifier.argv if not verifier.default else ()):
        if "\0" in a:
            line, col = _position(text, ("verifier", "command"))
            out.append(Finding(file, line, col, "GE905", f"bad task.toml value verifier.command"
                               f"[{i}]: it holds a NUL character, which no argv can carry; "
                               "remove it"))
    for k, v in verifier.env:
        line, col = _position(text, ("verifier", "env"))
        if not k or "=" in k or "\0" in k:
            out.append(Finding(file, line, col, "GE905", f"bad task.toml value verifier.env: "
                               f"the name {k!r} is empty or holds '=' or a NUL, which no "
                               "environment can carry; name the variable with letters, "
                               "digits and '_'"))
        elif "\0" in v:
            out.append(Finding(file, line, col, "GE905", f"bad task.toml value verifier.env."
                               f"{k}: it holds a NUL character, which no environment can "
                               "carry; remove it"))
    return out


def _script(tree: Tree, path: str, member: str, verifier: Verifier,
            where: tuple[str, int, int]) -> Finding | None:
    """A finding for an argv member naming ``/tests/<file>`` that is not a good file."""
    if not member.startswith("/tests/") or member.endswith("/"):
        return None
    rel = posixpath.normpath(member[len("/tests/"):])
    if rel.startswith(".."):
        return Finding(*where, "GE909", f"{member} leaves /tests/; name a file under tests/")
    script = f"{path}/tests/{rel}"
    text, found = read_selected(tree, script)
    if found and tree.entry(script) is None and not tree.refused(script):
        return None  # a directory (``pytest /tests/unit``): its files are no selected file
    if found:
        return found[0]
    if text is not None:
        return None
    if verifier.default:
        return Finding(script, 1, 1, "GE909", "missing: with no [verifier] command in "
                       "task.toml the verifier is Harbor's `bash /tests/test.sh`; add "
                       "tests/test.sh, or set [verifier] command")
    return Finding(*where, "GE909", f"[verifier] command names {member}, which the task does "
                   f"not hold; add tests/{rel} or fix the command")


def _instruction(tree: Tree, path: str, most: int) -> tuple[str | None, list[Finding]]:
    """instruction.md, else prompt.md when instruction.md is genuinely absent: its text
    (None when refused) and the findings."""
    text, found = read_selected(tree, f"{path}/{INSTRUCTION}")
    name = INSTRUCTION
    if found and tree.exists(f"{path}/{PROMPT}"):
        f = found[0]
        found = [Finding(f.path, f.line, f.col, f.code, f"{f.message} (prompt.md is read only "
                         "when instruction.md is absent)")]
    if text is None and not found:
        name = PROMPT
        text, found = read_selected(tree, f"{path}/{PROMPT}")
        if text is None and not found:
            return None, [Finding(f"{path}/{INSTRUCTION}", 1, 1, "GE908", "missing: a task "
                                  "needs instruction.md (or prompt.md), the text the agent "
                                  "is given; add it")]
    if text is None:
        return None, found
    file = f"{path}/{name}"
    if not text.strip():
        return None, [Finding(file, 1, 1, "GE908", "empty: the instruction is what the agent "
                              "is asked to do; write it (1 character at least)")]
    if len(text) > most:
        line = text.count("\n", 0, most) + 1
        col = most - (text.rfind("\n", 0, most) + 1) + 1
        return None, [Finding(file, line, col, "GE908", f"{len(text):,} characters, over the "
                              f"{most:,} allowed (the text from here on); shorten it, or "
                              "raise [tool.gitevals.tasks] max_instruction_chars")]
    return text, []


def _others(tree: Tree, path: str, verifier: Verifier | None) -> list[Finding]:
    """GE910 for what a run could not copy safely: a symlink that leads out of the task,
    a FIFO, socket, device or submodule. Selected files have their own findings."""
    selected = {f"{path}/{n}" for n in (TASK_TOML, INSTRUCTION, PROMPT, DOCKERFILE)}
    selected |= {f"{path}/tests/{posixpath.normpath(a[7:])}" for a in
                 (verifier.argv if verifier else ()) if a.startswith("/tests/")}
    refused = tree.refused(path + "/")
    out = []
    for p, why in refused.items():
        if p in selected or why.endswith(" limit"):
            continue  # large data is normal under environment/ and tests/
        if why != "a symlink":
            out.append(Finding(p, 1, 1, "GE910", f"{why}, which a run cannot copy (it copies "
                               "regular files, and links that stay inside the task); "
                               "remove it"))
        elif (target := _leaves(tree, path, p, refused)) is not None:
            out.append(Finding(p, 1, 1, "GE910", f"a symlink to {target!r}, which leads out "
                               "of the task: a run never follows a link out of a task; commit "
                               "the file itself here (or remove the link)"))
    return out


def _leaves(tree: Tree, path: str, link: str, refused: dict[str, str]) -> str | None:
    """The target of ``link`` when it (or a link it leads to) points out of the task."""
    seen: set[str] = set()
    while link not in seen:
        seen.add(link)
        sha = tree.blob_sha(link)
        if sha is None:
            return None
        target = tree.read_blobs([sha])[0].decode("utf-8", "surrogateescape")
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(link[len(path) + 1:]),
                                                target))
        if "\0" in target or posixpath.isabs(target) or rel == ".." or rel.startswith("../"):
            return target
        link = f"{path}/{rel}"
        if refused.get(link) != "a symlink":
            return None
    return None  # a cycle of links inside the task: nothing to copy, nothing leaves


def _seconds(value: JSON) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _size_mb(mb: JSON, size: JSON) -> int | None:
    """``memory_mb`` as written, else Harbor's older ``memory = "2G"`` in MB."""
    if isinstance(mb, int) and not isinstance(mb, bool):
        return mb
    if not isinstance(size, str) or not size:
        return None
    scale = {"K": 1 / 1024, "M": 1, "G": 1024}.get(size[-1].upper())
    try:  # the schema bounds the digits; a value past it is no size, never a crash
        mb = float(size[:-1]) * scale if scale is not None else math.inf
    except ValueError:
        return None
    return int(mb) if math.isfinite(mb) else None


def _task(tree: Tree, path: str, doc: JSONObject, instruction: str, verifier: Verifier,
          dockerfile: str | None, hashed: bool) -> Task:
    env = _table(doc, "environment")
    image = env.get("docker_image", env.get("image"))
    cpus = env.get("cpus")
    environment = Environment(
        str(image) if image is not None else None, dockerfile,
        str(env.get("workdir", DEFAULT_WORKDIR)),
        float(cpus) if isinstance(cpus, int | float) else None,
        _size_mb(env.get("memory_mb"), env.get("memory")),
        _size_mb(env.get("storage_mb"), env.get("storage")),
        env.get("allow_internet") is True, _seconds(env.get("build_timeout_sec")))
    threshold = _get(doc, ("verifier", "pass_threshold"))
    threshold = doc.get("pass_threshold") if threshold is None else threshold
    iterations = doc.get("max_iterations", DEFAULT_MAX_ITERATIONS)
    named = doc.get("name", _get(doc, ("task", "name")))
    version = doc.get("version", doc.get("schema_version"))
    metadata = doc.get("metadata")
    return Task(
        name=path.rsplit("/", 1)[-1], path=path, instruction=instruction,
        instruction_file=INSTRUCTION if tree.exists(f"{path}/{INSTRUCTION}") else PROMPT,
        max_iterations=iterations if isinstance(iterations, int) else DEFAULT_MAX_ITERATIONS,
        pass_threshold=float(threshold) if isinstance(threshold, int | float)
        else DEFAULT_PASS_THRESHOLD,
        agent_timeout_sec=_seconds(_get(doc, ("agent", "timeout_sec"))),
        agent_sandbox=_get(doc, ("agent", "sandbox")) is True,
        verifier=verifier, environment=environment,
        version=str(version) if version is not None else None,
        metadata=metadata if isinstance(metadata, dict) else {},
        files={e.path: tree.hashed(e) if hashed else e.sha
               for e in tree.entries(path + "/") if not e.is_link},
        declared_name=str(named) if named is not None else None,
        unused=_unused(doc))


def _table(doc: JSONObject, name: str) -> JSONObject:
    value = doc.get(name)
    return value if isinstance(value, dict) else {}


def _unused(doc: JSONObject) -> tuple[str, ...]:
    """Dotted keys of ``doc`` (two levels in agent/verifier/environment/task tables) that
    gitevals reads and does not use: shown, so the surface says what it does not run."""
    out = []
    for k, v in doc.items():
        if k in ("agent", "verifier", "environment", "task") and isinstance(v, dict):
            out += [f"{k}.{sub}" for sub in v if f"{k}.{sub}" not in USED]
        elif k not in USED:
            out.append(k)
    return tuple(sorted(out))
