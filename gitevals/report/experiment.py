"""The experiment report rendered: text, rich tables on a terminal, Markdown, JSON.

It reads the document ``experiment/results.build`` made and decides nothing.
"""

from __future__ import annotations

from gitevals.experiment.metrics import METRICS, MetricDoc, RateDoc
from gitevals.experiment.results import Doc, LaneDoc, RealizedDoc, dumps
from gitevals.run.targetenv import shown
from gitevals.text import md_inert, visible


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.1f}%"


def _rate(r: RateDoc) -> str:
    if not r["trials"]:
        return "no trials"
    return f"{r['passes']}/{r['trials']} {_pct(r['rate'])} [{_pct(r['low'])}, {_pct(r['high'])}]"


def _num(x: float | None) -> str:
    if x is None:
        return "unknown"
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.4g}"


def _metric(m: MetricDoc) -> str:
    if not m["n"]:
        return f"unknown (0 of {m['missing']} reported)" if m["missing"] else "unknown"
    miss = f", {m['missing']} missing" if m["missing"] else ""
    return f"mean {_num(m['mean'])}, var {_num(m['variance'])} (n {m['n']}{miss})"


def _controls(d: LaneDoc) -> str:
    return "held" if d["controls"]["held"] else "FAILED"


def _p(x: float | None) -> str:
    return "" if x is None else f"p={x:.3g}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, *rows]]


def _headline(doc: Doc) -> str:
    n = len(doc["lanes"])
    return (f"experiment {visible(doc['id'])}: {n} lane{'s' * (n != 1)}, "
            f"{len(doc['cases'])} case{'s' * (len(doc['cases']) != 1)}, "
            f"{doc['repeat']} repeat{'s' * (doc['repeat'] != 1)}, "
            f"{doc['conversations']:,} conversations")


def _verdict_line(doc: Doc) -> str:
    if not doc["controls_held"]:
        return "control equivalence FAILED: the lanes' results cannot be compared fairly"
    return ("every sample passed; controls held" if doc["passed"]
            else "some samples failed; controls held")


def _lane_rows(doc: Doc) -> list[list[str]]:
    return [[visible(d["name"]), d["commit"][:12], visible(shown(d["target_env"])) or "-",
             _rate(d["pass_rate"]), _controls(d)] for d in doc["lanes"]]


def _scenario_rows(doc: Doc) -> tuple[list[str], list[list[str]]]:
    keys: list[tuple[str, str]] = []
    cells: dict[tuple[str, str, str], str] = {}
    for d in doc["lanes"]:
        for s in d["scenarios"]:
            key = (s["case"], s["scenario"])
            if key not in keys:
                keys.append(key)
            cells[(d["name"], *key)] = f"{s['verdict']} {s['passes']}/{s['trials']}"
    head = ["case", "scenario", *(visible(d["name"]) for d in doc["lanes"])]
    return head, [[visible(k[0]), visible(k[1]),
                   *(cells.get((d["name"], *k), "-") for d in doc["lanes"])] for k in keys]


def _metric_rows(doc: Doc) -> list[list[str]]:
    rows = []
    for name in METRICS:
        got = [d["metrics"][name] for d in doc["lanes"]]
        if name in ("retries", "tool_failures", "compactions", "recoveries", "cost") and \
                not any(m["n"] for m in got):
            continue  # reported by no reply of any lane: said once below, not as rows
        rows.append([name, *(_metric(m) for m in got)])
    return rows


def _unreported(doc: Doc) -> list[str]:
    return [name for name in METRICS
            if not any(d["metrics"][name]["n"] for d in doc["lanes"])]


def _comparison_rows(doc: Doc) -> list[list[str]]:
    return [[f"{visible(c['case'])}/{visible(c['scenario'])}",
             f"{visible(c['a'])} vs {visible(c['b'])}",
             f"{c['a_passes']}/{c['a_trials']} vs {c['b_passes']}/{c['b_trials']}",
             c["change"], _p(c["p"]), "" if c.get("q") is None else f"q={c['q']:.3g}",
             "beyond noise" if c["beyond_noise"] else ""]
            for c in doc["comparisons"] if c["change"] not in ("unchanged",)]


def _problems(doc: Doc) -> list[str]:
    return [f"lane {visible(d['name'])}: {visible(p)}" for d in doc["lanes"]
            for p in d["controls"]["problems"]]


def _realized(doc: Doc) -> list[str]:
    """``lane a: model m-2026-01 (12 samples), driver loop/2 (12)``, for each lane whose
    replies reported either (older reports, and targets that say nothing, have none)."""
    out = []
    for d in doc["lanes"]:
        parts = [f"{f} {visible(value)} ({sum(counts.values())} samples"
                 + (f", {unreported} unreported" if unreported else "") + ")"
                 for f, value, counts, unreported in _realized_fields(d.get("realized"))
                 if value]
        if parts:
            out.append(f"lane {visible(d['name'])}: {', '.join(parts)}")
    return out


