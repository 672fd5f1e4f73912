"""``[tool.gitevals]`` (pyproject.toml) or a root ``gitevals.toml`` -> ``Settings``.

Settings are read through a ``Tree`` so they come from the same revision as the
cases they govern. Bad settings are findings, never exceptions.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitevals.findings import Finding
from gitevals.jsontypes import JSON, JSONObject
from gitevals.judgesettings import Judge as Judge  # the judge's settings: their home

if TYPE_CHECKING:
    from gitevals.git.trees import Tree
    from gitevals.prices import Prices
    from gitevals.schema import SchemaError

#: Keys a case may never hold, with the reason given when one is refused.
REFUSED_KEYS: dict[str, str] = {
    "suite": "a case tests the tree it lives in; suites of throwaway harnesses do not belong here",
    "agent": "a case never names its target: it tests the harness this tree is "
    "(set [tool.gitevals.target] instead)",
    "tool": "tools are observed in the transcript (use tool_called), not declared by a case",
    "harness_id": "a case tests the harness this tree is, not a harness picked by id",
    "machine_id": "a case does not choose a machine: runs are pinned to commits, not hosts",
    "files": "a case does not ship files: the commit it is pinned to holds them",
}


@dataclass(frozen=True)
class Target:
    """How to start the harness under test: an argv, or ``module:function`` in the tree."""

    command: tuple[str, ...] | None = None
    python: str | None = None
    family: str | None = None  # the model family under test (the judge must differ)
    #: the interpreter a python target runs in, as written (``run.targets.resolve_interpreter``)
    interpreter: str | None = None
    #: ``"many"``: one process of a command target serves many conversations at once
    conversations: str = "one"
    #: ``[target] openai`` or ``[target] http``: a harness served as an API
    endpoint: Endpoint | None = None


@dataclass(frozen=True)
class Endpoint:
    """A harness served over HTTP (``gitevals.run.httpworker``): ``kind`` is ``openai`` (a
    chat-completions API; ``model`` is sent) or ``http`` (a turn in, a reply out); the
    key is read from the variable ``api_key_env`` names, never written in settings."""

    kind: str
    url: str
    model: str | None = None
    api_key_env: str | None = None


@dataclass(frozen=True)
class Settings:
    root: str = "evals"
    refused_keys: dict[str, str] = field(default_factory=lambda: dict(REFUSED_KEYS))
    target: Target | None = None
    judge: Judge | None = None
    source: str | None = None  # the file the settings came from
    raw: JSONObject = field(default_factory=dict)  # the settings table as written
    #: ``[tool.gitevals.tasks] max_instruction_chars``: the longest task instruction.
    max_instruction_chars: int = 4096
    #: ``[tool.gitevals.goldens] graders``: bucket -> grader (``file.function``), sorted.
    golden_graders: dict[str, str] = field(default_factory=dict)
    #: ``[tool.gitevals.statistics]``: the multiple-comparison control and the level.
    control: str = "fdr"
    alpha: float = 0.05
    #: ``results``: where run artifacts go, as written (None: ``<root>/results``).
    results_at: str | None = None

    @property
    def results(self) -> str:
        """The directory of run artifacts in the working tree, relative to the repository:
        the ``results`` setting, else ``<root>/results``."""
        return self.results_at or f"{self.root}/results"

    @property
    def pricing(self) -> Prices:
        """``[tool.gitevals.pricing]``: USD per million tokens per model, read from ``raw``
        when asked (gitevals.prices: only runs that price need it)."""
        from gitevals.prices import prices_of

        return prices_of(self.raw)

    def as_dict(self) -> JSONObject:
        """The settings as recorded in run artifacts (sorted, JSON-safe)."""
        out: JSONObject = json.loads(json.dumps(self.raw, sort_keys=True, default=str))
        return out


def key_position(text: str, key: str, section: str) -> tuple[int, int]:
    """Best-effort line:col of ``key`` inside ``[section]`` (tomllib keeps no positions):
    its ``key = ...`` (or dotted ``key.x = ...``) line, else its table header
    ``[section.key]`` (``[[...]]``, ``[section.key.sub]``), else the section's line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.strip().startswith(f"[{section}]")), None)
    if start is None and "." in section:  # an inline table: ``openai = { ... }``
        parent, _, last = section.rpartition(".")
        return key_position(text, last, parent)
    start = start or 0
    if not key:
        return start + 1, 1
    name = rf"[\"']?{re.escape(key)}[\"']?"
    full = rf"{re.escape(section)}\s*\.\s*{name}" if section else name
    pat = re.compile(rf"^\s*(?:{name}\s*[=.]|\[\[?\s*{full}\s*[\].])")
    for i in range(start, len(lines)):
        if pat.match(lines[i]):
            return i + 1, len(lines[i]) - len(lines[i].lstrip()) + 1
    return start + 1, 1


