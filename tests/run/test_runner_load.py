"""api.load_case_file: a case file that parses but is not a mapping is a GE000 finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.api import load_case_file
from gitevals.findings import Finding
from gitevals.git.trees import WorkingTree

MESSAGE = "cannot load the case: the top level is not a mapping; run `gitevals lint`"


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "~\n", "42\n"],
                         ids=["list", "string", "null", "number"])
def test_a_top_level_that_is_not_a_mapping_is_ge000(tmp_path: Path, text: str) -> None:
    (tmp_path / "c.yaml").write_text(text)
    case, findings = load_case_file(WorkingTree(tmp_path), "c.yaml")
    assert case is None
    assert findings == [Finding("c.yaml", 1, 1, "GE000", MESSAGE)]


def test_a_mapping_loads(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("scenarios:\n  - id: s\n    user: hi\n"
                                     "    expect:\n      - no_error: true\n")
    case, findings = load_case_file(WorkingTree(tmp_path), "c.yaml")
    assert findings == []
    assert case is not None and case.name == "c"
    assert [a.as_dict() for a in case.scenarios[0].expect] == [{"no_error": True}]
