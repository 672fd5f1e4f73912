"""The experiment report: built from the lanes' run artifacts (pure), and rendered.

``build`` makes the JSON document ``gitevals experiment`` writes to
``<root>/results/experiments/<id>.json``: per lane the pass rate with its 95 % interval,
the scenario verdicts, every measure's observed n, missing n, mean and population
variance, its judge graders' calibration (as its run recorded it: an advisory grader's
failures were not counted), and whether its controls held; per pair of lanes and
scenario, the exact test ``gitevals diff`` uses. ``render`` turns a document into text
or Markdown; it decides nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitevals.diff.stats import DEFAULT_ALPHA, DEFAULT_TEST
from gitevals.diff.verdicts import VerdictRow, compare_verdicts
from gitevals.experiment.controls import (
    Pins,
    Sample,
    across,
    after,
    lane_value,
    realized_counts,
    samples,
    within,
)
from gitevals.experiment.metrics import METRICS, lane_metrics, pass_rate
from gitevals.report.text import md_inert, visible
from gitevals.run.artifact import Run, Trial, scenarios
from gitevals.run.targetenv import shown
from gitevals.stats.multiplicity import DEFAULT_CONTROL

FORMAT = "gitevals-experiment/1"

Doc = dict[str, Any]


@dataclass(frozen=True)
class LaneResult:
    """One lane as run: its label and revision, its pins, and its artifact (None when it
    did not run or cannot be read: ``problem`` says why)."""

    name: str
    rev: str
    pins: Pins
    artifact_path: str
    run: Run | None
    problem: str | None = None
    ran: bool = True  # False for a lane an interruption kept from starting


def _trials(run: Run) -> list[Trial]:
    return [t for _, s in scenarios(run) for t in s["results"]]


def _pins_json(p: Pins) -> Doc:
    return {"files": p.files, "timing": {k: list(v) for k, v in p.timing.items()}}


def _lane(lane: LaneResult, found: Sequence[Sample], more: Sequence[str] = ()) -> Doc:
    """``lane``'s part of the report; ``found``: its samples' realized model and driver;
    ``more``: control problems found across lanes."""
    run = lane.run
    problems = [lane.problem] if lane.problem else after(lane.pins, run) if run else []
    problems += within(found) + list(more)
    trials = _trials(run) if run else []
    passes = sum(1 for t in trials if t["passed"])
    return {
        "name": lane.name, "rev": lane.rev, "commit": lane.pins.commit,
        "tree": lane.pins.tree, "target_env": lane.pins.target_env,
        "artifact": lane.artifact_path, "pins": _pins_json(lane.pins),
        "run_id": run["run_id"] if run else None,
        "interrupted": run["interrupted"] if run else not lane.ran,
        "pass_rate": pass_rate(passes, len(trials)).as_json(),
        "scenarios": [{"case": c["name"], "scenario": s["id"],
                       "verdict": s["verdict"]["verdict"], "passes": s["verdict"]["passes"],
                       "trials": s["verdict"]["trials"]} for c, s in scenarios(run)]
        if run else [],
        "metrics": {k: v.as_json() for k, v in lane_metrics(trials).items()},
        # None: the lane did not run, or its run recorded no calibration
        "judge_calibration": run.get("judge_calibration") if run else None,
        "realized": {"model": lane_value(found, "model"),
                     "driver": lane_value(found, "driver"), **realized_counts(found)},
        "controls": {"held": not problems, "problems": problems},
    }


def _comparisons(lanes: Sequence[LaneResult], test: str, alpha: float,
                 control: str = DEFAULT_CONTROL) -> list[Doc]:
    """Every lane pair, scenario by scenario, under one control across all of them:
    pairs that share a lane share data, so ``fdr`` is Benjamini-Yekutieli here."""
    from gitevals.stats.multiplicity import family

    out: list[Doc] = []
    raw: list[VerdictRow] = []
    for i, a in enumerate(lanes):
        for b in lanes[i + 1:]:
            for row in compare_verdicts(a.run, b.run, test=test, alpha=alpha):
                if row.a is not None and row.b is not None and row.a.trials and row.b.trials:
                    raw.append(row)
                out.append({
                    "a": a.name, "b": b.name, "case": row.case, "scenario": row.scenario,
                    "a_passes": row.a.passes if row.a else None,
                    "a_trials": row.a.trials if row.a else None,
                    "b_passes": row.b.passes if row.b else None,
                    "b_trials": row.b.trials if row.b else None,
                    "change": row.change, "p": row.p, "beyond_noise": row.beyond_noise})
    tested = [c for c in out if c["a_trials"] and c["b_trials"]]
    ps = [row.p if row.p is not None else 1.0 for row in raw]
    qs = family(ps, control, dependent=True)
    for c, q in zip(tested, qs, strict=True):
        c["q"] = q if c["p"] is not None else None
        c["beyond_noise"] = c["p"] is not None and q < alpha
    return out


def build(meta: Doc, lanes: Sequence[LaneResult], test: str = DEFAULT_TEST,
          alpha: float = DEFAULT_ALPHA, control: str = DEFAULT_CONTROL) -> Doc:
    """The report of an experiment: ``meta`` (id, root, cases, repeat, jobs, settings,
    times...) with every lane, the pairwise comparisons (``test`` at ``alpha`` under
    ``control`` across every pair and scenario) and the two decisions."""
    from gitevals.stats.multiplicity import describe

    found = [samples(lane.run) if lane.run else [] for lane in lanes]
    models = across([(lane.name, lane.pins.target_env, lane_value(f, "model"))
                     for lane, f in zip(lanes, found, strict=True)])
    docs = [_lane(lane, f, models.get(lane.name, ()))
            for lane, f in zip(lanes, found, strict=True)]
    held = all(d["controls"]["held"] for d in docs)
    ran = all(lane.run is not None and not lane.run["interrupted"] for lane in lanes)
    passed = ran and all(t["passed"] for lane in lanes if lane.run for t in _trials(lane.run))
    comparisons = _comparisons(lanes, test, alpha, control)
    tests = sum(1 for c in comparisons if c["a_trials"] and c["b_trials"])
    return {"format": FORMAT, **meta, "test": test, "alpha": alpha, "control": control,
            "control_text": describe(control, alpha, tests, dependent=True,
                                     what="lane-pair comparisons"),
            "lanes": docs, "comparisons": comparisons,
            "controls_held": held, "passed": passed}


def exit_code(doc: Doc) -> int:
    """0 only when every sample passed and the controls held."""
    return 0 if doc["passed"] and doc["controls_held"] else 1


def dumps(doc: Doc) -> str:
    """The canonical text of a report (sorted keys, trailing newline)."""
    return json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


# -- text and Markdown ----------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.1f}%"


def _rate(r: Doc) -> str:
    if not r["trials"]:
        return "no trials"
    return f"{r['passes']}/{r['trials']} {_pct(r['rate'])} [{_pct(r['low'])}, {_pct(r['high'])}]"


def _num(x: float | None) -> str:
    if x is None:
        return "unknown"
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.4g}"


def _metric(m: Doc) -> str:
    if not m["n"]:
        return f"unknown (0 of {m['missing']} reported)" if m["missing"] else "unknown"
    miss = f", {m['missing']} missing" if m["missing"] else ""
    return f"mean {_num(m['mean'])}, var {_num(m['variance'])} (n {m['n']}{miss})"


def _controls(d: Doc) -> str:
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
        r = d.get("realized") or {}
        parts = [f"{f} {visible(r[f])} ({sum(r[f + 's'].values())} samples"
                 + (f", {r[f + '_unreported']} unreported" if r[f + "_unreported"] else "")
                 + ")" for f in ("model", "driver") if r.get(f)]
        if parts:
            out.append(f"lane {visible(d['name'])}: {', '.join(parts)}")
    return out


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
