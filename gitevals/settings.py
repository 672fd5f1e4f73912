"""``[tool.gitevals]`` (pyproject.toml) or a root ``gitevals.toml`` -> ``Settings``.

Settings are read through a ``Tree`` so they come from the same revision as the
cases they govern. Bad settings are findings, never exceptions.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitevals.findings import Finding
from gitevals.git.tree import Tree
from gitevals.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from gitevals.lint.schema import SchemaError

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


@dataclass(frozen=True)
class Judge:
    """An OpenAI-compatible endpoint for ``t.llm`` with a pinned model."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 60.0


@dataclass(frozen=True)
class Settings:
    root: str = "evals"
    refused_keys: dict[str, str] = field(default_factory=lambda: dict(REFUSED_KEYS))
    target: Target | None = None
    judge: Judge | None = None
    source: str | None = None  # the file the settings came from
    raw: JSONObject = field(default_factory=dict)  # the settings table as written

    def as_dict(self) -> JSONObject:
        """The settings as recorded in run artifacts (sorted, JSON-safe)."""
        out: JSONObject = json.loads(json.dumps(self.raw, sort_keys=True, default=str))
        return out


def _key_position(text: str, key: str, section: str) -> tuple[int, int]:
    """Best-effort line:col of ``key`` inside ``[section]`` (tomllib keeps no positions)."""
    lines = text.splitlines()
    start = 0
    for i, line in enumerate(lines):
        if line.strip().startswith(f"[{section}]"):
            start = i
            break
    pat = re.compile(rf"^\s*{re.escape(key)}\s*=") if key else None
    for i in range(start, len(lines)):
        if pat is None:
            return start + 1, 1
        m = pat.match(lines[i])
        if m:
            return i + 1, len(lines[i]) - len(lines[i].lstrip()) + 1
    return start + 1, 1


def _validate(raw: JSON, path: str, text: str, section: str) -> list[Finding]:
    # gitevals.validation's compiled check of schemas/settings.schema.json, worded as
    # lint words schema errors: jsonschema is only imported to explain settings that
    # fail, which keeps the commit hook quick.
    from gitevals.lint.schema import validate

    findings = []
    for err in validate("settings", raw):
        keys = [str(p) for p in err.path]
        sub = ".".join([section, *keys[:-1]]) if len(keys) > 1 else section
        line, col = _key_position(text, keys[-1] if keys else "", sub.strip("."))
        where = ".".join(keys) or section or "settings"
        findings.append(Finding(path, line, col, "GE701",
                                f"bad setting {where}: {_toml_hint(err)}; "
                                "see README 'Settings'"))
    return findings


# The schema explainer words its advice for YAML case files; settings are TOML.
_YAML_LIST_HINT = "; write a list, one '- item' per line"


def _toml_hint(err: SchemaError) -> str:
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
                        _text(t.get("python")))
    j = raw.get("judge")
    judge = None
    if isinstance(j, dict) and "base_url" in j and "model" in j:
        timeout = j.get("timeout", 60.0)
        judge = Judge(str(j["base_url"]), str(j["model"]), _text(j.get("api_key_env")),
                      float(timeout) if isinstance(timeout, int | float) else 60.0)
    refused = dict(REFUSED_KEYS)
    extra = raw.get("refused_keys")
    if isinstance(extra, dict):
        refused.update((k, str(v)) for k, v in extra.items())
    return Settings(str(raw.get("root", "evals")).strip("/"), refused, target, judge, source, raw)


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def load_settings(tree: Tree) -> tuple[Settings, list[Finding]]:
    """Settings of ``tree``: gitevals.toml wins over pyproject.toml; absent -> defaults."""
    for path, section in (("gitevals.toml", ""), ("pyproject.toml", "tool.gitevals")):
        data = tree.read(path)
        if data is None:
            continue
        try:
            text = data.decode("utf-8")
            doc = tomllib.loads(text)
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            line, col = _toml_error_position(str(exc))
            return Settings(), [Finding(path, line, col, "GE700",
                                        f"cannot read settings: {exc}; fix the TOML syntax")]
        # TOML is JSON plus dates and times, which the settings schema refuses:
        # what passes _validate is JSON.
        raw: JSON = doc
        for part in section.split(".") if section else []:
            raw = raw.get(part, {}) if isinstance(raw, dict) else {}
        if path == "pyproject.toml" and not raw:
            continue
        findings = _validate(raw, path, text, section or "") or _root_findings(
            raw, path, text, section)
        if findings or not isinstance(raw, dict):  # the schema's top level is a table
            return Settings(source=path), findings
        return _from_raw(raw, path), []
    return Settings(), []


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
    line, col = _key_position(text, "root", section)
    return [Finding(path, line, col, "GE703",
                    f"root {root!r} {why}: the root is a relative path inside the "
                    f"repository, in normal form (no '.', '..', trailing '/' or '\\'); {hint}")]


def _toml_error_position(message: str) -> tuple[int, int]:
    m = re.search(r"line (\d+), column (\d+)", message)
    return (int(m.group(1)), int(m.group(2))) if m else (1, 1)
