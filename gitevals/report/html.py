"""``gitevals report``: one self-contained static HTML file (pure: values in, a string out).

Four sections: the overview of the tip's run (verdict counts, a table per case, filters
by verdict), the history along git (a plot per scenario: pass rate and its 95 %
interval at each commit with a run, regressions beyond noise marked; and the same as a
table), the diff between two commits (``report.diff.sections``, what ``gitevals diff``
prints) and every trial's transcript as a ``<details>`` element.

Safety: everything that comes from a tree, a target or a run is data. Each value goes
through ``esc`` (``html.escape`` after ``xml_text``) and lands in element text only: no
attribute, URL, style or script is ever built from data (ids and links are indexes,
classes come from fixed tables). The CSP (``default-src 'none'``; the one stylesheet
and the one script allowed by their hashes) would refuse any script, style, image or
connection that escaped escaping: nothing can load, nothing else can run. Filters and
expanding work without JavaScript (checkboxes read by CSS ``:has()``, ``<details>``),
and charts are SVG written here, so the file renders offline.

Size: a run of up to ``STATIC`` trials has every transcript in the page as HTML (no
script at all). Beyond, the page would be tens of megabytes for Chromium to read before
it shows anything (``benchmarks/bench_report.py``: 25 MB and 6 s for 5,000 trials).
Each transcript is still rendered here, by the same escaping code, but each scenario's
trials are one string of a gzip-compressed JSON list, base64 in an inert data block
(``type="text/plain"``; base64 holds no ``<``, so it cannot close its element), and a
fixed script of a few lines (``SCRIPT``) decompresses it (the browser's
``DecompressionStream``) and puts a scenario's trials into its list when it is opened.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitevals.report.history import History, Point
from gitevals.run.artifact import VERDICTS, Trial, scenarios
from gitevals.text import fold, one_line, xml_text

if TYPE_CHECKING:
    from gitevals.diff import Diff
    from gitevals.jsontypes import JSON
    from gitevals.report.runs import Row
    from gitevals.run.artifact import CaseRun, Run, ScenarioRun

#: Characters of one value shown in a transcript (the run artifact has all of it).
LIMIT = 4000
#: Runs with up to this many trials get every transcript as HTML; larger ones as data a
#: script renders on opening (``--static-transcripts``).
STATIC = 1000
#: Nesting shown as elements; deeper values are shown as their JSON text.
DEPTH = 6
_MARK = {"pass": "✓", "flaky": "~", "fail": "✗", "broken": "!", "not_run": "-"}
_CHANGE = {"regressed": "bad", "gone": "warn", "removed": "bad", "unreadable": "bad",
           "improved": "good", "added": "good", "new": "info", "changed": "warn"}
_TRIAL_KEYS = frozenset(Trial.__annotations__)


@dataclass(frozen=True)
class Report:
    """What one report shows: the tip's run, the history ending at it, and a diff (None,
    with ``diff_note`` saying why, when there is no second commit to compare with)."""

    run: Run
    history: History
    spec: str
    diff: Diff | None = None
    diff_note: str = ""
    tool_version: str = ""
    static: int = STATIC


def esc(value: object) -> str:
    """Any value as HTML text: characters XML cannot hold written as escapes, then
    ``& < > " '`` as entities. The only door from data into the page."""
    return html.escape(xml_text(value), quote=True)


def _verdict_class(verdict: object) -> str:
    return f"v-{verdict}" if verdict in VERDICTS else "v-unknown"


def render(report: Report) -> str:
    """The whole page."""
    part = report.run.get("goldens")
    trials = (sum(len(s["results"]) for _, s in scenarios(report.run))
              + (len(part["items"]) if part is not None else 0))
    bodies: list[str] | None = [] if trials > report.static else None
    body = "".join([
        _header(report), _filters(), _overview(report.run), _history(report.history),
        _diff(report.diff, report.diff_note), _transcripts(report.run, bodies),
        _golden_transcripts(report.run, bodies), _data(bodies)])
    title = f"gitevals report: {report.spec}"
    csp = policy(bodies is not None)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n"
            f"<body>\n{body}</body></html>\n")


# -- header and overview ----------------------------------------------------------------


def _header(report: Report) -> str:
    run = report.run
    meta = [f"run <code>{esc(run['run_id'])}</code>",
            f"commit <code>{esc(run['commit'][:12])}</code> ({esc(run['rev'])})",
            f"finished {esc(run['finished_at'])}"]
    if run["interrupted"]:
        meta.append("<strong>interrupted</strong>")
    if run["dirty"]:
        meta.append("dirty working tree")
    return ("<header><h1>gitevals report</h1>"
            f"<p class=\"meta\">{' · '.join(meta)}</p>"
            "<nav><a href=\"#overview\">Overview</a><a href=\"#history\">History</a>"
            "<a href=\"#diff\">Diff</a><a href=\"#transcripts\">Transcripts</a>"
            + ("<a href=\"#golden-transcripts\">Goldens</a>" if run.get("goldens") else "")
            + f"<span class=\"by\">gitevals {esc(report.tool_version)}</span></nav></header>\n")


