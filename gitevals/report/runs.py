"""Reporters for run artifacts: verdict tables as text, JSON, JUnit XML and Markdown.

Each takes a finished (scored) artifact dict and returns a string; none decides
anything or prints. ``render(artifact, fmt)`` picks one. "fail" (the target answered
wrongly) and "broken" (every trial lost to an infrastructure error) are told apart
in every format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.run.artifact import (
    MEASURES,
    NO_USAGE,
    VERDICTS,
    Measure,
    Usage,
    duration_text,
    scenario_ms,
    scenarios,
    usages,
)
from gitevals.text import md_inert, one_line, visible, xml_text

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from gitevals.run.artifact import Run, ScenarioRun
    from gitevals.run.goldens import SuiteItem
    from gitevals.stats.judge_correction import Corrected

FORMATS = ("text", "json", "junit", "markdown")
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
    usage: Usage = NO_USAGE
    #: the pass rate corrected for its calibrated judge's errors, when one decided every
    #: trial (``gitevals.calibration.corrected``)
    corrected: Corrected | None = None

    @property
    def ratio(self) -> str:
        return f"{self.passes}/{self.trials}"


@dataclass(frozen=True)
class Refused:
    """A selected case lint refused to run: reported as a failure, never left out.
    ``findings`` are its error findings as lint prints them (``path:line:col: CODE ...``)."""

    case: str
    findings: tuple[str, ...]


def _note(scenario: ScenarioRun) -> str:
    v = scenario["verdict"]
    if v["first_failure"]:
        return one_line(v["first_failure"])
    from gitevals.report.calibration import advisory_failure

    advisory = advisory_failure(scenario)
    if advisory:
        return one_line(advisory)
    if v["verdict"] == "not_run":
        return "only in the rules: not run" if scenario.get("rules") == "added" else "not run"
    return ""


def rows(run: Run) -> list[Row]:
    """The verdict table: one row per scenario, cases in run order (sorted by name)."""
    return table_and_usage(run)[0]


def table_and_usage(run: Run) -> tuple[list[Row], Usage]:
    """The verdict table (``rows``) and the run's usage (``run_usage``), its trials read
    once: every format shows both."""
    from gitevals.calibration.corrected import corrections

    fixed = corrections(run)
    used, whole = usages(run)
    out = []
    for (case, s), u in zip(scenarios(run), used, strict=True):
        v = s["verdict"]
        out.append(Row(case["name"], s["id"], v["verdict"], v["passes"], v["trials"],
                       _note(s), dict(v["errors"]), scenario_ms(s), u,
                       fixed.get((case["name"], s["id"]))))
    return out, whole


def counts(table: list[Row]) -> dict[str, int]:
    """Scenarios per verdict, every verdict present."""
    out: dict[str, int] = dict.fromkeys(VERDICTS, 0)
    for r in table:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out


def summary(table: list[Row]) -> str:
    """``3 pass, 1 flaky, 1 fail, 0 broken`` (``, 2 not run`` only when some were not)."""
    return _tally_text(counts(table))


def _tally_text(c: dict[str, int]) -> str:
    text = f"{c['pass']} pass, {c['flaky']} flaky, {c['fail']} fail, {c['broken']} broken"
    return text + (f", {c['not_run']} not run" if c["not_run"] else "")


def _title(run: Run) -> str:
    text = f"run {visible(run['run_id'])} of {visible(run['rev'])} ({run['commit'][:12]})"
    scored = run.get("scored_with") or {}
    if scored.get("rules_rev"):
        rules_commit = str(scored.get("rules_commit") or "")[:12]
        text += (f", scored with the rules of {visible(scored.get('rules_rev'))} "
                 f"({visible(rules_commit)})")
    if run.get("target_env"):  # --target-env, an experiment lane's env: (secrets hashed)
        from gitevals.run.targetenv import shown

        text += f", target env {visible(shown(run['target_env']))}"
    if run["dirty"]:  # --allow-dirty: the commit ran, the working tree differed
        text += ", dirty"
    if run["interrupted"]:
        text += ", interrupted"
    return text


# -- usage (tokens and cost the replies reported) --------------------------------------


def _number(value: int | float | None) -> str:
    if value is None:
        return "?"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def _tokens(u: Usage) -> tuple[str, int] | None:
    """``1,234 in / 567 out`` and how many trials reported both, or None when none did."""
    p, c = u.get("prompt_tokens"), u.get("completion_tokens")
    if p.total is None and c.total is None:
        return None
    return f"{_number(p.total)} in / {_number(c.total)} out", min(p.reported, c.reported)


def usage_line(u: Usage) -> str | None:
    """``tokens 1,234 in / 567 out (2 of 5 trials reported none); cost 0.0123``, or None
    when no reply reported anything. Missing counts are said, never summed as zeros."""
    parts = []
    tokens, cost = _tokens(u), u.get("cost")
    if tokens is not None:
        parts.append(f"tokens {tokens[0]}{_missing(u.trials, tokens[1])}")
    if cost.total is not None:
        parts.append(f"cost {_number(cost.total)}{_missing(u.trials, cost.reported)}")
    return "; ".join(parts) or None


def judge_line(artifact: Run) -> str | None:
    """``judge: 12 calls; tokens 3,400 in / 120 out; cost 0.0123``: the judge's usage,
    apart from the target's; None when no grader asked the judge."""
    from gitevals.run.pricing import judge_usage

    u = judge_usage(artifact)
    if not u.calls:
        return None
    parts = [f"judge: {u.calls:,} call{'s' * (u.calls != 1)}"]
    if u.reported:
        none = (f" ({u.calls - u.reported} of {u.calls} calls reported none)"
                if u.reported < u.calls else "")
        parts.append(f"tokens {_number(u.prompt_tokens)} in / {_number(u.completion_tokens)}"
                     f" out{none}")
    if u.cost is not None:
        parts.append(f"cost {_number(u.cost)}")
    return "; ".join(parts)


