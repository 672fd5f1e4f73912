"""``gitevals diff A B``: task definitions changed field by field, beside the cases."""

from __future__ import annotations

import json

from tests.conftest import Repo, run_cli
from tests.support.task_dirs import GOOD_TOML, write_task


def test_task_definitions_by_field(repo: Repo) -> None:
    tasks = repo.path / "evals/tasks"
    for name in ("same", "tuned", "gone", "broken"):
        write_task(tasks / name, GOOD_TOML, f"Task {name}.\n")
    a = repo.commit(msg="A")
    tuned = GOOD_TOML.replace("[verifier]\n", "[verifier]\npass_threshold = 0.8\n")
    (tasks / "tuned/task.toml").write_text(tuned.replace("memory_mb = 2048", 'memory = "4G"'))
    (tasks / "tuned/tests/test.sh").write_text("#!/bin/bash\necho 0.5 > /logs/reward.txt\n")
    (tasks / "tuned/instruction.md").write_text("Task tuned, \x1b[31mnow red.\n")
    repo.git("rm", "-rq", "evals/tasks/gone")
    write_task(tasks / "new", GOOD_TOML, "A new task.\n")
    (tasks / "broken/task.toml").write_text(GOOD_TOML.replace("[verifier]\n",
                                                              "[verifier]\ncommand = 'sh x'\n"))
    b = repo.commit(msg="B")

    r = run_cli("diff", a, b, "--only", "rules", "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    rows = {t["name"]: t for t in doc["tasks"]}
    assert sorted(rows) == ["broken", "gone", "new", "tuned"]
    assert (rows["gone"]["kind"], rows["new"]["kind"]) == ("removed", "added")
    assert rows["broken"]["kind"] == "unreadable"
    assert rows["broken"]["problem"].startswith("B: evals/tasks/broken/task.toml:6:1: GE907")
    fields = {c["what"]: (c["before"], c["after"]) for c in rows["tuned"]["fields"]}
    assert fields == {
        "pass_threshold": (1.0, 0.8),
        "environment.memory_mb": (2048, 4096),
        "description": ("Task tuned.\n", "Task tuned, \x1b[31mnow red.\n"),
        "file tests/test.sh": (fields["file tests/test.sh"][0], fields["file tests/test.sh"][1]),
    }
    assert fields["file tests/test.sh"][0] != fields["file tests/test.sh"][1]
    assert doc["counts"]["tasks_changed"] == 4

    text = run_cli("diff", a, b, "--only", "rules", cwd=repo.path)
    assert text.code == 0
    assert text.out.startswith("verdicts not compared, 4 tasks changed\n")
    assert "Tasks\n" in text.out
    assert "pass_threshold: 1.0 -> 0.8" in text.out
    assert "\x1b" not in text.out and "\\x1b[31mnow red" in text.out
    assert run_cli("diff", a, b, "--only", "rules", "--fail-on", "any-change",
                   cwd=repo.path).code == 1
    assert run_cli("diff", a, a, "--only", "rules", "--fail-on", "any-change",
                   cwd=repo.path).code == 0