def _filters() -> str:
    """Checkboxes, one per verdict: CSS hides the rows of an unchecked verdict."""
    boxes = "".join(f"<label class=\"chip v-{v}\"><input type=\"checkbox\" id=\"f-{v}\" "
                    f"checked> {v.replace('_', ' ')}</label>" for v in VERDICTS)
    return f"<div class=\"filters\" id=\"filters\"><span>show</span>{boxes}</div>\n"


def _overview(run: Run) -> str:
    from gitevals.report.runs import corrected_line, counts, summary, table_and_usage, usage_line

    table, used = table_and_usage(run)
    tally = counts(table)
    chips = "".join(f"<span class=\"count v-{v}\"><b>{tally[v]}</b> {v.replace('_', ' ')}"
                    "</span>" for v in VERDICTS)
    usage = usage_line(used)
    fixed = corrected_line(table)
    out = [f"<section id=\"overview\"><h2>Overview</h2><p class=\"counts\">{chips}</p>",
           f"<p class=\"summary\">{esc(summary(table))}"
           f"{'; ' + esc(usage) if usage else ''}</p>",
           f"<p class=\"summary\">{esc(fixed)}</p>" if fixed else ""]
    index = 0
    for case in run["cases"]:
        part = table[index:index + len(case["scenarios"])]
        out.append(_case_table(case, part, index))
        index += len(case["scenarios"])
    return "".join(out) + _slices(run) + "</section>\n"


