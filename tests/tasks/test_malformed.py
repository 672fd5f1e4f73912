"""Malformed task directories, linted by the real ``gitevals lint`` in a real repository:
each one gives exactly one clear finding, at its file, line and column."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, git, run_cli
from tests.support.task_dirs import GOOD_TOML, TEST_SH, write_task

BASE = "evals/tasks"
_SEEN: set[str] = set()


def _link(target: str) -> Callable[[Path], None]:
    return lambda d: os.symlink(target, d / "instruction.md")


def _fifo(name: str) -> Callable[[Path], None]:
    return lambda d: os.mkfifo(d / name)


def _verifier(line: str) -> str:
    return GOOD_TOML.replace("[verifier]\n", f"[verifier]\n{line}\n")


# (id, task.toml, instruction.md (None: absent), extra files, (file, line, col, code, words))
TABLE: list[tuple[str, str, str | bytes | None, dict[str, str | bytes | Callable[[Path], None]],
                  tuple[str, int, int, str, str]]] = [
    ("symlinked-instruction", GOOD_TOML, None,
     {"notes.md": "Write hello.\n", "_": _link("notes.md")},
     ("instruction.md", 1, 1, "GE901", "a symlink, not a regular file")),
    ("fifo-instruction", GOOD_TOML, None, {"_": _fifo("instruction.md")},
     ("instruction.md", 1, 1, "GE901", "a FIFO, not a regular file")),
    ("directory-instruction", GOOD_TOML, None, {"instruction.md/x": "Write hello.\n"},
     ("instruction.md", 1, 1, "GE901", "a directory, not a regular file")),
    ("invalid-utf8", GOOD_TOML, b"Write hello.\nthen \xff.\n", {},
     ("instruction.md", 2, 6, "GE902", "not UTF-8 (byte 0xff")),
    ("one-mib-and-one-byte", GOOD_TOML, b"a" * 1_048_577, {},
     ("instruction.md", 1, 1, "GE903", "1048577 bytes, over the 1,048,576-byte limit")),
    ("empty-instruction", GOOD_TOML, "", {},
     ("instruction.md", 1, 1, "GE908", "empty: the instruction is what the agent")),
    ("blank-instruction", GOOD_TOML, " \n\n", {},
     ("instruction.md", 1, 1, "GE908", "empty")),
    ("4097-characters", GOOD_TOML, "a" * 4000 + "\n" + "é" * 96, {},
     ("instruction.md", 2, 96, "GE908", "4,097 characters, over the 4,096 allowed")),
    ("prompt-beside-unreadable-instruction", GOOD_TOML, b"\xfe\n", {"prompt.md": "Do it.\n"},
     ("instruction.md", 1, 1, "GE902",
      "(prompt.md is read only when instruction.md is absent)")),
    ("no-instruction", GOOD_TOML, None, {},
     ("instruction.md", 1, 1, "GE908", "missing: a task needs instruction.md")),
    ("shell-string-verifier", _verifier('command = "bash /tests/test.sh"'), "Do it.\n", {},
     ("task.toml", 6, 1, "GE907",
      'a shell string: gitevals runs an argv, never a shell; write one string per '
      'argument: command = ["bash", "/tests/test.sh"]')),
    ("empty-argv-member", _verifier('command = ["bash", ""]'), "Do it.\n", {},
     ("task.toml", 6, 1, "GE905", "verifier.command.1: verifier.command[1] is empty")),
    ("empty-argv", _verifier("command = []"), "Do it.\n", {},
     ("task.toml", 6, 1, "GE905", "verifier.command is empty")),
    ("reward-format-typo", _verifier('reward_format = "reward_txt"'), "Do it.\n", {},
     ("task.toml", 6, 1, "GE905",
      'must be one of "reward_text", "reward_json", got \'reward_txt\' (a string); '
      "did you mean reward_text?")),
    ("threshold-1.5", _verifier("pass_threshold = 1.5"), "Do it.\n", {},
     ("task.toml", 6, 1, "GE905", "verifier.pass_threshold is 1.5, must be at most 1")),
    ("max-iterations-0", "max_iterations = 0\n" + GOOD_TOML, "Do it.\n", {},
     ("task.toml", 1, 1, "GE905", "max_iterations is 0, must be at least 1")),
    ("workdir-climbs", GOOD_TOML + 'workdir = "/app/../etc"\n', "Do it.\n", {},
     ("task.toml", 11, 1, "GE905", "environment.workdir '/app/../etc' is not valid; write it "
                                   "like /app")),
    ("threshold-nan", _verifier("pass_threshold = nan"), "Do it.\n", {},
     ("task.toml", 6, 1, "GE904", "verifier.pass_threshold is a number too large to use "
                                  "(or not finite)")),
    ("toml-syntax", GOOD_TOML + "\n[agent\n", "Do it.\n", {},
     ("task.toml", 12, 7, "GE904", "cannot read task.toml")),
    ("symlinked-task-toml", "", "Do it.\n", {"real.toml": GOOD_TOML,
                                             "_": lambda d: os.symlink("real.toml",
                                                                       d / "task.toml")},
     ("task.toml", 1, 1, "GE901", "a symlink, not a regular file")),
    ("no-test-sh", GOOD_TOML, "Do it.\n", {"tests/test.sh": None},  # type: ignore[dict-item]
     ("tests/test.sh", 1, 1, "GE909", "Harbor's `bash /tests/test.sh`")),
    ("argv-names-a-missing-script", _verifier('command = ["python3", "/tests/run.py"]'),
     "Do it.\n", {}, ("task.toml", 6, 1, "GE909", "names /tests/run.py, which the task does "
                                                   "not hold")),
    ("link-out-of-the-task", GOOD_TOML, "Do it.\n",
     {"_": lambda d: os.symlink("../../../../secret", d / "environment" / "data")},
     ("environment/data", 1, 1, "GE910", "a symlink to '../../../../secret', which leads out")),
    ("fifo-in-tests", GOOD_TOML, "Do it.\n", {"_": _fifo("tests/pipe")},
     ("tests/pipe", 1, 1, "GE910", "a FIFO, which a run cannot copy")),
    ("multi-step", '[[steps]]\nname = "one"\n\n[[steps]]\nname = "two"\n', None, {},
     ("task.toml", 1, 1, "GE911", "a multi-step task ([[steps]]) is not supported yet")),
    ("written-twice", 'pass_threshold = 0.5\n' + _verifier("pass_threshold = 0.5"), "Do it.\n",
     {}, ("task.toml", 7, 1, "GE912", "verifier.pass_threshold is also written as "
                                      "pass_threshold")),
    ("oversize-dockerfile", GOOD_TOML, "Do it.\n",
     {"environment/Dockerfile": "#" * 1_048_577},
     ("environment/Dockerfile", 1, 1, "GE903", "over the 1,048,576-byte limit")),
    # issue 25: every number bounded, nothing a process cannot be given
    ("max-iterations-1e9", "max_iterations = 1000000000\n" + GOOD_TOML, "Do it.\n", {},
     ("task.toml", 1, 1, "GE905", "max_iterations is 1000000000, must be at most 100")),
    ("timeout-2.2e6", _verifier("timeout_sec = 2200000.0").replace("timeout_sec = 30.0\n", ""),
     "Do it.\n", {}, ("task.toml", 6, 1, "GE905", "verifier.timeout_sec is 2200000.0, must "
                                                  "be at most 86400")),
    ("memory-400-nines", GOOD_TOML.replace("memory_mb = 2048", f'memory = "{"9" * 400}G"'),
     "Do it.\n", {}, ("task.toml", 10, 1, "GE905", "environment.memory '9999")),
    ("nul-in-command", _verifier('command = ["bash", "/tests/test.sh\\u0000x"]'), "Do it.\n",
     {}, ("task.toml", 6, 1, "GE905", "verifier.command[1]: it holds a NUL character")),
    ("nul-in-workdir", GOOD_TOML + 'workdir = "/ap\\u0000p"\n', "Do it.\n", {},
     ("task.toml", 11, 1, "GE905", "environment.workdir '/ap\\x00p' is not valid")),
    ("nul-in-env", GOOD_TOML + '[verifier.env]\nA = "x\\u0000y"\n', "Do it.\n", {},
     ("task.toml", 11, 1, "GE905", "verifier.env.A: it holds a NUL character")),
    ("empty-env-name", GOOD_TOML + '[verifier.env]\n"" = "x"\n', "Do it.\n", {},
     ("task.toml", 11, 1, "GE905", "verifier.env: the name '' is empty or holds '='")),
    ("env-name-with-equals", GOOD_TOML + '[verifier.env]\n"A=B" = "x"\n', "Do it.\n", {},
     ("task.toml", 11, 1, "GE905", "verifier.env: the name 'A=B' is empty or holds '='")),
    ("unknown-key-is-a-warning", "max_iteration = 2\n" + GOOD_TOML, "Do it.\n", {},
     ("task.toml", 1, 1, "GE906", "unknown key 'max_iteration'; did you mean max_iterations?")),
    ("no-solution", GOOD_TOML, "Do it.\n", {"solution/solve.sh": None},
     ("solution/solve.sh", 1, 1, "GE913", "missing: the task has no reference solution")),
]


@pytest.fixture(scope="module")
def table_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every task of the table in one repository (not committed)."""
    top = tmp_path_factory.mktemp("malformed")
    git(top, "init", "-q", "-b", "main")
    for name, toml, instruction, extra, _ in TABLE:
        write_task(top / BASE / name, toml, instruction, extra)
    return top


