"""Markdown output is inert data: rendered as GitHub would (GFM tables, raw HTML and
autolinks on) by markdown-it-py, nothing from a run or a tree becomes an element."""

from __future__ import annotations

import json
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gitevals.report.runs import Refused, markdown, render
from gitevals.text import md_inert, one_line
from tests.conftest import Repo, run_cli
from tests.support.artifacts import artifact, result, scenario, transcript

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "![x](http://tracker/p.png)",
    "[click](javascript:alert(1))",
    "<http://evil.example/>",
    "see http://evil.example/a or www.evil.example",
    "mail x@evil.example",
    "**bold** _em_ ~~gone~~ `code` $x^2$",
    "&lt;b&gt; &amp; &#60;i&#62;",
    "a|b",
    "a\\|b\\",
    "cr\rsplits\nrows",
    "> quote",
    "- item",
    "1. first",
    "# heading",
    "[ref]: http://evil.example/",
    "v1.www.x",
    "http://1.2.3.4/ and www.1.2.co and 1.2.3.4@x.co",
    "1.5.0.example.com",
]

#: Element tokens data must never produce.
FORBIDDEN = {"html_inline", "html_block", "image", "link_open", "code_inline", "em_open",
             "strong_open", "s_open", "blockquote_open", "heading_open", "bullet_list_open",
             "ordered_list_open"}


def render_md(text: str) -> list[Token]:
    return MarkdownIt("gfm-like", {"html": True, "linkify": True}).parse(text)


def walk(tokens: list[Token]) -> list[Token]:
    out = []
    for t in tokens:
        out.append(t)
        out += walk(t.children or [])
    return out


#: What gitevals' own Markdown uses around the data: bold summaries, #### titles, lists.
OWN = frozenset({"strong_open", "heading_open", "bullet_list_open"})


def inert(text: str) -> list[list[str]]:
    """The table rows of ``text`` (header rows included) as rendered cell text, after
    checking that no forbidden token came out of the rendering."""
    tokens = render_md(text)
    made = {t.type for t in walk(tokens)} & (FORBIDDEN - OWN)
    assert not made, f"data became markup ({made}):\n{text}"
    rows: list[list[str]] = []
    for t in tokens:
        if t.type == "tr_open":
            rows.append([])
        elif t.type == "inline" and rows and t.level >= 3:  # a th/td's content
            rows[-1].append("".join(c.content for c in t.children or [] if c.type == "text"))
    return rows


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_md_inert_renders_as_the_text_itself(data: str) -> None:
    for markup in (f"| h |\n|---|\n| {md_inert(data)} |\n", f"- {md_inert(data)}\n"):
        tokens = walk(render_md(markup))
        assert not {t.type for t in tokens} & (FORBIDDEN - {"bullet_list_open"}), markup
        last = [t for t in tokens if t.type == "inline"][-1]  # the cell, or the list item
        text = "".join(t.content for t in last.children or [] if t.type == "text")
        assert text == one_line(data)


NUMBERS = [("100.0%", "100.0%"), ("0.25", "0.25"), ("1.2.3", "1.2.3"),
           ("v1.2.3: 50.0% of 0.25s", "v1.2.3: 50.0% of 0.25s"),
           ("1.5 turns", "1.5 turns"), ("+50.0", "\\+50.0"), ("1. first", "1\\. first"),
           ("2) second", "2\\) second"), ("3.", "3\\.")]


@pytest.mark.parametrize(("data", "written"), NUMBERS, ids=[d for d, _ in NUMBERS])
def test_md_inert_leaves_the_dots_of_numbers(data: str, written: str) -> None:
    """A dot between digits starts no autolink and no list (``1.5`` is text); a list
    marker (``1.`` before a space or the end) still gets its escape."""
    assert md_inert(data) == written
    for markup in (f"| h |\n|---|\n| {written} |\n", f"- {written}\n"):
        tokens = walk(render_md(markup))
        assert not {t.type for t in tokens} & (FORBIDDEN - {"bullet_list_open"}), markup
        last = [t for t in tokens if t.type == "inline"][-1]
        assert "".join(t.content for t in last.children or [] if t.type == "text") == data


