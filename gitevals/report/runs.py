"""Reporters for run artifacts: verdict tables as text, JSON, JUnit XML and Markdown.

Each takes a finished (scored) artifact dict and returns a string; none decides
anything or prints. ``render(artifact, fmt)`` picks one. "fail" (the target answered
wrongly) and "broken" (every trial lost to an infrastructure error) are told apart
in every format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.report.text import one_line, visible
from gitevals.run.artifact import VERDICTS, scenarios

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from gitevals.run.artifact import Run, ScenarioRun

FORMATS = ("text", "json", "junit", "markdown")
_XML_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")
_STYLE = {"pass": "green", "flaky": "yellow", "fail": "red", "broken": "bold magenta",
          "not_run": "dim"}
_MARK = {"pass": "✅", "flaky": "⚠️", "fail": "❌", "broken": "💥", "not_run": "⏭️"}


@dataclass(frozen=True)
class Row:
    """One scenario of the verdict table."""

    case: str
    scenario: str
    verdict: str
    passes: int
    trials: int
    first_failure: str
    errors: dict[str, int]
    duration_ms: int

    @property
    def ratio(self) -> str:
        return f"{self.passes}/{self.trials}"




def _note(scenario: ScenarioRun) -> str:
    v = scenario["verdict"]
    if v["first_failure"]:
        return one_line(v["first_failure"])
    if v["verdict"] == "not_run":
        return "only in the rules: not run" if scenario.get("rules") == "added" else "not run"
    return ""


def _duration(scenario: ScenarioRun) -> int:
    total = 0
    for r in scenario["results"]:
        ms = r["transcript"]["duration_ms"]
        total += ms if isinstance(ms, int) and not isinstance(ms, bool) else 0
    return total


def rows(run: Run) -> list[Row]:
    """The verdict table: one row per scenario, cases in run order (sorted by name)."""
    out = []
    for case, s in scenarios(run):
        v = s["verdict"]
        out.append(Row(case["name"], s["id"], v["verdict"], v["passes"], v["trials"],
                       _note(s), dict(v["errors"]), _duration(s)))
    return out


def counts(table: list[Row]) -> dict[str, int]:
    """Scenarios per verdict, every verdict present."""
    out: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for r in table:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out


def summary(table: list[Row]) -> str:
    """``3 pass, 1 flaky, 1 fail, 0 broken`` (``, 2 not run`` only when some were not)."""
    c = counts(table)
    text = f"{c['pass']} pass, {c['flaky']} flaky, {c['fail']} fail, {c['broken']} broken"
    return text + (f", {c['not_run']} not run" if c["not_run"] else "")


def _title(run: Run) -> str:
    text = f"run {visible(run['run_id'])} of {visible(run['rev'])} ({run['commit'][:12]})"
    scored = run.get("scored_with") or {}
    if scored.get("rules_rev"):
        rules_commit = str(scored.get("rules_commit") or "")[:12]
        text += (f", scored with the rules of {visible(scored.get('rules_rev'))} "
                 f"({visible(rules_commit)})")
    if run["dirty"]:  # --allow-dirty: the commit ran, the working tree differed
        text += ", dirty"
    if run["interrupted"]:
        text += ", interrupted"
    return text


# -- text ---------------------------------------------------------------------------

HEADER = ("case", "scenario", "verdict", "passes", "first failure")


def _cells(r: Row) -> tuple[str, str, str, str, str]:
    return (visible(r.case), visible(r.scenario), r.verdict.replace("_", " "), r.ratio,
            r.first_failure)


def plain(artifact: Run) -> str:
    """Aligned columns for pipes and files: title, header, a row per scenario, summary."""
    table = rows(artifact)
    lines = [_title(artifact)]
    if table:
        cells = [HEADER, *(_cells(r) for r in table)]
        widths = [max(len(c[i]) for c in cells) for i in range(4)]
        lines += ["  ".join([*(c[i].ljust(widths[i]) for i in range(4)), c[4]]).rstrip()
                  for c in cells]
    else:
        lines.append("no scenarios")
    lines.append(summary(table))
    return "\n".join(lines) + "\n"


def rich_text(artifact: Run, width: int | None = None) -> str:
    """A rich table with coloured verdicts, rendered to a string for a terminal."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(_title(artifact)), title_justify="left", box=None,
                  pad_edge=False)
    for name in HEADER:
        table.add_column(name, overflow="fold", no_wrap=name != "first failure")
    data = rows(artifact)
    for r in data:
        case, scenario, verdict, ratio, first = _cells(r)
        table.add_row(Text(case), Text(scenario), Text(verdict, style=_STYLE.get(r.verdict, "")),
                      Text(ratio), Text(first))
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, highlight=False,
                      color_system="standard", legacy_windows=False)
    console.print(table)
    console.print(Text(summary(data), style="bold"))
    return buf.getvalue()


