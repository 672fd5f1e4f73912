"""``report.text``'s task escapes, for any text: nothing unsafe reaches a terminal, and each
form reads back to exactly the text it shows."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from gitevals.text import UNSAFE, block, json_safe, quoted

# Text weighted towards what matters: controls, separators, bidi, backslashes, "u".
NASTY = st.sampled_from(list("\x00\x07\x1b\n\r\t\x7f\x85\x9b\u2028\u2029\u202e\u2066\u061c"
                             "\\u\"0aé"))
TEXT = st.lists(st.one_of(NASTY, st.characters()), max_size=40).map("".join)
_ESCAPE = re.compile(r"\\u([0-9a-f]{4})")


@given(TEXT)
def test_quoted_is_safe_and_exact(text: str) -> None:
    out = quoted(text)
    assert not UNSAFE.search(out)
    assert json.loads(out) == text


@given(TEXT)
def test_json_safe_is_safe_and_exact(text: str) -> None:
    out = json_safe({"k": text, "list": [text]})
    assert not UNSAFE.search(out.replace("\n", ""))
    assert json.loads(out) == {"k": text, "list": [text]}


@given(TEXT)
def test_block_lines_read_back(text: str) -> None:
    lines = block(text)
    assert not any(UNSAFE.search(line) for line in lines)
    back = "\n".join(_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), ln) for ln in lines)
    assert back == (text[:-1] if text.endswith("\n") else text)  # a final newline ends a line