def _slices(run: Run) -> str:
    """The goldens' pass rate per slice (bucket, drift benchmark): never one blended score."""
    from gitevals.calibration.corrected import slice_corrections
    from gitevals.report.suite import goldens_title, slice_header, slice_row

    part = run.get("goldens")
    if part is None:
        return ""
    fixed = slice_corrections(run)  # a judge-corrected column when a slice has a rate
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in slice_row(s, fixed))
                   + "</tr>" for s in part["slices"])
    return (f"<h3 id=\"goldens\">{esc(goldens_title(part))}</h3><table class=\"overview\"><thead>"
            f"<tr>{''.join(f'<th>{h}</th>' for h in slice_header(fixed))}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _case_table(case: CaseRun, part: Sequence[Row], first: int) -> str:
    from gitevals.report.runs import (  # the cells show prints
        CORRECTED,
        corrected_cell,
        cost_cell,
        tokens_cell,
    )

    tokens = any(tokens_cell(r.usage) for r in part)
    cost = any(cost_cell(r.usage) for r in part)
    fixed = any(r.corrected is not None for r in part)
    head = ["scenario", "verdict", "passes", "pass@k", "pass^k",
            *(["tokens in/out"] if tokens else []), *(["cost"] if cost else []),
            *([CORRECTED] if fixed else []), "first failure"]
    rows = []
    for i, (r, s) in enumerate(zip(part, case["scenarios"], strict=True), first):
        v = s["verdict"]
        cells = [f"<a href=\"#s{i}\">{esc(r.scenario)}</a>", _verdict(r.verdict),
                 f"<span class=\"num\">{r.passes}/{r.trials}</span>",
                 _yes(v["pass_at_k"]), _yes(v["pass_hat_k"]),
                 *([esc(tokens_cell(r.usage))] if tokens else []),
                 *([esc(cost_cell(r.usage))] if cost else []),
                 *([f"<span class=\"num\">{esc(corrected_cell(r))}</span>"]
                   if fixed else []),
                 esc(r.first_failure)]
        rows.append(f"<tr class=\"f {_verdict_class(r.verdict)}\">"
                    + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f"<h3>{esc(case['name'])} <small>{esc(case['path'])}</small></h3>"
            f"<table class=\"overview\"><thead><tr>{''.join(f'<th>{h}</th>' for h in head)}"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _verdict(verdict: str) -> str:
    return (f"<span class=\"verdict {_verdict_class(verdict)}\">"
            f"{esc(_MARK.get(verdict, '?'))} {esc(verdict.replace('_', ' '))}</span>")


def _yes(flag: bool) -> str:
    return "<span class=\"yes\">yes</span>" if flag else "<span class=\"no\">no</span>"


# -- history ------------------------------------------------------------------------------


def _history(history: History) -> str:
    from gitevals.report.log import decided

    n = len(history.commits)
    if not n:
        return ("<section id=\"history\"><h2>History</h2><p>No commit along this history "
                "has a run.</p></section>\n")
    intro = (f"<p>{n} commit{'' if n == 1 else 's'} with runs along first-parent history, "
             "oldest first. Each point is a scenario's pass rate at a commit, the bar its "
             "95 % interval (Wilson); a red triangle marks a regression beyond noise since "
             f"the previous commit with a run ({esc(decided(history))}): "
             f"<b>{history.regressions()}</b>; the suite regressed beyond noise at "
             f"<b>{history.suite_regressions()}</b> commit"
             f"{'s' * (history.suite_regressions() != 1)}.</p>")
    figures = "".join(
        f"<figure class=\"plot\"><figcaption>{esc(case)} / {esc(scenario)}</figcaption>"
        f"{plot(history, i)}</figure>" for i, (case, scenario) in enumerate(history.scenarios))
    return (f"<section id=\"history\"><h2>History</h2>{intro}{_commits(history)}"
            f"<div class=\"plots\">{figures}</div>{_matrix(history)}</section>\n")


def _commits(history: History) -> str:
    rows = []
    for j, c in enumerate(history.commits, 1):
        run = (f"<code>{esc(c.run_id)}</code>" if c.run_id
               else f"<span class=\"bad\">unreadable: {esc(c.problem)}</span>")
        rows.append(f"<tr><td class=\"num\">{j}</td><td><b>{esc(c.label)}</b></td>"
                    f"<td><code>{esc(c.sha[:12])}</code></td><td>{esc(c.subject)}</td>"
                    f"<td>{run}</td></tr>")
    return ("<table class=\"commits\"><thead><tr><th>#</th><th>commit</th><th>sha</th>"
            f"<th>subject</th><th>run</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _matrix(history: History) -> str:
    """The plots as a table: a row per scenario, a column per commit."""
    head = "".join(f"<th>{esc(c.label)}</th>" for c in history.commits)
    rows = []
    for (case, scenario), points in zip(history.scenarios, history.points, strict=True):
        cells = "".join(_cell(p) for p in points)
        rows.append(f"<tr><th class=\"name\">{esc(case)} / {esc(scenario)}</th>{cells}</tr>")
    return ("<h3>As a table</h3><div class=\"wide\"><table class=\"matrix\"><thead><tr>"
            f"<th>scenario</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _cell(p: Point | None) -> str:
    if p is None:
        return "<td></td>"
    mark = " <span class=\"reg\">▼</span>" if p.regressed else ""
    return (f"<td class=\"{_verdict_class(p.verdict)}\">{esc(_MARK.get(p.verdict, '?'))} "
            f"{p.passes}/{p.trials}{mark}</td>")


# -- the SVG plot ---------------------------------------------------------------------------

_STEP, _LEFT, _TOP, _HEIGHT, _BELOW = 56, 46, 12, 110, 64


def _y(rate: float) -> float:
    return _TOP + (1 - rate) * _HEIGHT


def _x(j: int) -> float:
    return _LEFT + _STEP * (j + 0.5)


def plot(history: History, i: int) -> str:
    """Scenario ``i`` of ``history`` as an SVG: a point per commit whose run holds it.

    Few elements (the lines, bars and triangles of a plot are one path each): a history
    of hundreds of scenarios stays quick for a browser to build."""
    n = len(history.commits)
    width = _LEFT + _STEP * max(n, 1) + 10
    points = history.points[i]
    marks = [(j, p) for j, p in enumerate(points) if p is not None]
    regressed = "".join(_triangle(j, p) for j, p in marks if p.regressed)
    parts = [f"<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" "
             f"height=\"{_TOP + _HEIGHT + _BELOW}\" viewBox=\"0 0 {width} "
             f"{_TOP + _HEIGHT + _BELOW}\" role=\"img\">", _axes(width),
             f"<path class=\"trend\" d=\"{_trend(points)}\"/>",
             f"<path class=\"ci\" d=\"{''.join(_bar(j, p) for j, p in marks)}\"/>",
             *([f"<path class=\"reg\" d=\"{regressed}\"/>"] if regressed else []),
             *(_point(history, j, p) for j, p in marks),
             *(_label(history, j) for j in range(n))]
    return "".join(parts) + "</svg>"


def _axes(width: int) -> str:
    grid = "".join(f"M{_LEFT} {_y(r):.1f}H{width - 6}" for r in (1.0, 0.5, 0.0))
    ticks = "".join(f"<text class=\"tick\" x=\"{_LEFT - 6}\" y=\"{_y(r) + 4:.1f}\" "
                    f"text-anchor=\"end\">{text}</text>"
                    for r, text in ((1.0, "100 %"), (0.5, "50 %"), (0.0, "0 %")))
    return f"<path class=\"grid\" d=\"{grid}\"/>{ticks}"


def _trend(points: Sequence[Point | None]) -> str:
    """Path data joining points at neighbouring commits (a gap where a run lacks it)."""
    out, drawing = [], False
    for j, p in enumerate(points):
        if p is None or p.rate is None:
            drawing = False
            continue
        out.append(f"{'L' if drawing else 'M'}{_x(j):.1f} {_y(p.rate):.1f}")
        drawing = True
    return "".join(out)


def _bar(j: int, p: Point) -> str:
    """Path data of the 95 % interval: a vertical bar with a cap at each end."""
    x, lo, hi = _x(j), _y(p.low), _y(p.high)
    return f"M{x:.1f} {lo:.1f}V{hi:.1f}M{x - 4:.1f} {lo:.1f}h8M{x - 4:.1f} {hi:.1f}h8"


def _triangle(j: int, p: Point) -> str:
    x, y = _x(j), _y(p.high) - 6
    return f"M{x - 5:.1f} {y - 8:.1f}H{x + 5:.1f}L{x:.1f} {y:.1f}Z"


def _point(history: History, j: int, p: Point) -> str:
    commit = history.commits[j]
    rate = p.rate if p.rate is not None else 0.0
    tip = (f"{commit.label}: {commit.subject}\n{p.verdict} {p.passes}/{p.trials} "
           f"({rate:.0%}, 95 % interval {p.low:.0%}–{p.high:.0%})")
    if p.change in ("regressed", "improved") and p.p is not None:
        tip += f"\n{p.change} {'beyond' if p.beyond_noise else 'within'} noise, p = {p.p:.3g}"
        tip += f", q = {p.q:.3g}" if p.q is not None else ""
    cls = f"pt {_verdict_class(p.verdict)}" + (" regressed" if p.regressed else "")
    return (f"<circle class=\"{cls}\" cx=\"{_x(j):.1f}\" cy=\"{_y(rate):.1f}\" r=\"5\">"
            f"<title>{esc(tip)}</title></circle>")


def _label(history: History, j: int) -> str:
    label = history.commits[j].label
    x, y = _x(j), _TOP + _HEIGHT + 14
    text = label if len(label) <= 14 else label[:13] + "…"
    return (f"<text class=\"xl\" x=\"{x:.1f}\" y=\"{y:.1f}\" text-anchor=\"end\" "
            f"transform=\"rotate(-35 {x:.1f} {y:.1f})\">{esc(text)}</text>")


# -- diff -----------------------------------------------------------------------------------


def _diff(diff: Diff | None, note: str) -> str:
    from gitevals.report.diff import header, sections, suite_line

    if diff is None:
        return f"<section id=\"diff\"><h2>Diff</h2><p>{esc(note)}</p></section>\n"
    head = header(diff)
    counts = diff.counts()
    bad = ("bad" if counts["regressed_beyond_noise"] or counts["suite_regressed_beyond_noise"]
           else "good")
    out = [f"<section id=\"diff\"><h2>Diff</h2><p class=\"headline {bad}\">{esc(head[0])}</p>"]
    suite = suite_line(diff)
    if suite is not None:  # the suite's call, read before any table
        out.append(f"<p class=\"suite\">{esc(suite)}</p>")
    out += ["<ul class=\"sides\">",
            *(f"<li>{esc(line)}</li>" for line in head[1:] if line != suite), "</ul>"]
    for s in sections(diff, 0):
        out.append(f"<h3>{esc(s.title)}</h3>" + _table(s.headers, s.rows))
    if not sections(diff, 0):
        out.append("<p>Nothing changed between the two commits.</p>")
    return "".join(out) + "</section>\n"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_change_cell(c) for c in row) + "</tr>" for row in rows)
    return (f"<div class=\"wide\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")


def _change_cell(text: str) -> str:
    cls = _CHANGE.get(text)
    if cls is None and text in ("beyond noise", "within noise"):
        cls = "bad" if text == "beyond noise" else "muted"
    return f"<td class=\"{cls}\">{esc(text)}</td>" if cls else f"<td>{esc(text)}</td>"


# -- transcripts ----------------------------------------------------------------------------


def _transcripts(run: Run, bodies: list[str] | None) -> str:
    """Every trial as a ``<details>``; inline, or, per scenario, appended to ``bodies``
    (then the script puts a scenario's trials in on opening its list)."""
    note = ("" if bodies is None else "<noscript><p class=\"bad\">This run is large: its "
            "transcripts open with JavaScript on (or read one with <code>gitevals show "
            "--trial CASE/SCENARIO/N</code>).</p></noscript>")
    out = ["<section id=\"transcripts\"><h2>Transcripts</h2><p>Every trial of the run; "
           f"click one to read it as a conversation.</p>{note}"]
    case_name = None
    for index, (case, s) in enumerate(scenarios(run)):
        if case["name"] != case_name:
            case_name = case["name"]
            out.append(f"<h3>{esc(case['name'])}</h3>{_extras(case, _CASE_KEYS)}")
        out.append(_scenario(run, case, s, index, bodies))
    return "".join(out) + "</section>\n"


def _golden_transcripts(run: Run, bodies: list[str] | None) -> str:
    """Every golden and drift row the run sent, one ``<details>`` each, by slice (packed
    into ``bodies`` per slice, as a scenario's trials are, when the run is large)."""
    from gitevals.report.suite import why as failed_why
    from gitevals.report.trial import golden_document

    part = run.get("goldens")
    if part is None or not part["items"]:
        return ""
    out = ["<section id=\"golden-transcripts\"><h2>Goldens</h2><p>Every golden and drift "
           "row the run sent: its row, the conversation, the grader's answer.</p>"]
    by_slice: dict[str, list[str]] = {}
    for item in part["items"]:
        doc = golden_document(run, item)
        ok = item["passed"]
        why = "" if ok else f" · {esc(fold(one_line(failed_why(item)), 140))}"
        body = "".join([f"<h5>Row</h5>{value(doc.get('row'))}", _conversation(doc),
                        _answer_block(doc), _graders(doc), _footer(doc)])
        by_slice.setdefault(f"{item['kind']} {item['slice']}", []).append(
            f"<details class=\"trial {'ok' if ok else 'ko'}\"><summary><b>{esc(item['id'])} "
            f"· {'passed' if ok else 'FAILED'}</b>{why}</summary>"
            f"<div class=\"body\">{body}</div></details>")
    for name, items in by_slice.items():
        inner = "".join(items)
        if bodies is not None:
            bodies.append(inner)
            inner = (f"<details class=\"trials\" data-n=\"{len(bodies) - 1}\"><summary>"
                     f"{len(items)} item{'s' * (len(items) != 1)}</summary>"
                     "<div class=\"body\"></div></details>")
        out.append(f"<section class=\"scenario\"><h4>{esc(name)}</h4>{inner}</section>")
    return "".join(out) + "</section>\n"


def _data(bodies: list[str] | None) -> str:
    """The trial bodies as one inert data block (a JSON list, gzip, base64: byte-stable,
    ``mtime=0``), and the script that reads it."""
    if bodies is None:
        return ""
    packed = gzip.compress(json.dumps(bodies, ensure_ascii=False).encode(), 6, mtime=0)
    return (f"<script type=\"text/plain\" id=\"bodies\">{base64.b64encode(packed).decode()}"
            f"</script>\n<script>{SCRIPT}</script>\n")


_CASE_KEYS = frozenset(("name", "path", "blob", "scenarios"))
_SCENARIO_KEYS = frozenset(("id", "user", "expect", "trials", "timeout", "results",
                            "verdict", "rules"))


def _scenario(run: Run, case: CaseRun, s: ScenarioRun, index: int,
              bodies: list[str] | None) -> str:
    v = s["verdict"]
    trials = "".join(_trial(run, case, s, t) for t in s["results"]) or "<p>Not run.</p>"
    if bodies is not None and s["results"]:
        bodies.append(trials)
        n, passed = len(s["results"]), sum(t["passed"] for t in s["results"])
        trials = (f"<details class=\"trials\" data-n=\"{len(bodies) - 1}\"><summary>{n} "
                  f"trial{'' if n == 1 else 's'}: {passed} passed, {n - passed} failed"
                  "</summary><div class=\"body\"></div></details>")
    return (f"<section class=\"scenario f {_verdict_class(v['verdict'])}\" id=\"s{index}\">"
            f"<h4>{esc(s['id'])} {_verdict(v['verdict'])} "
            f"<span class=\"num\">{v['passes']}/{v['trials']}</span></h4>"
            f"{_extras(s, _SCENARIO_KEYS)}{trials}</section>")


def _trial(run: Run, case: CaseRun, s: ScenarioRun, t: Trial) -> str:
    from gitevals.report.trial import document

    doc = document(run, case, s, t)
    ok = t["passed"]
    failing = next((a["message"] for a in t["assertions"] if not a["passed"]), None)
    why = f" · {esc(fold(one_line(failing), 140))}" if failing and not ok else ""
    summary = (f"<summary><b>trial {t['trial']} · {'passed' if ok else 'FAILED'}</b>{why}"
               "</summary>")
    state = "ok" if ok else "ko"
    body = "".join([_conversation(doc), _answer_block(doc), _assertions(doc), _graders(doc),
                    _extras(t, _TRIAL_KEYS), _footer(doc)])
    return (f"<details class=\"trial {state}\">{summary}<div class=\"body\">{body}</div>"
            "</details>")


_REPLY_KEYS = ("final_answer", "tool_calls", "hooks", "error")


def _conversation(doc: dict[str, JSON]) -> str:
    out = ["<ol class=\"turns\">"]
    for turn in _items(doc.get("conversation")):
        turn = turn if isinstance(turn, dict) else {}
        out.append(f"<li><div class=\"user\"><span class=\"who\">user</span>"
                   f"{_text(turn.get('user'))}</div>{_reply(turn.get('reply'))}</li>")
    return "".join(out) + "</ol>"


def _reply(reply: JSON) -> str:
    if not isinstance(reply, dict):
        return "<div class=\"reply muted\">no reply: the conversation ended before this turn</div>"
    out = ["<div class=\"reply\">"]
    for call in _items(reply.get("tool_calls")):
        call = call if isinstance(call, dict) else {}
        result = (f"<div class=\"result\"><span class=\"who\">result</span>"
                  f"{value(call['result'])}</div>" if "result" in call else "")
        out.append(f"<div class=\"tool\"><span class=\"who\">tool</span>"
                   f"<code>{esc(_str(call.get('name')))}</code>{value(call.get('args', {}))}"
                   f"{result}</div>")
    for hook in _items(reply.get("hooks")):
        hook = hook if isinstance(hook, dict) else {}
        out.append(f"<div class=\"hook\"><span class=\"who\">hook</span>"
                   f"<code>{esc(_str(hook.get('name')))}</code> decided "
                   f"<b>{esc(_str(hook.get('decision')))}</b></div>")
    if reply.get("error") is not None:
        out.append(f"<div class=\"error\"><span class=\"who\">error</span>"
                   f"{value(reply['error'])}</div>")
    out.append(f"<div class=\"answer\"><span class=\"who\">answer</span>"
               f"{_text(reply.get('final_answer'))}</div>")
    others = {k: v for k, v in reply.items() if k not in _REPLY_KEYS}
    if others:
        out.append(f"<div class=\"also\"><span class=\"who\">also</span>{value(others)}</div>")
    return "".join(out) + "</div>"


def _answer_block(doc: dict[str, JSON]) -> str:
    out = [f"<h5>Final answer</h5>{_text(doc.get('final_answer'))}"]
    if doc.get("target_error") is not None:
        out.append(f"<h5>Target error</h5>{value(doc['target_error'])}")
    if doc.get("error") is not None:
        out.append(f"<h5 class=\"bad\">Trial error</h5>{value(doc['error'])}")
    return "".join(out)


def _assertions(doc: dict[str, JSON]) -> str:
    rows = []
    for a in _items(doc.get("assertions")):
        a = a if isinstance(a, dict) else {}
        ok = a.get("passed") is True
        error = value(a["error"]) if a.get("error") is not None else ""
        rows.append(f"<tr><td class=\"{'good' if ok else 'bad'}\">{'pass' if ok else 'FAIL'}"
                    f"</td><td><code>{esc(_str(a.get('kind')))}</code></td>"
                    f"<td>{_rule(a.get('rule'))}</td><td>{esc(_str(a.get('message')))}</td>"
                    f"<td>{error}</td></tr>")
    if not rows:
        return "<h5>Assertions</h5><p class=\"muted\">none</p>"
    return ("<h5>Assertions</h5><table class=\"small\"><thead><tr><th></th><th>kind</th>"
            "<th>rule</th><th>outcome</th><th>error</th></tr></thead><tbody>"
            f"{''.join(rows)}</tbody></table>")


def _rule(rule: JSON) -> str:
    """An assertion's argument as one line of JSON (its kind has a column)."""
    arg = next(iter(rule.values())) if isinstance(rule, dict) and len(rule) == 1 else rule
    text = json.dumps(arg, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    return f"<code>{esc(fold(text, 300))}</code>"


def _graders(doc: dict[str, JSON]) -> str:
    rows = []
    for g in _items(doc.get("graders")):
        g = g if isinstance(g, dict) else {}
        answer = value(g["error"]) if g.get("error") is not None else value(g.get("raw"))
        rows.append(f"<tr><td><code>{esc(_str(g.get('name')))}</code></td><td>{answer}</td>"
                    f"<td class=\"num\">{esc(_ms(g.get('duration_ms')))}</td></tr>")
    if not rows:
        return ""
    return ("<h5>Graders</h5><table class=\"small\"><thead><tr><th>grader</th><th>answer</th>"
            f"<th>took</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _footer(doc: dict[str, JSON]) -> str:
    from gitevals.report.runs import usage_from_json, usage_line

    usage = doc.get("usage")
    line = usage_line(usage_from_json(usage)) if isinstance(usage, dict) else None
    return (f"<p class=\"muted\">duration {esc(_ms(doc.get('duration_ms')))}"
            f"{'; ' + esc(line) if line else ''}</p>")


def _extras(record: object, known: frozenset[str]) -> str:
    """Fields of a record this renderer has no special view for (a task's iterations and
    rewards, fields a newer gitevals adds), each shown generically by ``value``."""
    if not isinstance(record, dict):
        return ""
    extra = sorted(k for k in record if k not in known)
    return "".join(f"<h5>{esc(k)}</h5>{value(record[k])}" for k in extra)


# -- generic values -------------------------------------------------------------------------


def value(v: JSON, depth: int = 0) -> str:
    """Any JSON value as elements: an object as a list of fields, a list of objects as a
    table, text as a block; deeper than ``DEPTH``, its JSON text."""
    if isinstance(v, str):
        return _text(v)
    if v is None or isinstance(v, (bool, int, float)):
        return f"<code>{esc(json.dumps(v))}</code>"
    if depth >= DEPTH:
        return _text(json.dumps(v, ensure_ascii=False, sort_keys=True))
    if isinstance(v, dict):
        if not v:
            return "<code>{}</code>"
        return "<dl class=\"obj\">" + "".join(
            f"<dt>{esc(k)}</dt><dd>{value(v[k], depth + 1)}</dd>" for k in sorted(v)) + "</dl>"
    if v and all(isinstance(x, dict) for x in v):
        return _records(v, depth)
    if not v:
        return "<code>[]</code>"
    return "<ol class=\"list\">" + "".join(f"<li>{value(x, depth + 1)}</li>" for x in v) + "</ol>"


def _records(items: list[JSON], depth: int) -> str:
    """A list of objects as one table, a column per key."""
    keys = sorted({k for x in items if isinstance(x, dict) for k in x})
    head = "".join(f"<th>{esc(k)}</th>" for k in keys)
    rows = "".join("<tr>" + "".join(
        f"<td>{value(x[k], depth + 1) if k in x else ''}</td>" for k in keys) + "</tr>"
        for x in items if isinstance(x, dict))
    return (f"<div class=\"wide\"><table class=\"small\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _text(v: JSON) -> str:
    if v is None:
        return "<span class=\"muted\">(none)</span>"
    text = fold(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True),
                LIMIT)
    return f"<pre>{esc(text)}</pre>" if "\n" in text or len(text) > 80 else esc(text)


def _str(v: JSON) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _items(v: JSON) -> list[JSON]:
    return v if isinstance(v, list) else []


def _ms(v: JSON) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "?"
    return f"{v:.0f} ms" if v < 1000 else f"{v / 1000:.1f} s"


# -- style and policy -------------------------------------------------------------------------

STYLE = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;
--pass:#1a7f37;--flaky:#b26b00;--fail:#cf222e;--broken:#8250df;--not_run:#6e7781}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header{padding:16px 24px 0;border-bottom:1px solid var(--line);background:var(--soft)}
h1{margin:0;font-size:22px}h2{font-size:19px;border-bottom:1px solid var(--line);
padding-bottom:4px;margin-top:32px}h3{font-size:16px;margin:20px 0 8px}
h3 small{color:var(--muted);font-weight:normal;margin-left:8px}
h4{font-size:14px;margin:16px 0 6px}h5{font-size:13px;margin:12px 0 4px;color:var(--muted)}
.meta{color:var(--muted);margin:4px 0 8px}
nav{display:flex;gap:18px;padding:6px 0 10px}nav a{color:#0969da;text-decoration:none;
font-weight:600}nav .by{margin-left:auto;color:var(--muted)}
section{padding:0 24px}
.filters{position:sticky;top:0;z-index:2;background:var(--bg);padding:8px 24px;
border-bottom:1px solid var(--line);display:flex;gap:8px;align-items:center}
.filters span{color:var(--muted)}
.chip{border:1px solid var(--line);border-radius:12px;padding:1px 10px;cursor:pointer;
user-select:none}
.counts{display:flex;gap:12px;flex-wrap:wrap}
.count{border-radius:6px;padding:6px 14px;background:var(--soft);border-left:4px solid}
.count b{font-size:20px;margin-right:4px}
.v-pass{--c:var(--pass)}.v-flaky{--c:var(--flaky)}.v-fail{--c:var(--fail)}
.v-broken{--c:var(--broken)}.v-not_run,.v-unknown{--c:var(--not_run)}
.count,.chip{border-color:var(--c)}.verdict{color:var(--c);font-weight:600;white-space:nowrap}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:var(--soft)}
table.overview td:nth-child(n+2):nth-child(-n+5){white-space:nowrap}
.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.matrix td{white-space:nowrap;color:var(--c);font-variant-numeric:tabular-nums}
.matrix th.name{font-weight:normal;white-space:nowrap}
.wide{overflow-x:auto}
.good,.yes{color:var(--pass)}.bad{color:var(--fail)}.warn{color:var(--flaky)}
.info{color:#0969da}.muted,.no{color:var(--muted)}
.headline{font-weight:700;font-size:15px}
.sides{color:var(--muted);font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:12px}
figure.plot{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px;
max-width:100%;overflow-x:auto}
figcaption{font-weight:600;font-size:13px}
svg.chart{display:block;font-size:11px}
svg .grid{stroke:#d8dee4;stroke-width:1;fill:none}svg .tick,svg .xl{fill:var(--muted)}
svg .trend{stroke:#8c959f;stroke-width:1.5;fill:none}
svg .ci{stroke:#57606a;stroke-width:1.5;fill:none}
svg .pt{fill:var(--c);stroke:#fff;stroke-width:1.5}svg .pt.regressed{stroke:var(--fail);
stroke-width:2.5}svg .reg{fill:var(--fail)}.reg{color:var(--fail)}
section.scenario{border-left:3px solid var(--c);padding:0 0 4px 12px;margin:10px 0}
details.trial{border:1px solid var(--line);border-radius:6px;margin:4px 0;
content-visibility:auto;contain-intrinsic-size:auto 32px}
details.trials>summary{cursor:pointer;color:#0969da;padding:2px 0}
details.trial>summary{cursor:pointer;padding:4px 10px;background:var(--soft)}
details.trial>summary b{font-weight:normal}details.ok>summary b{color:var(--pass)}
details.ko>summary b{color:var(--fail)}
details.trial[open]>summary{border-bottom:1px solid var(--line)}
details.trial .body{padding:6px 12px}
ol.turns{padding-left:20px}ol.turns>li{margin-bottom:10px}
.who{display:inline-block;min-width:54px;font-size:11px;text-transform:uppercase;
color:var(--muted);font-weight:600;margin-right:6px}
.user{background:#ddf4ff;border-radius:6px;padding:4px 8px}
.reply{margin:4px 0 0 18px;padding-left:8px;border-left:2px solid var(--line)}
.tool,.hook,.error,.answer,.also,.result{margin:3px 0}.result{margin-left:24px}
.error,.error pre{color:var(--fail)}
pre{margin:2px 0;padding:6px 8px;background:var(--soft);border-radius:4px;
white-space:pre-wrap;word-break:break-word;font-size:12px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
dl.obj{margin:2px 0;display:grid;grid-template-columns:max-content 1fr;gap:0 10px}
dl.obj dt{color:var(--muted)}dl.obj dd{margin:0}
table.small{font-size:12px}
"""
STYLE += "".join(f"body:has(#f-{v}:not(:checked)) .f.v-{v}{{display:none}}\n"
                 for v in VERDICTS)


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


#: Opening the trial list of a scenario of a large run puts its trials (a string from the
#: data block, made by this module: data in it is escaped as everywhere else) into it.
SCRIPT = ("let bodies;function unpack(){const t=document.getElementById('bodies').textContent;"
          "const s=new Blob([Uint8Array.from(atob(t),c=>c.charCodeAt(0))]).stream()"
          ".pipeThrough(new DecompressionStream('gzip'));"
          "return new Response(s).text().then(JSON.parse);}"
          "document.addEventListener('toggle',async e=>{const d=e.target;"
          "if(!d.open||!d.dataset||d.dataset.n===undefined)return;"
          "const b=d.querySelector('.body');if(b.childNodes.length)return;"
          "bodies=bodies||unpack();b.innerHTML=(await bodies)[Number(d.dataset.n)];},true);")


def policy(script: bool) -> str:
    """The CSP: nothing loads; the stylesheet, and ``SCRIPT`` when the page has it, are
    allowed by their hashes (a ``<style>`` or ``<script>`` that escaped escaping could
    not apply or run)."""
    scripts = f"'sha256-{_hash(SCRIPT)}'" if script else "'none'"
    return (f"default-src 'none'; style-src 'sha256-{_hash(STYLE)}'; script-src {scripts}; "
            "base-uri 'none'; form-action 'none'")