# -- json -----------------------------------------------------------------------------


def as_json(artifact: Run) -> str:
    """The verdict table as sorted JSON (one object; scenarios in table order)."""
    table = rows(artifact)
    doc: dict[str, object] = {
        "run_id": artifact["run_id"], "commit": artifact["commit"],
        "rev": artifact["rev"], "interrupted": artifact["interrupted"],
        "summary": counts(table),
        "scenarios": [{"case": r.case, "scenario": r.scenario, "verdict": r.verdict,
                       "passes": r.passes, "trials": r.trials,
                       "first_failure": r.first_failure or None, "errors": r.errors}
                      for r in table],
    }
    if "scored_with" in artifact:
        doc["scored_with"] = artifact["scored_with"]
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# -- junit ----------------------------------------------------------------------------


def junit(artifact: Run) -> str:
    """JUnit XML: a testsuite per case, a testcase per scenario.

    flaky and fail -> <failure>, broken -> <error>, not_run -> <skipped>; the first
    failure is the message.
    """
    import xml.etree.ElementTree as ET

    table = rows(artifact)
    c = counts(table)
    root = ET.Element("testsuites", {
        "name": "gitevals", "tests": str(len(table)), "failures": str(c["flaky"] + c["fail"]),
        "errors": str(c["broken"]), "skipped": str(c["not_run"]),
        "time": _secs(sum(r.duration_ms for r in table))})
    for case in dict.fromkeys(r.case for r in table):
        _suite(root, case, [r for r in table if r.case == case])
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _secs(ms: int) -> str:
    return f"{ms / 1000:.3f}"


def _suite(root: Element, case: str, table: list[Row]) -> None:
    import xml.etree.ElementTree as ET

    c = counts(table)
    suite = ET.SubElement(root, "testsuite", {
        "name": case, "tests": str(len(table)), "failures": str(c["flaky"] + c["fail"]),
        "errors": str(c["broken"]), "skipped": str(c["not_run"]),
        "time": _secs(sum(r.duration_ms for r in table))})
    for r in table:
        tc = ET.SubElement(suite, "testcase", {"classname": case, "name": r.scenario,
                                               "time": _secs(r.duration_ms)})
        detail = f"{r.verdict}: {r.ratio} trials passed"
        if r.errors:
            detail += "; errors: " + ", ".join(f"{k} x{n}" for k, n in sorted(r.errors.items()))
        if r.first_failure:
            detail += f"\nfirst failure: {r.first_failure}"
        tag = {"flaky": "failure", "fail": "failure", "broken": "error",
               "not_run": "skipped"}.get(r.verdict)
        if tag is not None:
            el = ET.SubElement(tc, tag, {"message": r.first_failure or r.verdict,
                                         "type": r.verdict})
            el.text = _xml_safe(detail)


def _xml_safe(text: str) -> str:
    # XML 1.0 cannot hold most control characters at all, escaped or not.
    return _XML_BAD.sub(" ", text)


# -- markdown ---------------------------------------------------------------------------


def _md(text: str) -> str:
    """A table cell: pipes escaped, HTML neutralised, one line."""
    return (one_line(text).replace("\\", "\\\\").replace("|", "\\|")
            .replace("<", "&lt;").replace(">", "&gt;"))


def markdown(artifact: Run) -> str:
    """A PR-comment table: title, summary, one row per scenario."""
    table = rows(artifact)
    lines = [f"**gitevals** {_md(_title(artifact))}", "", f"**{summary(table)}**", ""]
    if table:
        lines += ["| case | scenario | verdict | passes | first failure |",
                  "|---|---|---|---|---|"]
        lines += [f"| {_md(r.case)} | {_md(r.scenario)} | {_MARK.get(r.verdict, '')} "
                  f"{r.verdict.replace('_', ' ')} | {r.ratio} | {_md(r.first_failure)} |"
                  for r in table]
    return "\n".join(lines) + "\n"


REPORTERS: dict[str, Callable[[Run], str]] = {
    "text": plain,
    "json": as_json,
    "junit": junit,
    "markdown": markdown,
}


def render(artifact: Run, fmt: str, terminal: bool = False,
           width: int | None = None) -> str:
    """``artifact`` in format ``fmt``; ``text`` on a ``terminal`` is a rich table."""
    if fmt == "text" and terminal:
        return rich_text(artifact, width)
    return REPORTERS[fmt](artifact)