def judge_json(artifact: Run) -> dict[str, object]:
    from gitevals.run.pricing import judge_usage

    u = judge_usage(artifact)
    return {"calls": u.calls, "reported": u.reported, "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens, "cost": u.cost}


def _missing(trials: int, reported: int) -> str:
    return f" ({trials - reported} of {trials} trials reported none)" if reported < trials else ""


def tokens_cell(u: Usage) -> str:
    tokens = _tokens(u)
    if tokens is None:
        return ""
    partial = f" ({tokens[1]} of {u.trials} trials)" if tokens[1] < u.trials else ""
    return tokens[0].replace(" in / ", "/").removesuffix(" out") + partial


def cost_cell(u: Usage) -> str:
    cost = u.get("cost")
    if cost.total is None:
        return ""
    partial = f" ({cost.reported} of {u.trials} trials)" if cost.reported < u.trials else ""
    return _number(cost.total) + partial


def usage_json(u: Usage) -> dict[str, object]:
    """Each measure's total (null when no trial reported it) and the trials that did."""
    doc: dict[str, object] = {name: m.total for name, m in zip(MEASURES, u.measures,
                                                                strict=True)}
    doc["trials"] = u.trials
    doc["reported"] = {name: m.reported for name, m in zip(MEASURES, u.measures, strict=True)}
    return doc


def usage_from_json(doc: Mapping[str, object]) -> Usage:
    """The ``Usage`` that ``usage_json`` wrote as ``doc`` (what it cannot read counts as
    not reported)."""
    reported = doc.get("reported")
    counts = reported if isinstance(reported, dict) else {}
    return Usage(_count(doc.get("trials")),
                 tuple(Measure(_total(doc.get(m)), _count(counts.get(m))) for m in MEASURES))


def _total(value: object) -> int | float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _columns(table: list[Row]) -> list[tuple[str, Callable[[Row], str]]]:
    """The verdict table's columns: usage ones only when some reply reported usage."""
    cols: list[tuple[str, Callable[[Row], str]]] = [
        ("case", lambda r: visible(r.case)), ("scenario", lambda r: visible(r.scenario)),
        ("verdict", lambda r: r.verdict.replace("_", " ")), ("passes", lambda r: r.ratio),
        ("duration", lambda r: duration_text(r.duration_ms) if r.trials else "")]
    if any(_tokens(r.usage) for r in table):
        cols.append(("tokens in/out", lambda r: tokens_cell(r.usage)))
    if any(r.usage.get("cost").total is not None for r in table):
        cols.append(("cost", lambda r: cost_cell(r.usage)))
    if any(r.corrected is not None for r in table):
        cols.append((CORRECTED, corrected_cell))
    return [*cols, ("first failure", lambda r: r.first_failure)]


#: The column (and JSON fields) of a rate corrected for a calibrated judge's errors.
CORRECTED = "judge-corrected"


def corrected_cell(r: Row) -> str:
    from gitevals.calibration.corrected import cell

    return cell(r.corrected) if r.corrected is not None else ""


def corrected_line(table: list[Row]) -> str | None:
    """What the judge-corrected column is, once, under a table that has it."""
    n = sum(r.corrected is not None for r in table)
    if not n:
        return None
    return (f"{CORRECTED}: {n} scenario{'s' * (n != 1)} decided by a calibrated judge alone, "
            "pass rate corrected for its errors (Rogan-Gladen, 95% interval with the "
            "calibration's uncertainty; docs/statistics.md)")


# -- text ---------------------------------------------------------------------------

HEADER = ("case", "scenario", "verdict", "passes", "duration", "first failure")


def _closing(artifact: Run, table: list[Row], used: Usage, tail: str) -> list[str]:
    """The last lines: usage when reported, then the summary (and ``tail``: run adds how
    long it took and where the artifact is)."""
    from gitevals.report.calibration import run_line

    line = usage_line(used)
    judged = run_line(artifact.get("judge_calibration"))
    weak = underpowered_line(table)
    fixed = corrected_line(table)
    spent = judge_line(artifact)
    return [*([judged] if judged else []), *([fixed] if fixed else []),
            *([weak] if weak else []),
            *([line] if line else []), *([spent] if spent else []), summary(table) + tail]


def _underpowered(r: Row) -> bool:
    """Too few trials for ``diff`` to call a 20-point drop from this rate (power 0.8)."""
    from gitevals.diff.power import underpowered

    return r.trials > 0 and underpowered(r.trials, r.passes / r.trials)


def underpowered_line(table: list[Row]) -> str | None:
    """``underpowered: 2 of 5 scenarios ...``, or None when every scenario has enough."""
    weak = sum(map(_underpowered, table))
    if not weak:
        return None
    return (f"underpowered: {weak} of {len(table)} scenario{'s' * (len(table) != 1)} cannot "
            "show a 20-point drop beyond noise with their trials (`gitevals plan` says how "
            "many they need)")


def plain(artifact: Run, tail: str = "") -> str:
    """Aligned columns for pipes and files: title, header, a row per scenario, summary."""
    table, used = table_and_usage(artifact)
    lines = [_title(artifact)]
    if table:
        cols = _columns(table)
        cells = [[name for name, _ in cols], *([cell(r) for _, cell in cols] for r in table)]
        last = len(cols) - 1
        widths = [max(len(c[i]) for c in cells) for i in range(last)]
        lines += ["  ".join([*(c[i].ljust(widths[i]) for i in range(last)), c[last]]).rstrip()
                  for c in cells]
    else:
        lines.append("no scenarios")
    lines += _closing(artifact, table, used, tail)
    return "\n".join(lines) + "\n"


#: The verdict table's columns that wrap on a narrow terminal, and the width each keeps.
_FLEX = {"case": 8, "scenario": 14, "first failure": 24}


def _caps(width: int, cols: list[tuple[str, Callable[[Row], str]]],
          data: list[Row]) -> dict[str, int]:
    """The widest the case and scenario columns may be when the table is wider than
    ``width``: a sixth and a third of what the short columns leave, so the failure keeps
    the rest (rich would narrow the widest columns to one width, the failure's too)."""
    natural = {name: max([len(name), *(len(cell(r)) for r in data)]) + 2 for name, cell in cols}
    if sum(natural.values()) <= width:
        return {}
    left = width - sum(w for name, w in natural.items() if name not in _FLEX)
    return {"case": max(_FLEX["case"], left // 6), "scenario": max(_FLEX["scenario"], left // 3)}


def rich_text(artifact: Run, width: int | None = None, tail: str = "") -> str:
    """A rich table with coloured verdicts, rendered to a string for a terminal."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(_title(artifact)), title_justify="left", box=None,
                  pad_edge=False)
    data, used = table_and_usage(artifact)
    cols = _columns(data)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, highlight=False,
                      color_system="standard", legacy_windows=False)
    caps = _caps(console.width, cols, data)
    for name, _ in cols:
        # names and the failure share what a narrow terminal leaves (each keeps a
        # readable width); the short columns never wrap
        table.add_column(name, overflow="fold", no_wrap=name not in _FLEX,
                         min_width=_FLEX.get(name), max_width=caps.get(name))
    for r in data:
        table.add_row(*(Text(cell(r), style=_STYLE.get(r.verdict, "") if name == "verdict"
                             else "") for name, cell in cols))
    console.print(table)
    *before, last = _closing(artifact, data, used, tail)
    for line in before:
        console.print(Text(line))
    console.print(Text(last, style="bold"))
    return buf.getvalue()


# -- json -----------------------------------------------------------------------------


def as_json(artifact: Run) -> str:
    """The verdict table as sorted JSON (one object; scenarios in table order)."""
    table, used = table_and_usage(artifact)
    doc: dict[str, object] = {
        "run_id": artifact["run_id"], "commit": artifact["commit"],
        "rev": artifact["rev"], "interrupted": artifact["interrupted"],
        "summary": counts(table), "usage": usage_json(used),
        "judge_usage": judge_json(artifact),
        "scenarios": [{"case": r.case, "scenario": r.scenario, "verdict": r.verdict,
                       "passes": r.passes, "trials": r.trials,
                       "duration_ms": r.duration_ms,
                       "first_failure": r.first_failure or None, "errors": r.errors,
                       "usage": usage_json(r.usage), "underpowered": _underpowered(r),
                       **(r.corrected.as_json() if r.corrected is not None else {})}
                      for r in table],
    }
    if "scored_with" in artifact:
        doc["scored_with"] = artifact["scored_with"]
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# -- junit ----------------------------------------------------------------------------

#: The element a verdict becomes in JUnit (pass: none).
_JUNIT_TAG = {"flaky": "failure", "fail": "failure", "broken": "error", "not_run": "skipped"}


@dataclass(frozen=True)
class _TestCase:
    """One JUnit ``<testcase>``, before it is XML: ``tag`` is failure/error/skipped/None."""

    suite: str
    name: str
    ms: int
    tag: str | None
    kind: str
    message: str
    detail: str


def _from_row(r: Row) -> _TestCase:
    detail = f"{r.verdict}: {r.ratio} trials passed"
    if r.errors:
        detail += "; errors: " + ", ".join(f"{k} x{n}" for k, n in sorted(r.errors.items()))
    if r.first_failure:
        detail += f"\nfirst failure: {r.first_failure}"
    return _TestCase(r.case, r.scenario, r.duration_ms, _JUNIT_TAG.get(r.verdict), r.verdict,
                     r.first_failure or r.verdict, detail)


def _from_refused(r: Refused) -> _TestCase:
    first = r.findings[0] if r.findings else "the case does not lint"
    return _TestCase(r.case, "lint", 0, "failure", "lint", one_line(first),
                     "refused by lint, not run:\n" + "\n".join(r.findings or (first,)))


def _from_golden(it: SuiteItem) -> _TestCase:
    """A golden as a testcase of the testsuite ``<kind> <slice>`` (``bucket format``):
    an infrastructure error is an <error>, a golden judged fail a <failure>."""
    from gitevals.report.suite import why

    lost = it["error"] is not None or (it["outcome"] is not None
                                       and it["outcome"]["error"] is not None)
    tag = None if it["passed"] else "error" if lost else "failure"
    text = why(it) if tag else ""
    return _TestCase(f"{it['kind']} {it['slice']}", it["id"],
                     int(it["transcript"]["duration_ms"]), tag, "golden", one_line(text),
                     f"{it['path']}:{it['line']}: {text}")


def junit(artifact: Run | None, refused: Sequence[Refused] = ()) -> str:
    """JUnit XML that the Jenkins xunit plugin's ``junit-10.xsd`` accepts: a testsuite per
    case, a testcase per scenario; a case lint refused is one failing testcase ``lint``;
    a testsuite per goldens slice, a testcase per golden.

    flaky and fail -> <failure>, broken -> <error>, not_run -> <skipped>; the first
    failure is the message. Every name and value passes through ``xml_text``.
    """
    import xml.etree.ElementTree as ET

    cases = [_from_row(r) for r in (rows(artifact) if artifact is not None else [])]
    cases += [_from_refused(r) for r in refused]
    part = artifact.get("goldens") if artifact is not None else None
    cases += [_from_golden(it) for it in part["items"]] if part is not None else []
    # junit-10.xsd allows "skipped" on <testsuite> only
    totals = {k: v for k, v in _tally(cases).items() if k != "skipped"}
    root = ET.Element("testsuites", {"name": "gitevals", **totals})
    for suite in dict.fromkeys(c.suite for c in cases):
        _suite(root, suite, [c for c in cases if c.suite == suite])
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _tally(cases: list[_TestCase]) -> dict[str, str]:
    tags = [c.tag for c in cases]
    return {"tests": str(len(cases)), "failures": str(tags.count("failure")),
            "errors": str(tags.count("error")), "skipped": str(tags.count("skipped")),
            "time": _secs(sum(c.ms for c in cases))}


def _secs(ms: int) -> str:
    return f"{ms / 1000:.3f}"


def _suite(root: Element, name: str, cases: list[_TestCase]) -> None:
    import xml.etree.ElementTree as ET

    suite = ET.SubElement(root, "testsuite", {"name": xml_text(name), **_tally(cases)})
    for c in cases:
        tc = ET.SubElement(suite, "testcase", {"classname": xml_text(name),
                                               "name": xml_text(c.name), "time": _secs(c.ms)})
        if c.tag is not None:
            el = ET.SubElement(tc, c.tag, {"message": xml_text(c.message),
                                           "type": xml_text(c.kind)})
            el.text = xml_text(c.detail)


# -- markdown ---------------------------------------------------------------------------


def markdown(artifact: Run | None, refused: Sequence[Refused] = ()) -> str:
    """A PR-comment table: title, summary, one row per scenario (and per case lint
    refused). Every cell is data made inert (``md_inert``): no HTML, link or image."""
    table, used = table_and_usage(artifact) if artifact is not None else ([], NO_USAGE)
    head = md_inert(_title(artifact)) if artifact is not None else "nothing was run"
    lines = [f"**gitevals** {head}", "", f"**{summary(table)}{_refused_count(refused)}**"]
    line = usage_line(used) if artifact is not None else None
    spent = judge_line(artifact) if artifact is not None else None
    fixed = corrected_line(table)
    lines += [*(md_inert(x) for x in (line, spent, fixed) if x), ""]
    if table or refused:
        cols = _columns(table)
        lines += ["| " + " | ".join(name for name, _ in cols) + " |",
                  "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_md_cell(r, name, cell) for name, cell in cols) + " |"
                  for r in table]
        lines += [_md_refused(r, len(cols)) for r in refused]
    return "\n".join(lines) + "\n"


def _refused_count(refused: Sequence[Refused]) -> str:
    return f", {len(refused)} refused by lint" if refused else ""


def _md_cell(r: Row, name: str, cell: Callable[[Row], str]) -> str:
    if name == "verdict":
        return f"{_MARK.get(r.verdict, '')} {r.verdict.replace('_', ' ')}"
    if name in ("case", "scenario"):  # raw: visible() escapes would read as data
        return md_inert(r.case if name == "case" else r.scenario)
    return md_inert(cell(r))


def _md_refused(r: Refused, width: int) -> str:
    first = r.findings[0] if r.findings else "the case does not lint"
    cells = [md_inert(r.case), "(lint)", "🚫 refused by lint", "-", *[""] * (width - 5),
             md_inert(first)]
    return "| " + " | ".join(cells) + " |"


REPORTERS: dict[str, Callable[[Run], str]] = {
    "text": plain,
    "json": as_json,
    "junit": junit,
    "markdown": markdown,
}


def render(artifact: Run, fmt: str, terminal: bool = False, width: int | None = None, *,
           refused: Sequence[Refused] = (), tail: str = "") -> str:
    """``artifact`` in format ``fmt``; ``text`` on a ``terminal`` is a rich table.

    ``refused`` (cases lint kept from running) appear in junit and markdown; ``tail``
    ends text's summary line.
    """
    from gitevals.report.suite import with_goldens

    if fmt == "text":
        out = rich_text(artifact, width, tail) if terminal else plain(artifact, tail)
    elif fmt in ("junit", "markdown") and refused:
        out = junit(artifact, refused) if fmt == "junit" else markdown(artifact, refused)
    else:
        out = REPORTERS[fmt](artifact)
    return with_goldens(artifact, fmt, out)


def render_refused(refused: Sequence[Refused], fmt: str) -> str:
    """What ``fmt`` says when lint refused every selected case and nothing ran: junit and
    markdown list the refused cases as failures; text and json say nothing on stdout."""
    if fmt == "junit":
        return junit(None, refused)
    return markdown(None, refused) if fmt == "markdown" else ""


# -- the runs kept for a commit (show --all) ---------------------------------------------


@dataclass(frozen=True)
class Kept:
    """One run kept for a commit: where it is kept and whether ``show``/``diff`` read it.
    ``summary`` is None and ``problem`` says why when the run does not validate."""

    run_id: str
    finished_at: str
    scope: str  # complete, interrupted, or the cases a partial run ran
    sources: tuple[str, ...]
    picked: bool
    summary: dict[str, int] | None
    problem: str | None


def kept(found: Sequence[tuple[Run, str, int]], picked: str,
         refused: Mapping[str, str] | None = None) -> list[Kept]:
    """``found`` (a run, where it is kept and when that was written, e.g. a file's mtime;
    one run may be kept twice, as a file and as the note) as one entry per run, newest
    first (``finished_at`` has whole seconds: a tie goes to the later written);
    ``picked`` is the run id shown; ``refused``: run id -> why a note's run is no
    evidence of the commit (``store.problem``)."""
    sources: dict[str, list[str]] = {}
    first: dict[str, tuple[Run, int]] = {}
    for run, where, written in found:  # only a candidate yet: read with care
        rid = str(run.get("run_id", "(no run id)"))
        sources.setdefault(rid, []).append(where)
        first.setdefault(rid, (run, written))
    order = sorted(first.items(), key=lambda i: (i[1][0]["finished_at"], i[1][1]),
                   reverse=True)
    return [_kept(run, tuple(sources[rid]), rid == picked, (refused or {}).get(rid))
            for rid, (run, _) in order]


def _kept(run: Run, sources: tuple[str, ...], picked: bool, refused: str | None) -> Kept:
    from gitevals.errors import ArtifactError
    from gitevals.run.artifact import checked

    cases = run["options"].get("cases")
    scope = "interrupted" if run.get("interrupted") is not False else (
        "partial: " + ", ".join(map(str, cases)) if isinstance(cases, list) and cases
        else "complete")
    try:
        tally: dict[str, int] | None = counts(rows(checked(run, sources[0])))
        problem = None
    except ArtifactError as exc:
        tally, problem = None, str(exc)
    if refused is not None and problem is None:
        tally, problem = None, f"refused as evidence of this commit: {refused}"
    return Kept(str(run.get("run_id", "(no run id)")), run["finished_at"], scope, sources,
                picked, tally, problem)


def kept_text(commit: str, rev: str, runs: Sequence[Kept]) -> str:
    """One line per kept run, aligned, ``*`` on the run ``show`` and ``diff`` read."""
    lines = [f"runs of {visible(rev)} ({commit[:12]}), newest first; * marks the one "
             "show and diff read"]
    cells = [("*" if k.picked else " ", visible(k.run_id), visible(k.finished_at),
              visible(k.scope), _tally_text(k.summary) if k.summary else one_line(k.problem),
              visible(", ".join(k.sources))) for k in runs]
    widths = [max(len(c[i]) for c in cells) for i in range(5)]
    lines += ["  ".join([*(c[i].ljust(widths[i]) for i in range(5)), c[5]]) for c in cells]
    return "\n".join(lines) + "\n"


def kept_json(commit: str, rev: str, runs: Sequence[Kept]) -> str:
    """The kept runs as sorted JSON, newest first."""
    doc = {"commit": commit, "rev": rev,
           "runs": [{"run_id": k.run_id, "finished_at": k.finished_at, "scope": k.scope,
                     "sources": list(k.sources), "picked": k.picked, "summary": k.summary,
                     "problem": k.problem} for k in runs]}
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
