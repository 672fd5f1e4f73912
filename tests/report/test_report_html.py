"""``report.html`` (pure): escaping, the policy, generic fields, plots."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from gitevals.diff.verdicts import Tally
from gitevals.report.history import Commit, build
from gitevals.report.html import Report, esc, plot, render, value
from tests.support.artifacts import PARIS, artifact, result, sample, scenario, transcript

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&</style>"


class Tags(HTMLParser):
    """Every start tag and attribute name of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.update(name for name, _ in attrs)


def bodies_of(text: str) -> list[str]:
    """The trial bodies a page keeps as data (base64 of gzip of a JSON list); [] if none."""
    if '<script type="text/plain" id="bodies">' not in text:
        return []
    data = text.split('<script type="text/plain" id="bodies">', 1)[1].split("</script>", 1)[0]
    assert re.fullmatch(r"[A-Za-z0-9+/=]*", data)  # nothing that could end the element
    bodies: list[str] = json.loads(gzip.decompress(base64.b64decode(data)))
    return bodies


def page(run: dict[str, Any], static: int = 1000) -> str:
    history = build([(Commit(run["commit"], "subject"), {
        (c["name"], s["id"]): Tally(s["verdict"]["verdict"], s["verdict"]["passes"],
                                    s["verdict"]["trials"]) for c in run["cases"]
        for s in c["scenarios"]})])
    report = Report(run, history, "HEAD", None, "nothing to compare", "0.1.0",  # type: ignore[arg-type]
                    static)
    return render(report)


@pytest.mark.parametrize("static", [1000, 0], ids=["inline", "as-data"])
def test_data_is_escaped_everywhere(static: int) -> None:
    bad = transcript(EVIL, calls=[{"name": EVIL, "args": {EVIL: EVIL}, "result": EVIL}])
    bad["hooks"] = [{"name": EVIL, "decision": EVIL}]
    bad["turns"] = [{"final_answer": EVIL, EVIL: [EVIL]}]
    run = artifact({"evil": [scenario("s", PARIS, [result(0, PARIS, bad)])]})
    run["rev"] = run["run_id"] = EVIL
    text = page(run, static)
    assert EVIL not in text and "<img" not in text
    whole = text + "".join(bodies_of(text))
    assert EVIL not in whole and "<img" not in whole
    assert whole.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8
    parsed = Tags()
    parsed.feed(text)
    assert parsed.tags.count("style") == 1
    assert parsed.tags.count("script") == (0 if static else 2)
    assert not {a for a in parsed.attrs if a.startswith("on")}
    assert {a for a in parsed.attrs} <= {"lang", "charset", "http-equiv", "content", "name",
                                         "href", "id", "class", "type", "checked", "xmlns",
                                         "width", "height", "viewbox", "role", "x", "y", "x1",
                                         "x2", "y1", "y2", "cx", "cy", "r", "d", "text-anchor",
                                         "transform", "data-n"}
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert hrefs and all(re.fullmatch(r"#[a-z]+\d*", h) for h in hrefs)