def _validate(raw: JSON, path: str, text: str, section: str) -> list[Finding]:
    # gitevals.validation's compiled check of schemas/settings.schema.json, worded as
    # lint words schema errors: jsonschema is only imported to explain settings that
    # fail, which keeps the commit hook quick.
    from gitevals.schema import validate

    findings = []
    for err in validate("settings", raw):
        keys = [str(p) for p in err.path]
        sub = ".".join([section, *keys[:-1]]) if len(keys) > 1 else section
        line, col = key_position(text, keys[-1] if keys else "", sub.strip("."))
        where = ".".join(keys) or section or "settings"
        findings.append(Finding(path, line, col, "GE701",
                                f"bad setting {where}: {toml_hint(err)}; "
                                "see docs/guide.md 'Settings'"))
    return findings


# The schema explainer words its advice for YAML case files; settings are TOML.
_YAML_LIST_HINT = "; write a list, one '- item' per line"


def toml_hint(err: SchemaError) -> str:
    """The schema explainer's message, worded for a TOML settings file."""
    message = str(err.message)
    if message.endswith(_YAML_LIST_HINT):
        return message[: -len(_YAML_LIST_HINT)] + '; write a TOML array: ["python3", "harness.py"]'
    if err.keyword == "not" and tuple(err.path) == ("judge", "model"):
        # jsonschema's own words ("should not be valid under {'pattern': ...}") say no fix.
        return ("the model is not pinned ('latest' is refused: a judge that changes under "
                "you changes every score); name a dated snapshot, e.g. judge-model-2026-01-15")
    return message


def _from_raw(raw: JSONObject, source: str) -> Settings:
    """Settings from a schema-valid table (the types are the schema's)."""
    t = raw.get("target")
    target = None
    if isinstance(t, dict):
        cmd = t.get("command")
        target = Target(tuple(str(c) for c in cmd) if isinstance(cmd, list) else None,
                        _text(t.get("python")), _text(t.get("family")),
                        _text(t.get("interpreter")), _text(t.get("conversations")) or "one",
                        _endpoint(t))
    j = raw.get("judge")
    judge = Judge.from_table(j) if isinstance(j, dict) else None
    refused = dict(REFUSED_KEYS)
    extra = raw.get("refused_keys")
    if isinstance(extra, dict):
        refused.update((k, str(v)) for k, v in extra.items())
    tasks = raw.get("tasks")
    most = tasks.get("max_instruction_chars") if isinstance(tasks, dict) else None
    goldens = raw.get("goldens")
    mapped = goldens.get("graders") if isinstance(goldens, dict) else None
    golden_graders = ({str(k): str(v) for k, v in sorted(mapped.items())}
                      if isinstance(mapped, dict) else {})
    stats = raw.get("statistics")
    control = stats.get("control") if isinstance(stats, dict) else None
    alpha = stats.get("alpha") if isinstance(stats, dict) else None
    return Settings(str(raw.get("root", "evals")).strip("/"), refused, target, judge, source, raw,
                    golden_graders=golden_graders, results_at=_text(raw.get("results")),
                    control=control if isinstance(control, str) else "fdr",
                    alpha=float(alpha) if isinstance(alpha, int | float)
                    and not isinstance(alpha, bool) else 0.05,
                    **({"max_instruction_chars": most} if isinstance(most, int) else {}))


def _endpoint(target: JSONObject) -> Endpoint | None:
    """``[target] openai`` / ``[target] http`` of a schema-valid target table, or None."""
    for kind, key in (("openai", "base_url"), ("http", "url")):
        table = target.get(kind)
        if isinstance(table, dict):
            return Endpoint(kind, str(table.get(key)), _text(table.get("model")),
                            _text(table.get("api_key_env")))
    return None


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def load_settings(tree: Tree) -> tuple[Settings, list[Finding]]:
    """Settings of ``tree``: gitevals.toml wins over pyproject.toml; absent -> defaults."""
    for path, section in (("gitevals.toml", ""), ("pyproject.toml", "tool.gitevals")):
        data = tree.read(path)
        if data is None:
            continue
        text, doc, unreadable = parse_toml(data, path)
        if unreadable is not None:
            return Settings(), [unreadable]
        # TOML is JSON plus dates and times, which the settings schema refuses:
        # what passes _validate is JSON.
        raw: JSON = doc
        for part in section.split(".") if section else []:
            raw = raw.get(part, {}) if isinstance(raw, dict) else {}
        if path == "pyproject.toml" and not raw:
            continue
        big = _number_finding(raw, path, text, section) if isinstance(raw, dict) else None
        if big is not None:
            return Settings(source=path), [big]
        findings = _validate(raw, path, text, section or "") or _root_findings(
            raw, path, text, section) or _results_findings(
            raw, path, text, section) or _family_findings(raw, path, text, section)
        if findings or not isinstance(raw, dict):  # the schema's top level is a table
            return Settings(source=path), findings
        return _from_raw(raw, path), []
    return Settings(), []


