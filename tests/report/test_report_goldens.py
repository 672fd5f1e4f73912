"""The HTML report shows the goldens (issue 23, item 17): the pass rate per slice in the
overview and every golden and drift row as a transcript, escaped like everything else."""

from __future__ import annotations

import html
import json
import sys

import pytest

from tests.conftest import Repo, run_cli

HARNESS = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    ok = msg["scenario"] in ("g0", "g2")
    print(json.dumps({"final_answer": "ok" if ok else "<script>no</script>",
                      "tool_calls": [], "hooks": [], "error": None}), flush=True)
"""
#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
SETTINGS = f"""\
[tool.gitevals.target]
command = ["{sys.executable}", "-S", "harness.py"]

[tool.gitevals.goldens]
graders = {{tone = "checks.exact", format = "checks.exact"}}
"""
GRADERS = 'def exact(t, case, run):\n    return run["final_answer"] == case["expected"]\n'


def _repo(repo: Repo) -> None:
    rows = [{"id": f"g{i}", "bucket": b, "input": f"<b>question {i}</b>", "expected": "ok"}
            for i, b in enumerate(("tone", "tone", "format", "format"))]
    repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                 "evals/graders/checks.py": GRADERS,
                 "evals/goldens.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})
    assert run_cli("run", cwd=repo.path).code == 1  # g1 and g3 fail


@pytest.mark.parametrize("static", ["1000", "0"], ids=["inline", "packed"])
def test_the_report_has_the_slices_and_every_golden(repo: Repo, static: str) -> None:
    _repo(repo)
    page = repo.path / "page.html"
    made = run_cli("report", "HEAD", "-o", str(page), "--static-transcripts", static,
                   cwd=repo.path)
    assert made.code == 0, made.err
    text = page.read_text()
    assert "goldens: 4 items, a pass rate per slice" in text
    assert "<td>bucket tone</td><td>checks.exact</td><td>1/2</td><td>50.0%</td>" in text
    assert 'href="#golden-transcripts"' in text
    if static == "1000":
        for i in range(4):
            assert f"<b>g{i} · {'passed' if i % 2 == 0 else 'FAILED'}</b>" in text
        assert html.escape("<b>question 1</b>") in text
    else:  # the slices' items are packed data, opened with the page's script
        assert text.count('<details class="trials" data-n=') >= 2
    assert "<script>no</script>" not in text and "<b>question" not in text