@pytest.mark.parametrize(("data", "written"), [
    ("www.example.com", "www\\.example\\.com"), ("http://x.y", "http\\://x\\.y"),
    ("a@b.co", "a\\@b\\.co"), ("v1.www.x", "v1\\.www\\.x"),
    ("1.2.example.com", "1.2\\.example\\.com"), ("www.1.2", "www\\.1.2"),
], ids=["www", "scheme", "email", "www-after-version", "digits-then-domain", "www-digits"])
def test_md_inert_still_breaks_every_autolink(data: str, written: str) -> None:
    """What GitHub would link (a ``www.`` prefix, a scheme, an address, a top-level
    domain) keeps a backslash on its ``.``, ``:`` or ``@``, digits around it or not."""
    assert md_inert(data) == written


def hostile_run() -> dict[str, Any]:
    expect = [{"final_answer_contains": "Paris"}]
    return artifact({
        f"case{i}": [scenario(f"s{i}", expect, [result(0, expect, transcript(data))])]
        for i, data in enumerate(HOSTILE)})


def test_run_markdown_keeps_answers_as_text() -> None:
    rows = inert(render(hostile_run(), "markdown"))
    assert rows[0] == ["case", "scenario", "verdict", "passes", "duration", "first failure"]
    failures = {r[0]: r[5] for r in rows[1:]}
    for i, data in enumerate(HOSTILE):
        assert all(len(r) == 6 for r in rows), "a CR, LF or | split a row"
        message = f"final_answer_contains 'Paris': not in the answer {data!r}"
        assert failures[f"case{i}"] == one_line(message), data


def test_refused_cases_in_markdown_are_inert() -> None:
    refused = [Refused("<b>x</b>", ("evals/cases/x.yaml:1:1: GE100 ![a](http://t/p.png)",))]
    rows = inert(markdown(None, refused))
    assert rows[1] == ["<b>x</b>", "(lint)", "🚫 refused by lint", "-", "",
                       "evals/cases/x.yaml:1:1: GE100 ![a](http://t/p.png)"]


def test_show_markdown_through_the_cli(repo: Repo) -> None:
    path = repo.path / "run.json"
    path.write_text(json.dumps(hostile_run()))
    res = run_cli("show", str(path), "--format", "markdown", cwd=repo.path)
    assert res.code == 1
    assert "![x](http://tracker/p.png)" in "".join(
        cell for row in inert(res.out) for cell in row)


# -- diff --format markdown ----------------------------------------------------------------


def golden(gid: str, bucket: str, q: str) -> str:
    return json.dumps({"id": gid, "bucket": bucket, "q": q}) + "\n"


CASE = """\
scenarios:
  - id: hello
    user: hi
    expect: [{final_answer_contains: %s}]
"""


def test_diff_markdown_is_inert(repo: Repo) -> None:
    ids = ["<img src=x onerror=alert(1)>", "[c](javascript:x)", "a|b", "cr\rid"]
    bucket = "<script>b</script>"
    repo.commit({"evals/goldens.jsonl": "".join(golden(i, bucket, "old") for i in ids),
                 "evals/cases/greet.yaml": CASE % json.dumps("<b>hi</b>")}, "a")
    repo.git("tag", "v1")
    repo.commit({"evals/goldens.jsonl": "".join(golden(i, bucket, "![x](http://t/p.png)\rx")
                                                for i in ids),
                 "evals/cases/greet.yaml": CASE % json.dumps("www.evil.example <i>")}, "b")
    repo.git("tag", "v2")
    res = run_cli("diff", "v1", "v2", "--format", "markdown", cwd=repo.path)
    assert res.code == 0, res.err
    rows = inert(res.out)
    goldens = [r for r in rows if len(r) == 5]
    assert [r[0] for r in goldens] == ["id", *(one_line(i) for i in ids)], "a CR or | split a row"
    assert {r[4] for r in goldens[1:]} == {"q: old -> ![x](http://t/p.png) x"}
    cells = [c for r in rows for c in r]
    assert bucket in cells
    assert "~ final_answer_contains: <b>hi</b> -> www.evil.example <i>" in cells