#: Deepest nesting of arrays and tables a settings file may have. The schema needs
#: three levels; past about 500, tomllib and the validators recurse out of stack.
MAX_DEPTH = 100
#: An integer this long or longer is past what Python converts (``int_max_str_digits``).
_LONG_NUMBER = re.compile(r"[0-9][0-9_]{4299,}")


def parse_toml(data: bytes, path: str, code: str = "GE700", what: str = "settings",
                depth_hint: str = "settings are at most three levels deep"
                ) -> tuple[str, JSONObject, Finding | None]:
    """The text and table of a settings file, or a GE700 finding saying why it cannot be
    read: bad UTF-8 or TOML, nesting past ``MAX_DEPTH``, a number too large to hold.
    (``code``, ``what`` and ``depth_hint`` word it for another TOML file: task.toml.)"""
    text, doc = "", {}
    try:
        text = data.decode("utf-8")
        deep = _too_deep(text)
        if deep is not None:
            return text, {}, Finding(path, deep[0], deep[1], code,
                                     f"cannot read {what}: nested more than {MAX_DEPTH} "
                                     "levels deep; " + depth_hint)
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        line, col = _toml_error_position(str(exc))
        return text, {}, Finding(path, line, col, code,
                                 f"cannot read {what}: {exc}; fix the TOML syntax")
    except (ValueError, RecursionError, MemoryError) as exc:
        # ValueError: an integer past int_max_str_digits; the others: nesting the
        # scan above did not see (it cannot: the parser refused first).
        m = _LONG_NUMBER.search(text)
        line, col = _offset_position(text, m.start()) if m else (1, 1)
        why = "a number too large to read" if m else f"{type(exc).__name__}"
        return text, {}, Finding(path, line, col, code,
                                 f"cannot read {what}: {why}; fix the TOML")
    return text, doc, None


def _number_finding(raw: JSONObject, path: str, text: str, section: str) -> Finding | None:
    """GE700 for the first number of the settings gitevals cannot use, or None."""
    key = too_large(raw)
    if key is None:
        return None
    *parents, last = key.split(".")
    line, col = key_position(text, last, ".".join([section, *parents]).strip("."))
    where = ".".join([section, key]).strip(".")
    return Finding(path, line, col, "GE700",
                   f"cannot read settings: {where} is a number too large to use (or not "
                   "finite); write a number of ordinary size")