def test_the_policy_allows_exactly_the_one_stylesheet() -> None:
    text = page(sample())
    style = text.split("<style>", 1)[1].split("</style>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert policy is not None
    assert policy.group(1) == (f"default-src 'none'; style-src 'sha256-{digest}'; "
                               "script-src 'none'; base-uri 'none'; form-action 'none'")
    assert "<script" not in text


def test_a_large_run_keeps_transcripts_as_inert_data() -> None:
    text = page(sample(), static=3)  # 7 trials
    policy = re.search(r'content="(default-src[^"]*)"', text)
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert policy is not None and f"script-src 'sha256-{digest}';" in policy.group(1)
    bodies = bodies_of(text)
    assert len(bodies) == 4 and text.count('<details class="trials" data-n="') == 4
    assert bodies[0].count('<details class="trial ') == 2 and "<h5>Assertions</h5>" in bodies[0]
    assert text.count('<div class="body"></div>') == 4 and "2 trials: 1 passed, 1 failed" in text


def test_text_no_encoding_can_write_is_shown_as_an_escape() -> None:
    assert esc("a\x00b\ud800c\x1b") == "a\\x00b\\ud800c\\x1b"
    page(artifact({"odd": [scenario("s", PARIS, [result(0, PARIS, transcript("\ud800\x07"))])]}
                  )).encode("utf-8")  # writable: no lone surrogate left


def test_fields_without_a_view_are_shown_generically() -> None:
    """Any trial field a newer gitevals adds, before the page has a view for it."""
    t = result(0, PARIS, transcript())
    t["probe"] = {"state": "needs_revision", "final_reward": 0.5, "steps": [  # type: ignore
        {"step": 0, "reward": 0.25, "tail": EVIL},
        {"step": 1, "reward": 0.5, "tail": "ok"}]}
    text = page(artifact({"probe": [scenario("s", PARIS, [t])]}))
    assert "<h5>probe</h5>" in text
    table = text.split("<h5>probe</h5>", 1)[1]
    assert "<dt>steps</dt>" in table and "<dt>state</dt>" in table
    assert all(f"<th>{k}</th>" in table for k in ("step", "reward", "tail"))
    assert "<code>0.25</code>" in table and esc(EVIL) in table


def test_task_iterations_show_as_turns() -> None:
    """A task trial's revision messages are the later user turns of its conversation."""
    t = result(0, PARIS, transcript())
    t["task"] = {"state": "needs_revision", "final_reward": 0.5, "sandbox": "bwrap",
                 "iterations": [
        {"iteration": 0, "message": "go", "reward": 0.25, "verifier_tail": EVIL},
        {"iteration": 1, "message": "try <again>", "reward": 0.5, "verifier_tail": "ok"}]}
    text = page(artifact({"task": [scenario("s", PARIS, [t])]}))
    assert esc("try <again>") in text and "try <again>" not in text


def test_value_shapes() -> None:
    assert value(None) == "<code>null</code>"
    assert value({}) == "<code>{}</code>"
    assert value([1, "<a>"]) == "<ol class=\"list\"><li><code>1</code></li><li>&lt;a&gt;</li></ol>"
    deep: Any = "x"
    for _ in range(10):
        deep = [deep]
    assert "[[[[" in value(deep)  # past DEPTH: its JSON text


def test_one_point_per_commit_holding_the_scenario() -> None:
    key = ("c", "s")
    history = build([(Commit("1" * 40, "a"), {key: Tally("pass", 3, 3)}),
                     (Commit("2" * 40, "b"), {}),
                     (Commit("3" * 40, "c"), {key: Tally("fail", 0, 3)})])
    svg = plot(history, 0)
    assert svg.count("<circle") == 2 and svg.count("class=\"xl\"") == 3
    assert "class=\"pt v-fail\"" in svg and "regressed" not in svg  # 3/3 -> 0/3: p 0.1


def test_tokens_and_cost_columns_when_reported() -> None:
    def paid(tokens: int) -> dict[str, Any]:
        t = transcript("Paris")
        t["turns"] = [{"final_answer": "Paris", "cost": 0.5,
                       "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}]
        return t

    run = artifact({"paid": [scenario("s", PARIS, [result(0, PARIS, paid(1200)),
                                                   result(1, PARIS, paid(34))])]})
    text = page(run)
    table = text.split('<table class="overview">', 1)[1].split("</table>", 1)[0]
    assert "<th>tokens in/out</th><th>cost</th>" in table
    assert "<td>1,234/2</td><td>1</td>" in table
    assert page(sample()).count("tokens in/out") == 0


def test_report_argument_default_is_the_pages() -> None:
    """The --static-transcripts default is written in the command (no page import at
    start-up): it must stay the page's own."""
    import argparse

    from gitevals.commands import report
    from gitevals.report.html import STATIC

    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    assert parser.parse_args([]).static_transcripts == STATIC
