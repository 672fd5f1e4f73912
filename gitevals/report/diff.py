"""Reporters for ``gitevals diff``: plain text, rich tables, JSON, Markdown and JUnit.

Each takes a finished ``Diff`` and returns text; all share ``sections`` (and the suite's
line, read first) so a row reads the same everywhere. ``rich`` is imported only by ``render_rich``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.diff import Diff, Side
from gitevals.jsontypes import JSON
from gitevals.text import md_inert, visible, xml_text

if TYPE_CHECKING:  # the parts' types only: rendering one part loads only that part
    from xml.etree.ElementTree import Element

    from gitevals.diff.buckets import SliceRow
    from gitevals.diff.goldens import GoldensDiff
    from gitevals.diff.rules import Change
    from gitevals.diff.suite import SuiteResult
    from gitevals.diff.verdicts import Tally, VerdictRow
    from gitevals.stats.judge_correction import Corrected

SHORT = 60  # characters of a value shown before it is cut (full values are in --format json)


@dataclass(frozen=True)
class Section:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    more: int = 0  # rows left out by --limit


def short(value: JSON, width: int = SHORT) -> str:
    """A value as one line of at most ``width`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(diff: Diff) -> str:
    """The first line of every output: what changed, most important first."""
    c = diff.counts()
    parts = []
    if c["suite_regressed_beyond_noise"]:
        parts.append("the suite regressed beyond noise")
    if diff.slices and c["buckets_regressed_beyond_noise"]:
        parts.append(f"{c['buckets_regressed_beyond_noise']} goldens slice"
                     f"{'s' * (c['buckets_regressed_beyond_noise'] != 1)} regressed beyond noise")
    if diff.verdicts:
        parts.append(f"{c['regressed_beyond_noise']} regressed beyond noise")
        for key, label in (("regressed_within_noise", "regressed within noise"),
                           ("improved", "improved"), ("new", "new"), ("gone", "gone")):
            if c[key]:
                parts.append(f"{c[key]} {label}")
    else:
        parts.append("verdicts not compared")
    for key, noun, verb in (("rules_changed", "rule", "changed"),
                            ("graders_changed", "grader", "changed"),
                            ("goldens_changed", "golden", "changed"),
                            ("tasks_changed", "task", "changed"),
                            ("goldens_problems", "goldens problem", "found")):
        if c[key]:
            parts.append(f"{c[key]} {noun}{'' if c[key] == 1 else 's'} {verb}")
    return ", ".join(parts)


def _side_line(label: str, side: Side) -> str:
    if side.run_id:
        run = f"run {side.run_id} ({side.run_source})"
    else:
        run = (f"no run: {side.missing_run_hint}" if side.missing_run_hint
               else "runs not read (--only leaves out verdicts)")
    evals = "" if side.has_evals else f"  (no eval tree: {side.root}/ is absent)"
    return f"{label}  {side.rev}  {side.commit}  {run}{evals}"


def _pts(value: float) -> str:
    return f"{value:+.1f}"


def suite_line(diff: Diff) -> str | None:
    """The suite's paired comparison in one line, read before any table: the estimate,
    its interval, p and q, the call, and what the suite could have seen."""
    s = diff.suite
    if s is None:
        return None
    if s.estimate_pts is None or s.ci_pts is None or s.p is None or s.q is None:
        return f"suite: not tested ({s.why_not})"
    if s.beyond_noise:
        call = f"{s.change} beyond noise"
    else:
        call = "within noise (not shown to have changed: not the same as unchanged)"
    where = (f"{s.scenarios} scenarios" if s.clusters == s.scenarios
             else f"{s.scenarios} scenarios in {s.clusters} clusters")
    line = (f"suite: {_pts(s.estimate_pts)} pts over {where}, "
            f"{100 * s.confidence:g}% interval [{_pts(s.ci_pts[0])}, {_pts(s.ci_pts[1])}], "
            f"p {_p(s.p)} (q {_p(s.q)}): {call}")
    return line + "; " + sees(s.mde_pts, s.scenario_mde_pts, s.clusters) + _fixed(s)


def _fixed(s: SuiteResult) -> str:
    """The suite's judge-corrected change, when a calibrated judge decided some of it."""
    c = s.corrected
    if c is None:
        return f"; judge-corrected: none ({s.corrected_why})" if s.corrected_why else ""
    over = ("all its scenarios" if c.scenarios == s.scenarios else
            f"the {c.scenarios} scenario{'s' * (c.scenarios != 1)} a calibrated judge "
            "alone decided")
    return (f"; judge-corrected over {over}: {_pts(c.estimate_pts)} pts "
            f"[{_pts(c.ci_pts[0])}, {_pts(c.ci_pts[1])}] (raw {_pts(c.raw_pts)} over them; "
            f"Rogan-Gladen, TPR {c.calibration.tpr:.2f}, TNR {c.calibration.tnr:.2f})")


def sees(suite_pts: float | None, one_pts: float | None, clusters: int = 0) -> str:
    """What the suite could have seen, at 80 % power: never left implicit, and never a
    drop past 100 points (a suite of few clusters cannot see any)."""
    if suite_pts is None:
        wide = "no suite-wide test"
    elif suite_pts >= 100:
        wide = (f"no suite-wide drop is detectable with {clusters} clusters (add cases or "
                "clusters)")
    else:
        wide = f"this suite can detect a {suite_pts:.1f}-point suite-wide drop"
    one = (f"a {one_pts:.0f}-point drop in one scenario" if one_pts is not None
           else "a typical scenario (median trials and rate) has no drop it finds reliably")
    return f"{wide}, or {one} (80% power)"


def control_line(diff: Diff) -> str | None:
    """How "beyond noise" was decided: the tests, the control and the error rate."""
    s = diff.suite
    if s is None:
        return None
    parts = [f"noise: scenarios by the {diff.test} exact test under {s.control_text}"]
    if s.p is not None:
        parts.append(f"the suite by a {s.method}, two-sided at {s.alpha:g} (a false "
                     f"'regressed' at most {s.alpha / 2:g})")
    if s.control != "none":
        promise = (f"an unchanged harness fails this diff at most {100 * s.alpha:g}% of the "
                   f"time whatever the suite's size")
    else:
        promise = "no bound on false alarms across the suite (--control none)"
    return "; ".join(parts) + f"; {promise}"


def equivalence_line(diff: Diff) -> str | None:
    s = diff.suite
    if s is None or s.equivalence_pts is None:
        return None
    m = f"{s.equivalence_pts:g}"
    if s.p_no_drop is None:
        return f"equivalence: no suite test, so a drop larger than {m} pts is not ruled out"
    if s.no_drop:
        return (f"equivalence: no drop larger than {m} pts (one-sided p {_p(s.p_no_drop)} < "
                f"{s.alpha:g}, two one-sided tests)")
    return (f"equivalence: a drop larger than {m} pts is not ruled out (one-sided p "
            f"{_p(s.p_no_drop)}, needs < {s.alpha:g})")


def header(diff: Diff) -> list[str]:
    lines = [suite_line(diff), equivalence_line(diff), control_line(diff)]
    return [summary(diff), *(x for x in lines if x is not None), _side_line("A", diff.a),
            _side_line("B", diff.b), *diff.notes, *corrected_note(diff)]


def corrected_note(diff: Diff) -> list[str]:
    """What the judge-corrected column is, once, when a table has it."""
    if not any(r.corrected_a or r.corrected_b for r in diff.verdicts) \
            and not any(r.corrected_a or r.corrected_b for r in diff.slices):
        return []
    return ["judge-corrected: pass rates corrected for the errors of the calibrated judge "
            "that alone decided them (Rogan-Gladen, 95% interval with the calibration's "
            "uncertainty; docs/statistics.md); the noise test is on the counts, which is "
            "the same test for the corrected rates"]


def _tally(t: Tally | None) -> str:
    return str(t) if t is not None else "-"


def _p(p: float | None) -> str:
    return "-" if p is None else f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def _verdicts(diff: Diff) -> Section | None:
    if not diff.verdicts:
        return None
    shown = [r for r in diff.verdicts if r.change != "unchanged"]
    headers = ["case", "scenario", "A", "B", "change", "p", "q", "noise"]
    if diff.rescored:
        headers.insert(3, "A by B's rules")
    graders = any(r.graders_changed for r in shown)
    if graders:
        headers.append("changed graders")
    fixed = any(r.corrected_a or r.corrected_b for r in shown)
    if fixed:
        headers.append(CORRECTED)
    rows = []
    for r in shown:
        noise = "" if r.p is None else "beyond noise" if r.beyond_noise else "within noise"
        if r.sequential is not None:
            noise = r.sequential
        elif r.underpowered and not r.beyond_noise:  # "within noise" here: not measured
            noise += " (underpowered)" if noise else "underpowered"
        row = [r.case, r.scenario, _tally(r.a), _tally(r.b), r.change, _p(r.p), _p(r.q), noise]
        if diff.rescored:
            row.insert(3, _tally(r.a_rescored))
        if graders:
            row.append(", ".join(r.graders_changed))
        if fixed:
            row.append(corrected_pair(r.corrected_a, r.corrected_b))
        rows.append((*row, _durations(r)))
    headers.append(DURATION)
    unchanged = len(diff.verdicts) - len(shown)
    title = f"Verdicts ({diff.test} test, beyond noise when q < {diff.alpha:g}"
    title += f"; {unchanged} unchanged not listed)" if unchanged else ")"
    return Section(title, tuple(headers), tuple(rows))


#: The verdict table's last column: what each side's trials of the scenario took.
DURATION = "duration A -> B"


def _durations(r: VerdictRow) -> str:
    """``1.2 s -> 3.4 s``: what each side's trials of the scenario took ("-": not run)."""
    from gitevals.run.artifact import duration_text  # here: a diff of goldens alone needs none

    return " -> ".join("-" if ms is None else duration_text(ms) for ms in (r.ms_a, r.ms_b))


def _assertion(c: Change) -> str:
    """``+ kind: arg``, ``- kind: arg``, or ``~ kind name: key before -> after``."""
    old, new = _arg(c.before, c.what), _arg(c.after, c.what)
    if c.before is None:
        return f"+ {c.what}: {short(new)}"
    if c.after is None:
        return f"- {c.what}: {short(old)}"
    if isinstance(old, dict) and isinstance(new, dict):
        label = f"{c.what} {old['name']}" if old.get("name") == new.get("name") and "name" in old \
            else c.what
        moved = [f"{k} {short(old.get(k, '(absent)'), 25)} -> {short(new.get(k, '(absent)'), 25)}"
                 for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        return f"~ {label}: {'; '.join(moved)}"
    return f"~ {c.what}: {short(old, 30)} -> {short(new, 30)}"


def _arg(side: JSON, kind: str) -> JSON:
    """An assertion's argument from one side of its change (``{kind: arg}``, or None)."""
    return side.get(kind) if isinstance(side, dict) else None


def _field(c: Change) -> list[str]:
    """``trials 3 -> 5``; for user turns, only the turns that changed."""
    old, new = c.before, c.after
    if c.what == "user" and isinstance(old, list) and isinstance(new, list) \
            and len(old) == len(new):
        return [f"user turn {i}: {short(o, 30)} -> {short(n, 30)}"
                for i, (o, n) in enumerate(zip(old, new, strict=True), 1) if o != n]
    if c.what == "timeout":
        return [f"timeout {_seconds(old)} -> {_seconds(new)}"]
    return [f"{c.what} {short(old, 30)} -> {short(new, 30)}"]


def _seconds(value: JSON) -> str:
    """``300.0`` -> ``300s``, ``2.5`` -> ``2.5s``: timeouts read as a case writes them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}s"
    return short(value, 30)


def _rules(diff: Diff) -> Section | None:
    rows: list[tuple[str, ...]] = []
    for f in diff.cases:
        if f.kind == "unreadable":
            rows.append((f.path, "*", "unreadable", f.problem or ""))
        for s in f.scenarios:
            details = [d for c in s.fields for d in _field(c)]
            details += [_assertion(c) for c in s.assertions]
            for i, d in enumerate(details or [""]):
                rows.append((f.path, s.id, s.kind if i == 0 else "", d))
    return Section("Rules", ("case file", "scenario", "change", "detail"), tuple(rows)) \
        if rows else None


def _graders(diff: Diff) -> list[Section]:
    out = []
    if diff.graders:
        rows = tuple((g.name, g.kind, g.problem or (f"via {', '.join(g.via)}" if g.via else ""))
                     for g in diff.graders)
        out.append(Section("Graders", ("grader", "change", "detail"), rows))
    if diff.grader_users:
        rows = tuple((u.case, u.scenario, u.grader) for u in diff.grader_users)
        out.append(Section("Scenarios on B using a changed grader",
                           ("case", "scenario", "grader"), rows))
    return out


def _line(n: int | None) -> str:
    return "-" if n is None else str(n)


def _where(g: GoldensDiff, side: str, lines: tuple[int, ...]) -> str:
    path = g.path_a if side == "a" else g.path_b
    return f"{path}:{','.join(map(str, lines))}"


def _goldens(diff: Diff, limit: int) -> list[Section]:
    g = diff.goldens
    if g is None or not (g.changes or g.problems):
        return []
    out = [Section(f"Goldens by bucket ({g.path_b or g.path_a})",
                   ("bucket", "added", "removed", "changed"),
                   tuple((b.bucket or "(none)", str(b.added), str(b.removed), str(b.changed))
                         for b in g.buckets))]
    rows: list[tuple[str, ...]] = []
    changes = g.changes if limit <= 0 else g.changes[:limit]
    for c in changes:
        details = [f"{f.field}: {'(absent)' if f.absent_before else short(f.before, 30)} -> "
                   f"{'(absent)' if f.absent_after else short(f.after, 30)}" for f in c.fields]
        for i, d in enumerate(details or [""]):
            first = i == 0
            rows.append((c.id if first else "", c.kind if first else "",
                         _line(c.line_a) if first else "", _line(c.line_b) if first else "", d))
    out.append(Section("Goldens", ("id", "change", "line A", "line B", "fields"), tuple(rows),
                       len(g.changes) - len(changes)))
    if g.problems:
        out.append(Section("Goldens problems", ("side", "where", "problem", "what"),
                           tuple((p.side.upper(), _where(g, p.side, p.lines), p.kind, p.message)
                                 for p in g.problems)))
    return out


def _tasks(diff: Diff) -> Section | None:
    """One row per changed field of a task definition (long values cut; json has all)."""
    rows: list[tuple[str, ...]] = []
    for t in diff.tasks:
        details = [t.problem or ""] if t.kind == "unreadable" else [
            f"{c.what}: {short(c.before, 30) if c.before is not None else '(absent)'} -> "
            f"{short(c.after, 30) if c.after is not None else '(absent)'}" for c in t.fields]
        for i, d in enumerate(details or [""]):
            rows.append((t.name if i == 0 else "", t.kind if i == 0 else "", d))
    return Section("Tasks", ("task", "change", "detail"), tuple(rows)) if rows else None
def _rate(t: tuple[int, int] | None) -> str:
    if t is None:
        return "-"
    return f"{t[0]}/{t[1]} {100 * t[0] / t[1]:.1f}%" if t[1] else f"{t[0]}/{t[1]}"


def _slices(diff: Diff) -> Section | None:
    """Goldens pass rates per bucket and drift slice, A beside B, every slice listed."""
    if not diff.slices:
        return None
    rows = []
    fixed = any(r.corrected_a or r.corrected_b for r in diff.slices)
    for r in diff.slices:
        noise = "" if r.p is None else "beyond noise" if r.beyond_noise else "within noise"
        rows.append((f"{r.kind} {r.name}", _rate(r.a), _rate(r.b), r.change, _p(r.p), _p(r.q),
                     noise,
                     *([corrected_pair(r.corrected_a, r.corrected_b)] if fixed else [])))
    title = (f"Goldens per slice ({diff.test} test per slice, beyond noise when q < "
             f"{diff.alpha:g}, q under the same control; never one blended score)")
    return Section(title, ("slice", "A", "B", "change", "p", "q", "noise",
                           *([CORRECTED] if fixed else [])), tuple(rows))


#: The column of each side's rate corrected for its calibrated judge's errors.
CORRECTED = "judge-corrected A -> B"


def corrected_pair(a: Corrected | None, b: Corrected | None) -> str:
    """``0.16 [0.00, 0.50] -> 0.55 [0.31, 0.80]``; ``-`` for a side no calibrated judge
    decided alone (docs/statistics.md says which qualify), nothing when neither was."""
    from gitevals.calibration.corrected import cell

    if a is None and b is None:
        return ""
    return f"{cell(a) if a else '-'} -> {cell(b) if b else '-'}"


def sections(diff: Diff, limit: int = 50) -> list[Section]:
    """Every table, in reading order; empty ones left out."""
    out: list[Section] = []
    for s in (_verdicts(diff), _slices(diff), _rules(diff), _tasks(diff)):
        if s is not None:
            out.append(s)
    return out + _graders(diff) + _goldens(diff, limit)


# ---------------------------------------------------------------- renderers


def _visible(s: Section) -> Section:
    """``s`` with control characters of its data written as escapes, for a terminal."""
    return Section(visible(s.title), tuple(map(visible, s.headers)),
                   tuple(tuple(map(visible, r)) for r in s.rows), s.more)


def _plain_table(s: Section) -> list[str]:
    s = _visible(s)
    widths = [max(len(h), *(len(r[i]) for r in s.rows)) if s.rows else len(h)
              for i, h in enumerate(s.headers)]
    lines = [s.title]
    for row in (s.headers, *s.rows):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
                     .rstrip())
    if s.more:
        lines.append(f"  ... {s.more} more (--limit 0 or --format json shows all)")
    return lines


def render_text(diff: Diff, limit: int = 50) -> str:
    """Plain text (for pipes and files): aligned columns, no colour."""
    lines = [visible(h) for h in header(diff)]
    for s in sections(diff, limit):
        lines += ["", *_plain_table(s)]
    return "\n".join(lines) + "\n"


def render_rich(diff: Diff, limit: int = 50, width: int | None = None) -> str:
    """Rich tables with colour, for a terminal."""
    import io

    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, highlight=False)
    c = diff.counts()
    style = ("bold red" if c["regressed_beyond_noise"] or c["suite_regressed_beyond_noise"]
             else "bold green")
    head = [visible(h) for h in header(diff)]
    console.print(head[0], style=style, markup=False)
    for line in head[1:]:
        console.print(line, markup=False)
    colours = {"regressed": "red", "improved": "green", "removed": "red", "added": "green",
               "gone": "yellow", "new": "cyan", "changed": "yellow", "unreadable": "red"}
    for s in map(_visible, sections(diff, limit)):
        table = Table(title=s.title, title_justify="left")
        for h in s.headers:
            table.add_column(h, overflow="fold")
        for row in s.rows:
            # a move within noise is not painted like a regression
            noise = "within noise" in row
            table.add_row(*[f"[{'yellow' if noise else colours[x]}]{x}[/]"
                            if x in colours else _escape(x) for x in row])
        console.print(table)
        if s.more:
            console.print(f"... {s.more} more (--limit 0 or --format json shows all)")
    return buf.getvalue()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def render_json(diff: Diff) -> str:
    """The whole diff, stable: keys sorted, lists in the diff's own (sorted) order."""
    # A lone surrogate cannot be written as UTF-8: escaped, the document stays valid JSON
    # (it can only occur inside a string) and says exactly what was read.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", diff.to_json()) + "\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _md_cell(text: str) -> str:
    return md_inert(text) or " "


def render_markdown(diff: Diff, limit: int = 50) -> str:
    """A PR comment: summary in bold, both commits, then one table per section.

    Every piece of data (revisions, ids, values, buckets, assertion arguments, titles
    naming files) goes through ``md_inert``: a golden holding ``<script>`` or
    ``![x](http://...)`` shows as that text, and a CR cannot split a row."""
    head = header(diff)
    lines = [f"**gitevals diff: {md_inert(head[0])}**", ""]
    lines += [f"- {md_inert(h)}" for h in head[1:]]
    for s in sections(diff, limit):
        lines += ["", f"#### {md_inert(s.title)}", "",
                  "| " + " | ".join(_md_cell(h) for h in s.headers) + " |",
                  "|" + "---|" * len(s.headers)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s.rows]
        if s.more:
            lines += ["", f"... {s.more} more (`--format json` shows all)"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- junit


def render_junit(diff: Diff) -> str:
    """JUnit XML for a CI's test report (the Jenkins xunit ``junit-10.xsd`` shape, as
    ``run --format junit``): the **suite** first, one testcase failing when the suite
    regressed beyond noise (or ``--equivalence`` could not rule a drop out), its message
    the suite's line and the testsuite's properties the control, alpha and the test;
    then a testsuite per case with a testcase per scenario both sides ran, failing when
    it regressed beyond noise under the control (q, the control and p in the message);
    a scenario one side lacks is skipped; then a testsuite for the goldens slices.
    Every name and value passes through ``xml_text``."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", {"name": xml_text(f"gitevals diff {diff.a.rev}..{diff.b.rev}")})
    groups: list[tuple[str, list[tuple[str, str | None, str]]]] = [("suite", [_suite_case(diff)])]
    by_case: dict[str, list[tuple[str, str | None, str]]] = {}
    for r in diff.verdicts:
        by_case.setdefault(r.case, []).append(_row_case(diff, r))
    groups += list(by_case.items())
    if diff.slices:
        groups.append(("goldens slices", [_slice_case(diff, s) for s in diff.slices]))
    totals = {"tests": 0, "failures": 0}
    for name, cases in groups:
        failures = sum(tag == "failure" for _, tag, _ in cases)
        skipped = sum(tag == "skipped" for _, tag, _ in cases)
        totals["tests"] += len(cases)
        totals["failures"] += failures
        suite = ET.SubElement(root, "testsuite", {
            "name": xml_text(name), "tests": str(len(cases)), "failures": str(failures),
            "errors": "0", "skipped": str(skipped), "time": "0.000"})
        if name == "suite":
            _properties(suite, diff)
        for case, tag, message in cases:
            tc = ET.SubElement(suite, "testcase", {"classname": xml_text(name),
                                                   "name": xml_text(case), "time": "0.000"})
            if tag is not None:
                el = ET.SubElement(tc, tag, {"message": xml_text(message),
                                             **({"type": "regressed"} if tag == "failure"
                                                else {})})
                el.text = xml_text(message)
            elif message:
                ET.SubElement(tc, "system-out").text = xml_text(message)
    root.attrib.update({k: str(v) for k, v in totals.items()}, errors="0")
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite_case(diff: Diff) -> tuple[str, str | None, str]:
    """The suite's testcase: (name, failure or None, its line and how it was decided)."""
    s = diff.suite
    lines = [x for x in (suite_line(diff), equivalence_line(diff), control_line(diff)) if x]
    text = "\n".join(lines) or "suite: not compared (no runs of both sides)"
    failed = s is not None and (s.regressed or (s.equivalence_pts is not None
                                                and not s.no_drop))
    return "suite", "failure" if failed else None, text


def _properties(suite: Element, diff: Diff) -> None:
    import xml.etree.ElementTree as ET

    s = diff.suite
    values: list[tuple[str, object]] = [("control", diff.control), ("alpha", diff.alpha),
                                        ("test", diff.test)]
    if s is not None:
        values += [("suite.change", s.change), ("suite.beyond_noise", s.beyond_noise),
                   ("suite.estimate_pts", s.estimate_pts), ("suite.p", s.p),
                   ("suite.mde_pts", s.mde_pts), ("suite.scenarios", s.scenarios)]
        if s.ci_pts is not None:
            values.append(("suite.ci_pts", f"{s.ci_pts[0]:g},{s.ci_pts[1]:g}"))
        if s.corrected is not None:
            values.append(("suite.judge_corrected_pts", s.corrected.estimate_pts))
    props = ET.SubElement(suite, "properties")
    for name, value in values:
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": xml_text(str(value))})


def _row_case(diff: Diff, r: VerdictRow) -> tuple[str, str | None, str]:
    if r.a is None or r.b is None:
        return r.scenario, "skipped", f"{r.change}: only one side ran it"
    moved = f"{r.change}: A {_tally(r.a)} -> B {_tally(r.b)}"
    if r.sequential is not None:
        return r.scenario, "failure" if r.beyond_noise and r.change == "regressed" else None, \
            f"{moved}; {r.sequential}"
    if r.p is None:
        return r.scenario, None, moved
    how = (f"{moved}; p {_p(r.p)}, q {_p(r.q)} under "
           f"{diff.suite.control_text if diff.suite is not None else diff.control}")
    if r.change == "regressed" and r.beyond_noise:
        return r.scenario, "failure", f"regressed beyond noise: {how}"
    return r.scenario, None, f"{'beyond' if r.beyond_noise else 'within'} noise: {how}"


def _slice_case(diff: Diff, s: SliceRow) -> tuple[str, str | None, str]:
    how = f"{s.change}: A {_rate(s.a)} -> B {_rate(s.b)}; p {_p(s.p)}, q {_p(s.q)}"
    if s.change == "regressed" and s.beyond_noise:
        return f"{s.kind} {s.name}", "failure", f"regressed beyond noise: {how}"
    return f"{s.kind} {s.name}", None, how