def _offset_position(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


_STRUCTURE = re.compile(r"[\[\]{}#\"']")


def _too_deep(text: str) -> tuple[int, int] | None:
    """Where brackets and braces outside strings and comments first nest past
    ``MAX_DEPTH`` (an upper bound on the TOML's own nesting), or None. Linear, no
    recursion: it runs before the parser, which would recurse out of stack."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        m = _STRUCTURE.search(text, i)  # jump over plain text at C speed
        if m is None:
            return None
        i = m.start()
        c = text[i]
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return _offset_position(text, i)
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            i = _string_end(text, i)
            continue
        i += 1
    return None


def _string_end(text: str, i: int) -> int:
    """The offset just past the TOML string starting at ``i`` (basic, literal, multi-line)."""
    q = text[i]
    if text.startswith(q * 3, i):
        end = text.find(q * 3, i + 3)
        while q == '"' and end > 0 and _escaped(text, end):
            end = text.find(q * 3, end + 1)
        return len(text) if end < 0 else end + 3
    j = i + 1
    while j < len(text) and text[j] not in (q, "\n"):
        j += 2 if q == '"' and text[j] == "\\" else 1
    return j + 1


def _escaped(text: str, at: int) -> bool:
    backslashes = len(text[:at]) - len(text[:at].rstrip("\\"))
    return backslashes % 2 == 1


def too_large(doc: JSONObject) -> str | None:
    """The dotted key of the first number gitevals cannot use (past 64 bits, or an
    infinite or NaN float, which TOML allows and JSON cannot hold), or None."""
    stack: list[tuple[str, object]] = [("", doc)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}".lstrip("."), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)
        elif not _usable_number(value):
            return key
    return None


def _usable_number(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return not isinstance(value, int) or -(2**63) <= value < 2**63
def root_problem(root: str) -> str | None:
    """Why ``root`` is not a normalized relative posix path inside the repository, or None.

    What lint checks must be what run runs: ``./evals``, ``evals/.``, ``evals/cases/..``
    and ``evals/`` name the same directory by other spellings that prefix matches miss,
    and an absolute path or ``..`` leaves the repository.
    """
    if "\\" in root:
        return "uses a backslash"
    if root.startswith("/") or re.match(r"^[A-Za-z]:", root):
        return "is an absolute path"
    norm = posixpath.normpath(root) if root else root
    if norm == ".." or norm.startswith("../"):
        return "leaves the repository"
    if root != norm or root == "." or "\0" in root:
        return "is not in normal form"
    return None


def _root_findings(raw: JSON, path: str, text: str, section: str) -> list[Finding]:
    root = raw.get("root") if isinstance(raw, dict) else None
    if not isinstance(root, str) or (why := root_problem(root)) is None:
        return []
    norm = posixpath.normpath(root.replace("\\", "/")).lstrip("/")
    hint = (f'write root = "{norm}"' if norm not in (".", "") and not norm.startswith("..")
            else 'name a directory inside the repository, like root = "evals"')
    line, col = key_position(text, "root", section)
    return [Finding(path, line, col, "GE703",
                    f"root {root!r} {why}: the root is a relative path inside the "
                    f"repository, in normal form (no '.', '..', trailing '/' or '\\'); {hint}")]


def _results_findings(raw: JSON, path: str, text: str, section: str) -> list[Finding]:
    """GE705 when ``results`` is not a normal relative path inside the repository, or is
    the eval root or a directory holding it: runs written there would sit among (or
    above) the cases lint checks and a run pins."""
    results = raw.get("results") if isinstance(raw, dict) else None
    if not isinstance(results, str):
        return []
    root = raw.get("root", "evals") if isinstance(raw, dict) else "evals"
    why = root_problem(results)
    if why is None and isinstance(root, str) and (results == root
                                                  or root.startswith(results + "/")):
        why = f"is the eval root {root!r} or holds it"
    if why is None:
        return []
    line, col = key_position(text, "results", section)
    return [Finding(path, line, col, "GE705",
                    f"results {results!r} {why}: run artifacts go to a directory of their own, "
                    "a relative path inside the repository in normal form; write e.g. "
                    'results = "runs" (or leave it out for <root>/results)')]


def _toml_error_position(message: str) -> tuple[int, int]:
    m = re.search(r"line (\d+), column (\d+)", message)
    return (int(m.group(1)), int(m.group(2))) if m else (1, 1)


def unset_families(settings: Settings, text: str) -> list[Finding]:
    """GE706 (a warning) for the judge's or the target's ``family`` left unset while a
    judge is configured: then nothing checks that the judge comes from another model
    family than the model under test (GE704), and silence would read as a pass."""
    if settings.judge is None or settings.source is None:
        return []
    section = "" if settings.source == "gitevals.toml" else "tool.gitevals"
    tables = [("judge", settings.judge.family),
              ("target", settings.target.family if settings.target else None)]
    out = []
    for table, family in tables:
        if family is None:
            line, col = key_position(text, table, section)
            where = f"[{section}.{table}]" if section else f"[{table}]"
            out.append(Finding(settings.source, line, col, "GE706",
                               f"{table} family is not set: nothing checks that the judge "
                               "comes from another model family than the model under test "
                               f"(GE704); set family = \"...\" in {where}", "warning"))
    return out


def _family_findings(raw: JSON, path: str, text: str, section: str) -> list[Finding]:
    """GE704 when the judge's model family is the target's: a judge grades its own
    family's habits kindly, so it must come from another one."""
    if not isinstance(raw, dict):
        return []
    judge, target = raw.get("judge"), raw.get("target")
    jf = judge.get("family") if isinstance(judge, dict) else None
    tf = target.get("family") if isinstance(target, dict) else None
    if not (isinstance(jf, str) and isinstance(tf, str)) or jf.strip().casefold() != \
            tf.strip().casefold():
        return []
    line, col = key_position(text, "family", ".".join([section, "judge"]).strip("."))
    return [Finding(path, line, col, "GE704",
                    f"judge family {jf!r} is the target's family: a judge must come from "
                    "another model family than the model under test; pin a judge model of "
                    "another family and set its family")]
