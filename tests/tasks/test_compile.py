"""``gitevals task compile``: terminal-safe text and JSON that parses back to the exact values."""

from __future__ import annotations

import json
import re

import pytest

from gitevals.git.blobs import MAX_FILE
from gitevals.git.trees import WorkingTree
from gitevals.lint import lint_tree
from tests.conftest import Repo, run_cli
from tests.support.task_dirs import GOOD_TOML, TEST_SH, write_task

#: ESC sequences (clear screen, a colour, an OSC title), a CR, U+2028, U+202E (RLO), DEL,
#: a C1 CSI, a BEL, a lone backslash-u that must not read as an escape.
HOSTILE = ("Fix the \x1b[2J\x1b[31mbuild\x1b[0m.\r\n"
           "Title: \x1b]0;pwned\x07 done\u2028next\u2029para\n"
           "\u202eevil\u202c and \u2066iso\u2069 \x7f \x9b31m\n"
           "a literal \\u001b stays text; tab\there\n")
ARGV = ["bash", "-c", "run \x1b[1m $HOME", "/tests/test.sh"]
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile(repo: Repo) -> Repo:
    toml = GOOD_TOML.replace("[verifier]\n", "[verifier]\ncommand = " + json.dumps(ARGV) +
                             '\nenv = {MODE = "a\\u001bb"}\n') + \
        '[metadata]\nauthor = "Eve \\u001b]8;;http://x\\u0007link"\n'
    write_task(repo.path / "evals/tasks/evil", toml, HOSTILE,
               {"environment/Dockerfile": "FROM x\nRUN echo \x1b[5m\u202e\n"})
    repo.commit(msg="hostile task")
    return repo


def test_text_escapes_every_control(hostile: Repo) -> None:
    r = run_cli("task", "compile", "evil", cwd=hostile.path)
    assert (r.code, r.err) == (0, "")
    assert not RAW.search(r.out), RAW.findall(r.out)
    lines = r.out.splitlines()
    desc = lines.index(next(ln for ln in lines if ln.startswith("description")))
    assert lines[desc + 1:desc + 5] == [
        "  | Fix the \\u001b[2J\\u001b[31mbuild\\u001b[0m.\\u000d",
        "  | Title: \\u001b]0;pwned\\u0007 done\\u2028next\\u2029para",
        "  | \\u202eevil\\u202c and \\u2066iso\\u2069 \\u007f \\u009b31m",
        "  | a literal \\u005cu001b stays text; tab\\u0009here",
    ]
    assert ('verifier argv     ["bash", "-c", "run \\u001b[1m $HOME", "/tests/test.sh"] '
            "(4 members)") in lines
    assert 'verifier env      {"MODE": "a\\u001bb"}' in lines
    assert "  | RUN echo \\u001b[5m\\u202e" in lines
    assert 'metadata          {"author": "Eve \\u001b]8;;http://x\\u0007link"}' in lines


def test_json_is_safe_and_round_trips_exactly(hostile: Repo) -> None:
    r = run_cli("task", "compile", "evil", "--json", cwd=hostile.path)
    assert (r.code, r.err) == (0, "")
    assert not RAW.search(r.out)
    doc = json.loads(r.out)
    assert doc["description"] == HOSTILE
    assert doc["verifier"]["argv"] == ARGV and doc["verifier"]["default"] is False
    assert doc["verifier"]["note"] is None
    assert doc["verifier"]["env"] == {"MODE": "a\x1bb"}
    assert doc["metadata"] == {"author": "Eve \x1b]8;;http://x\x07link"}
    assert doc["environment"]["dockerfile"] == "FROM x\nRUN echo \x1b[5m\u202e\n"
    assert "\\u202e" in r.out and "\\u2028" in r.out and "\\u007f" in r.out
    # and from git objects: the same document
    rev = run_cli("task", "compile", "evals/tasks/evil", "--json", "--rev", "HEAD",
                  cwd=hostile.path)
    assert rev.out == r.out


def test_a_finding_stops_it_in_one_line_each(repo: Repo) -> None:
    write_task(repo.path / "evals/tasks/bad", GOOD_TOML.replace(
        "[verifier]\n", '[verifier]\ncommand = "bash /tests/test.sh"\n'), "Do it.\n")
    r = run_cli("task", "compile", "bad", "--json", cwd=repo.path)
    assert r.code == 1 and r.out == ""
    first, second = r.err.splitlines()
    assert first.startswith("evals/tasks/bad/task.toml:6:1: GE907 [verifier] command is a "
                            "shell string")
    assert second.startswith("gitevals: evals/tasks/bad does not compile")


def test_warnings_do_not_stop_it(repo: Repo) -> None:
    write_task(repo.path / "evals/tasks/w", "max_iteration = 3\nmax_iterations = 2\n"
               + GOOD_TOML, "Do it.\n")
    r = run_cli("task", "compile", "w", "--json", cwd=repo.path)
    assert r.code == 0
    assert r.err.startswith("evals/tasks/w/task.toml:1:1: GE906 (warning) unknown key")
    assert json.loads(r.out)["max_iterations"] == 2
    assert json.loads(r.out)["unused_keys"] == ["max_iteration"]