def _realized_fields(r: RealizedDoc | None
                     ) -> list[tuple[str, str | None, dict[str, int], int]]:
    """``(field, the lane's value, samples per value, samples naming none)`` for the
    model and the driver (none for a lane without the part)."""
    if not r:
        return []
    return [("model", r.get("model"), r.get("models") or {}, r.get("model_unreported") or 0),
            ("driver", r.get("driver"), r.get("drivers") or {},
             r.get("driver_unreported") or 0)]


def _calibration(doc: Doc) -> list[str]:
    """``lane a: calibration: q.tone advisory (...)`` for each lane with a judge grader
    (nothing when no lane's grader asks the judge: the usual experiment)."""
    from gitevals.report.calibration import run_line

    out = []
    for d in doc["lanes"]:
        line = run_line(d.get("judge_calibration")) if d.get("judge_calibration") else None
        if line is not None:
            out.append(f"lane {visible(d['name'])}: {line}")
    return out


Block = tuple[list[str], list[list[str]]] | str  # a table (head, rows) or a line


def _blocks(doc: Doc, tail: str) -> list[Block]:
    """The text report as tables and lines: lanes, scenarios, measures, comparisons."""
    out: list[Block] = [_headline(doc), ""]
    out.append((["lane", "commit", "env", "pass rate [95% interval]", "controls"],
                _lane_rows(doc)))
    out += ["", _scenario_rows(doc), ""]
    out.append((["measure (per trial)", *(visible(d["name"]) for d in doc["lanes"])],
                _metric_rows(doc)))
    silent = _unreported(doc)
    if silent:
        out.append(f"not reported by any reply (missing, not zero): {', '.join(silent)}")
    comp = _comparison_rows(doc)
    out += ["", f"pairwise ({doc['test']} exact test, beyond noise when q < {doc['alpha']:g}; "
                f"{doc.get('control_text', 'no multiple-comparison control')}):"]
    out.append((["scenario", "lanes", "passes", "change", "p", "q", ""], comp) if comp
               else "  no scenario differs between lanes")
    out += ["", *_realized(doc), *_calibration(doc), *_problems(doc),
            _verdict_line(doc) + tail]
    return out


def render_text(doc: Doc, tail: str = "") -> str:
    """The report as plain text: lanes, scenarios, measures, comparisons, controls."""
    out: list[str] = []
    for block in _blocks(doc, tail):
        out += [block] if isinstance(block, str) else _table(*block)
    return "\n".join(out) + "\n"


def render_rich(doc: Doc, tail: str = "", width: int | None = None) -> str:
    """The report with rich tables, for a terminal (cells are ``Text``: never markup)."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, highlight=False,
                      color_system="standard", legacy_windows=False)
    for block in _blocks(doc, tail):
        if isinstance(block, str):
            console.print(Text(block))
            continue
        table = Table(box=None, pad_edge=False, header_style="bold")
        for name in block[0]:
            table.add_column(name, overflow="fold")
        for row in block[1]:
            table.add_row(*(Text(c, style="red" if c == "FAILED" else "") for c in row))
        console.print(table)
    return buf.getvalue()


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(md_inert(c) for c in cells) + " |"
    return [line(head), "|" + "---|" * len(head), *(line(r) for r in rows)]


def render_markdown(doc: Doc) -> str:
    """The report as Markdown for a PR comment (every cell made inert)."""
    out = [f"### {md_inert(_headline(doc))}", ""]
    out += _md_table(["lane", "commit", "env", "pass rate [95% interval]", "controls"],
                     _lane_rows(doc))
    head, rows = _scenario_rows(doc)
    out += ["", *_md_table(head, rows), ""]
    out += _md_table(["measure (per trial)", *(d["name"] for d in doc["lanes"])],
                     _metric_rows(doc))
    comp = _comparison_rows(doc)
    if comp:
        out += ["", *_md_table(["scenario", "lanes", "passes", "change", "p", ""], comp)]
    out += ["", *(f"- {md_inert(p)}" for p in [*_calibration(doc), *_problems(doc)]),
            f"**{_verdict_line(doc)}**"]
    return "\n".join(out) + "\n"


def render(doc: Doc, fmt: str, tail: str = "", terminal: bool = False) -> str:
    """``doc`` as ``fmt`` (text, json, markdown); text with rich tables on a terminal."""
    if fmt == "json":
        return dumps(doc)
    if fmt == "markdown":
        return render_markdown(doc)
    return render_rich(doc, tail) if terminal else render_text(doc, tail)