def _lint(top: Path, *args: str) -> dict[str, list[dict[str, object]]]:
    """``gitevals lint --format json ARGS`` in ``top``: findings by task name."""
    r = run_cli("lint", "--format", "json", *args, cwd=top,
                env={**GIT_ENV, "XDG_CACHE_HOME": str(top / ".cache")})
    assert r.code == 1, r.err
    out: dict[str, list[dict[str, object]]] = {name: [] for name, *_ in TABLE}
    for f in json.loads(r.out)["findings"]:
        out[str(f["path"]).split("/")[2]].append(f)
    return out


@pytest.fixture(scope="module")
def linted(table_repo: Path) -> dict[str, list[dict[str, object]]]:
    """The table's repository linted once (the working tree)."""
    return _lint(table_repo)


@pytest.mark.parametrize(("name", "expected"), [(t[0], t[4]) for t in TABLE],
                         ids=[t[0] for t in TABLE])
def test_one_clear_finding_at_its_line(linted: dict[str, list[dict[str, object]]], name: str,
                                       expected: tuple[str, int, int, str, str]) -> None:
    file, line, col, code, words = expected
    [f] = linted[name]
    assert (f["path"], f["line"], f["col"], f["code"]) == (f"{BASE}/{name}/{file}", line, col,
                                                           code)
    assert words in str(f["message"])
    assert f["severity"] == ("warning" if code in ("GE906", "GE913") else "error")
    _SEEN.add(code)