def test_values_written_in_task_toml(repo: Repo) -> None:
    toml = ('name = "sort-array"\nmax_iterations = 3\n\n[environment]\nimage = '
            '"python:3.12-slim"\nworkdir = "/work"\nallow_internet = true\nmemory = "4G"\n\n'
            '[verifier]\ncommand = ["python3", "/tests/run.py"]\nreward_format = "reward_json"'
            '\npass_threshold = 0.75\ntimeout_sec = 12\n')
    write_task(repo.path / "evals/tasks/sort", toml, "Sort it.\n",
               {"tests/run.py": "print(1)\n", "environment/Dockerfile": None})
    r = run_cli("task", "compile", "sort", "--json", cwd=repo.path)
    assert (r.code, r.err) == (0, "")
    doc = json.loads(r.out)
    assert doc["declared_name"] == "sort-array" and doc["max_iterations"] == 3
    assert doc["pass_threshold"] == 0.75 and doc["timeouts"]["verifier_sec"] == 12
    assert doc["verifier"] | {"env": None} == {
        "argv": ["python3", "/tests/run.py"], "default": False, "note": None, "env": None,
        "reward_format": "reward_json", "reward_file": "/logs/verifier/reward.json",
        "reward_format_default": False}
    env = doc["environment"]
    assert (env["image"], env["workdir"], env["allow_internet"], env["memory_mb"]) == (
        "python:3.12-slim", "/work", True, 4096)
    assert env["dockerfile"] is None
    assert [g["kind"] for g in env["gaps"]] == ["image_pull"]
    assert set(doc["files"]) == {f"evals/tasks/sort/{p}" for p in (
        "task.toml", "instruction.md", "tests/test.sh", "tests/run.py", "solution/solve.sh")}


def test_a_directory_anywhere_and_prompt_md(repo: Repo, tmp_path_factory: pytest.TempPathFactory
                                           ) -> None:
    outside = tmp_path_factory.mktemp("sent") / "their-task"
    write_task(outside, GOOD_TOML, None, {"prompt.md": "From prompt.md\n"})
    r = run_cli("task", "compile", str(outside), "--json", cwd=repo.path)
    assert (r.code, r.err) == (0, "")
    doc = json.loads(r.out)
    assert doc["description"] == "From prompt.md\n"
    assert doc["instruction_file"] == "their-task/prompt.md"
    assert TEST_SH


@pytest.mark.parametrize(("args", "words"), [
    (("nope",), "nope: no task directory at evals/tasks/nope in the working tree"),
    (("evals",), "evals: skipped evals: no task.toml, so not a task directory"),
    (("/", "--rev", "HEAD"), "/: outside the repository; with --rev"),
    (("x", "--rev", "no-such-rev"), "no-such-rev"),
], ids=["unknown-name", "not-a-task", "outside-with-rev", "bad-rev"])
def test_usage_errors_are_one_line(repo: Repo, args: tuple[str, ...], words: str) -> None:
    repo.commit({"evals/cases/a.yaml": "scenarios: []\n"})
    r = run_cli("task", "compile", *args, cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert len(r.err.splitlines()) == 1 and words in r.err, r.err


def test_a_path_to_task_toml_names_its_directory(repo: Repo) -> None:
    write_task(repo.path / "evals/tasks/sort", GOOD_TOML, "Sort it.\n", {"tests/test.sh": TEST_SH})
    by_name = run_cli("task", "compile", "sort", "--json", cwd=repo.path)
    by_file = run_cli("task", "compile", "evals/tasks/sort/task.toml", "--json", cwd=repo.path)
    assert by_file.code == by_name.code == 0, by_file.err
    assert json.loads(by_file.out) == json.loads(by_name.out)


def test_a_file_over_the_size_limit_gets_its_real_blob_sha(
        repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(256)) * (3 * 4096)  # 3 MiB of data, over the limit lint reads
    assert len(data) > MAX_FILE
    write_task(repo.path / "evals/tasks/big", GOOD_TOML, "Do it.\n",
               {"environment/data.bin": data})
    path = "evals/tasks/big/environment/data.bin"
    blob = repo.git("hash-object", path)

    def compiled(*rev: str) -> dict[str, str]:
        r = run_cli("task", "compile", "big", "--json", *rev, cwd=repo.path)
        assert (r.code, r.err) == (0, "")
        files: dict[str, str] = json.loads(r.out)["files"]
        return files

    here = compiled()
    assert here[path] == blob
    repo.commit()
    assert compiled("--rev", "HEAD") == here

    # lint never streams it: the task lints clean with the hashing made to fail
    def refuse(*args: object) -> None:
        raise AssertionError("lint read a file over the size limit")
    monkeypatch.setattr(WorkingTree, "_stream_sha", refuse)
    result = lint_tree(WorkingTree(repo.path), cache=False)
    assert [f for f in result.findings if f.severity == "error"] == []
