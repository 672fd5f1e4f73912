"""Issue 8, class 1: a finished run is never lost, whatever the target sends or the disk says.

Each input is made in a real repository under ``tmp_path``; the real CLI runs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitevals.run.archive import digest
from gitevals.run.artifact import load, validate
from gitevals.run.summary import pack, summarize
from tests.conftest import Repo, run_cli

#: A command target (a Python per conversation) started with -S: its harness imports only
#: the standard library, and site's work (the venv's .pth files) is not what is tested.
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
CASE = """\
defaults: {trials: 1, timeout: 20s}
scenarios:
  - id: one
    user: hello
    expect: [{no_error: true}]
"""

#: A target that sends one fixed reply line per turn (``REPLY`` is a Python expression
#: that builds the text of the line).
TARGET = """\
import sys
for line in sys.stdin:
    sys.stdout.write({reply} + "\\n")
    sys.stdout.flush()
"""

GOOD = '\'{"final_answer": "hi"}\''
REPLIES = [
    ("deep-100000", '\'{"final_answer": "x", "deep": \' + "[" * 100000 + "]" * 100000 + "}"',
     "reply cannot be kept in the run: it is nested too deep to parse"),
    ("deep-500", '\'{"final_answer": "x", "deep": \' + "[" * 500 + "]" * 500 + "}"',
     "reply cannot be kept in the run: it is nested more than 200 levels deep"),
    ("lone-surrogate", '\'{"final_answer": "\\\\ud800"}\'',
     "reply cannot be kept in the run: it holds a lone UTF-16 surrogate"),
    ("surrogate-in-a-key", '\'{"final_answer": "ok", "\\\\udfff": 1}\'',
     "reply cannot be kept in the run: it holds a lone UTF-16 surrogate"),
    ("float-past-1.8e308", '\'{"final_answer": "x", "tokens": 1e400}\'',
     "reply cannot be kept in the run: it holds a number too large to read or hold"),
]


def _setup(repo: Repo, reply: str = GOOD) -> str:
    return repo.commit({"harness.py": TARGET.format(reply=reply), "pyproject.toml": SETTINGS,
                        "evals/cases/c.yaml": CASE})


def _trial(run: dict[str, object]) -> dict[str, object]:
    return run["cases"][0]["scenarios"][0]["results"][0]  # type: ignore[index, no-any-return]


@pytest.mark.parametrize(("reply", "message"), [r[1:] for r in REPLIES],
                         ids=[r[0] for r in REPLIES])
def test_a_reply_that_cannot_be_kept_is_a_protocol_error_of_its_trial(
        repo: Repo, reply: str, message: str) -> None:
    commit = _setup(repo, reply)
    res = run_cli("run", "--format", "json", cwd=repo.path)
    assert res.code == 1, res.err
    run = json.loads(res.out)
    assert validate(run) is None
    error = _trial(run)["error"]
    assert error["kind"] == "target_protocol"  # type: ignore[index]
    assert error["message"].startswith(message)  # type: ignore[index]
    note = repo.git("notes", "--ref", "gitevals", "show", commit)
    assert validate(json.loads(note)) is None
    assert run_cli("show", cwd=repo.path).code == 1


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dangling(p: Path) -> None:
    p.symlink_to(p.parent / "nowhere" / "at-all")


def _file(p: Path) -> None:
    p.write_text("not a directory")


def _outside(p: Path) -> None:
    p.symlink_to(p.parents[2] / "outside")


PLACES: list[tuple[str, Callable[[Path], None], str]] = [
    ("fifo", _fifo, "(Not a directory|File exists)"),
    ("dangling-symlink", _dangling, "(Not a directory|File exists|No such file)"),
    ("regular-file", _file, "(Not a directory|File exists)"),
    ("symlink-outside-the-repository", _outside, "it leads outside the repository"),
]


@pytest.mark.parametrize(("make", "why"), [p[1:] for p in PLACES], ids=[p[0] for p in PLACES])
def test_results_that_cannot_be_written_go_to_a_printed_fallback(
        repo: Repo, tmp_path: Path, make: Callable[[Path], None], why: str) -> None:
    commit = _setup(repo)
    (repo.path / "evals").mkdir(exist_ok=True)
    make(repo.path / "evals" / "results")
    outside = tmp_path / "outside"
    (tmp_path / "tmp").mkdir()
    before = sorted(tmp_path.iterdir())
    res = run_cli("run", cwd=repo.path, env={"TMPDIR": str(tmp_path / "tmp")})
    assert res.code == 0, res.err
    line = next(x for x in res.err.splitlines() if "cannot write evals/results/" in x)
    assert re.search(f"cannot write evals/results/ \\({why}", line), line
    fallback = Path(line.rsplit("the run is in ", 1)[1].removesuffix(" instead"))
    assert fallback.parent == tmp_path / "tmp"
    run = load(fallback)
    assert run["commit"] == commit and run["cases"][0]["scenarios"][0]["verdict"]["verdict"] \
        == "pass"
    assert json.loads(repo.git("notes", "--ref", "gitevals", "show", commit)) == \
        pack(summarize(run, *digest(run)[:2]))
    assert not outside.exists()  # nothing was written through the symlink
    assert sorted(tmp_path.iterdir()) == before


def test_a_work_directory_left_by_a_killed_run_is_removed_by_the_next(
        repo: Repo, tmp_path: Path) -> None:
    _setup(repo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    stale, live, foreign = tmp / "gitevals-run-stale1", tmp / "gitevals-run-live01", tmp / "x"
    for d in (stale, live, foreign):
        (d / "tree").mkdir(parents=True)
        (d / "owner.lock").touch()
    held = os.open(live / "owner.lock", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)  # a run still going: its lock is held
    try:
        res = run_cli("run", cwd=repo.path, env={"TMPDIR": str(tmp)})
        assert res.code == 0, res.err
    finally:
        os.close(held)
    assert not stale.exists()
    assert live.exists() and foreign.exists()
    assert sorted(p.name for p in tmp.iterdir()) == ["gitevals-run-live01", "x"]


def test_an_artifact_nested_too_deep_is_one_line(repo: Repo, tmp_path: Path) -> None:
    _setup(repo)
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "gitevals-run/1", "x": ' + "[" * 100000 + "]" * 100000 + "}")
    res = run_cli("show", str(deep), cwd=repo.path)
    assert res.code == 2
    assert res.err == (f"gitevals: error: {deep}: not a gitevals run artifact: nested too deep "
                       "to read (gitevals writes runs at most a few hundred levels deep)\n")


def test_a_fifo_named_like_a_run_never_hangs_show_or_diff(repo: Repo) -> None:
    commit = _setup(repo)
    assert run_cli("run", "--no-note", cwd=repo.path).code == 0
    results = repo.path / "evals" / "results"
    (real,) = results.iterdir()
    os.mkfifo(results / f"20991231T000000Z-{commit[:12]}-ffffff.json")
    shown = run_cli("show", cwd=repo.path, timeout=20)
    assert shown.code == 0 and real.stem in shown.out
    fifo = run_cli("show", str(results / f"20991231T000000Z-{commit[:12]}-ffffff.json"),
                   cwd=repo.path, timeout=20)
    assert fifo.code == 2 and "cannot read: not a regular file" in fifo.err
    diffed = run_cli("diff", "HEAD", "HEAD", cwd=repo.path, timeout=20)
    assert diffed.code == 0, diffed.err


def test_names_from_the_tree_cannot_drive_the_terminal(repo: Repo) -> None:
    name = "evil\x1b]0;owned\x07\x1b[2J"
    repo.commit({"harness.py": TARGET.format(reply=GOOD), "pyproject.toml": SETTINGS,
                 f"evals/cases/{name}.yaml": CASE})
    for args in (("run",), ("show",)):
        res = run_cli(*args, cwd=repo.path)
        assert res.code == 0, res.err
        assert "\x1b" not in res.out and "\x07" not in res.out
        assert "evil\\x1b]0;owned\\x07\\x1b[2J" in res.out


def test_a_plan_over_the_bound_is_refused_before_anything_starts(repo: Repo,
                                                                tmp_path: Path) -> None:
    repo.commit({"harness.py": f"open({str(tmp_path / 'started')!r}, 'w')\n",
                 "pyproject.toml": SETTINGS, "evals/cases/c.yaml": CASE})
    res = run_cli("run", "--trials", "1000000000000", cwd=repo.path)
    assert res.code == 2  # the flag's own bound (issue 25 item 12) speaks first
    assert res.err == ("gitevals run: error: argument --trials: '1000000000000' is past the "
                       "bound of 10,000: give 1 to 10,000; see `gitevals run --help`\n")
    many = "defaults: {trials: 10000}\nscenarios:\n" + "".join(
        f"  - id: s{i}\n    user: hello\n" for i in range(11))  # 110,000 trials in all
    repo.commit({"evals/cases/c.yaml": many})
    res = run_cli("run", cwd=repo.path)  # each count within bounds, the plan over its own
    assert res.code == 2
    assert res.err == ("gitevals: error: this run would make 110,000 trials, over the limit "
                       "of 100,000 a run; lower `trials` (or --trials), or run fewer cases "
                       "at once\n")
    assert not (tmp_path / "started").exists()
    assert not (repo.path / "evals" / "results").exists()
