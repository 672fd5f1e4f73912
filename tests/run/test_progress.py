"""Progress on stderr: plain lines when piped (CI logs), stdout the result alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from gitevals.report.progress import plain_line
from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support import runs
from tests.support.runs import scenario_case

#: The example harness as a python target (``runs.AGENT``: the same answers, slow* after
#: 0.3 s): progress is about counting trials, not about command targets; one Python a
#: run instead of one a conversation.
SETTINGS = runs.AGENT_SETTINGS


def setup(repo: Repo, cases: dict[str, str], graders: dict[str, str] | None = None,
          settings: str = SETTINGS) -> str:
    """``runs.setup`` with the example harness as a python target (``SETTINGS``)."""
    return runs.setup(repo, cases, graders, settings)


LINE = re.compile(r"^gitevals: (\d+)/2 cases, (\d+)/(\d+) trials done, (\d+) failed, "
                  r"(\d+) in flight$")


@pytest.mark.parametrize(("args", "want"), [
    ((3, 10, "trials", 1, 4, ("cases", 2), 0),
     "gitevals: 0/2 cases, 3/10 trials done, 1 failed, 4 in flight"),
    ((5, 9, "trials", 0, None, None, None), "gitevals: 5/9 trials done, 0 failed"),
], ids=["run", "regrade"])
def test_plain_line(args: tuple, want: str) -> None:  # type: ignore[type-arg]
    assert plain_line(*args) == want


def test_a_piped_run_prints_plain_progress_lines_on_stderr(repo: Repo) -> None:
    # 3 rounds of two 0.3 s trials, a line at most every 0.1 s: the first two rounds
    # each end with a line (none for the last: the result follows)
    setup(repo, {"a": scenario_case("slow-a", trials=3), "b": scenario_case("slow-b", 3)})
    res = run_cli("run", "--jobs", "2", "--format", "json", cwd=repo.path,
                  env={"GITEVALS_PROGRESS_INTERVAL": "0.1"})
    assert res.code == 0, res.err
    assert json.loads(res.out)["cases"]  # stdout: the artifact and nothing else
    lines = [m for m in map(LINE.match, res.err.splitlines()) if m]
    assert len(lines) >= 2, res.err
    for m in lines:
        cases, done, total, failed, flight = map(int, m.groups())
        assert total == 6 and done < total and failed == 0 and 0 <= flight <= 2 and cases <= 2
    assert [int(m.group(2)) for m in lines] == sorted(int(m.group(2)) for m in lines)


def test_a_short_piped_run_prints_no_progress(repo: Repo) -> None:
    setup(repo, {"a": scenario_case("ok", trials=2)})
    res = run_cli("run", cwd=repo.path)
    assert res.code == 0, res.err
    assert "trials done" not in res.err
    assert "trials done" not in res.out


def test_the_terminal_bar_shows_conversations_in_flight(repo: Repo) -> None:
    setup(repo, {"a": scenario_case("slow-a", trials=6)})
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run", "--jobs", "2"],
                            cwd=repo.path, stdout=subprocess.DEVNULL, stderr=slave,
                            env={**os.environ, **GIT_ENV, "COLUMNS": "120"})
    os.close(slave)
    seen = b""
    try:
        while chunk := os.read(master, 65536):  # read as it comes: a full pty blocks
            seen += chunk
    except OSError:  # EIO: the child closed the terminal
        pass
    finally:
        os.close(master)
        proc.wait(timeout=60)
    assert proc.returncode == 0
    text = seen.decode("utf-8", "replace")
    assert re.search(r"trials  0 failed  [12] in flight", text), text[-2000:]