def test_committed_the_findings_are_the_same(table_repo: Path,
                                             linted: dict[str, list[dict[str, object]]]
                                             ) -> None:
    """From git objects (``--rev``, ``--staged``) every task reads as on disk, but for what
    git cannot hold: a FIFO (not added) and an empty directory."""
    git(table_repo, "add", "-A")
    staged = _lint(table_repo, "--staged")
    git(table_repo, "commit", "-q", "--no-verify", "-m", "table")
    committed = _lint(table_repo, "--rev", "HEAD")
    assert staged == committed
    differ = {n for n in linted if committed[n] != linted[n]}
    assert differ == {"fifo-instruction", "fifo-in-tests"}
    assert [f["code"] for f in committed["fifo-instruction"]] == ["GE908"]  # no file: missing
    assert committed["fifo-in-tests"] == []


def test_every_documented_task_code_is_exercised() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "lint-codes.md").read_text()
    documented = set(re.findall(r"^\| (GE9\d\d) \|", doc, re.M))
    exercised = {t[4][3] for t in TABLE}
    assert len(documented) >= 10
    assert documented == exercised, documented ^ exercised


def test_good_task_next_to_them_is_clean(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    write_task(tmp_path / BASE / "fine", GOOD_TOML, "Do it.\n", {
        "environment/big.bin": os.urandom(1_048_577 + 4096),   # data may be any size
        "_": lambda d: os.symlink("big.bin", d / "environment" / "alias"),  # inside: fine
    })
    r = run_cli("lint", cwd=tmp_path)
    assert (r.code, r.out) == (0, "1 file checked: no problems\n"), r.out + r.err
    assert TEST_SH  # the helper's verifier script is what made it clean
