"""Issue 25, item 14: every value given to the target is recorded as a hash unless its
name is marked public, in the artifact and in the git note others fetch."""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import pytest

from tests.conftest import Repo, run_cli
from tests.support.paths import EXPERIMENT_HARNESS

HARNESS = EXPERIMENT_HARNESS
SETTINGS = f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "-S", "harness.py"]\n'
MATH = """\
defaults: {trials: 1, timeout: 20s}
scenarios:
  - id: add
    user: What is 2 + 2?
    expect: [{final_answer_contains: "4"}]
"""


def _base(repo: Repo) -> str:
    return repo.commit({"harness.py": HARNESS, "pyproject.toml": SETTINGS,
                        "evals/cases/math.yaml": MATH})


def _sha(value: str) -> dict[str, str]:
    return {"sha256": hashlib.sha256(value.encode()).hexdigest()}


def test_a_password_without_a_telltale_name_is_recorded_hashed(repo: Repo) -> None:
    commit = _base(repo)
    r = run_cli("run", "--format", "json", "--target-env", "DB_PASSWORD=hunter2",
                "--target-env", "MODEL=a", cwd=repo.path)
    assert r.code == 0, r.err
    art = json.loads(r.out)
    assert art["target_env"] == {"DB_PASSWORD": _sha("hunter2"), "MODEL": _sha("a")}
    note = repo.git("notes", "--ref", "refs/notes/gitevals", "show", commit)
    kept = [p.read_text() for p in (repo.path / "evals" / "results").glob("*.json")]
    for text in (r.out, note, *kept, run_cli("show", cwd=repo.path).out):
        assert "hunter2" not in text
    title = run_cli("show", cwd=repo.path).out.splitlines()[0]
    assert title.endswith(f"target env DB_PASSWORD=sha256:{_sha('hunter2')['sha256'][:12]}… "
                          f"MODEL=sha256:{_sha('a')['sha256'][:12]}…")


def test_a_name_marked_public_is_recorded_in_clear(repo: Repo) -> None:
    _base(repo)
    r = run_cli("run", "--format", "json", "--no-note", "--target-env", "DB_PASSWORD=hunter2",
                "--target-env", "MODEL=a", "--target-env-public", "MODEL", cwd=repo.path)
    assert r.code == 0, r.err
    assert json.loads(r.out)["target_env"] == {"DB_PASSWORD": _sha("hunter2"),
                                               "MODEL": {"value": "a"}}


@pytest.mark.parametrize(("flags", "message"), [
    (["--target-env", "API_KEY=k", "--target-env-public", "API_KEY"],
     "--target-env-public API_KEY: a name holding KEY, TOKEN or SECRET is always recorded "
     "as a hash"),
    (["--target-env", "MODEL=a", "--target-env-public", "MODLE"],
     "--target-env-public 'MODLE': no variable of that name is given to the target "
     "(given: MODEL)"),
], ids=["credential-name", "not-given"])
def test_a_bad_public_mark_is_one_line(repo: Repo, flags: list[str], message: str) -> None:
    _base(repo)
    r = run_cli("run", *flags, cwd=repo.path)
    assert (r.code, r.err.count("\n")) == (2, 1), r.err
    assert message in r.err
    assert not (repo.path / "evals" / "results").exists()


def _lanes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {lane["name"]: lane for lane in doc["lanes"]}


def test_experiment_lanes_are_told_apart_by_the_hash(repo: Repo) -> None:
    _base(repo)
    r = run_cli("experiment", "--lane", "a=HEAD,env:MODEL=a,env:DB_PASSWORD=p1",
                "--lane", "b=HEAD,env:MODEL=b,env:DB_PASSWORD=p1", "--format", "json",
                cwd=repo.path)
    assert r.code in (0, 1), r.err
    doc = json.loads(r.out)
    lanes = _lanes(doc)
    assert doc["controls_held"] is True  # the lanes' runs match their hashed pins
    assert lanes["a"]["target_env"] == {"DB_PASSWORD": _sha("p1"), "MODEL": _sha("a")}
    assert lanes["b"]["target_env"]["MODEL"] != lanes["a"]["target_env"]["MODEL"]
    assert lanes["b"]["target_env"]["DB_PASSWORD"] == lanes["a"]["target_env"]["DB_PASSWORD"]
    kept = "".join(p.read_text() for p in (repo.path / "evals").rglob("*.json"))
    assert "p1" not in r.out and '"p1"' not in kept
    text = run_cli("experiment", "--recheck", doc["id"], cwd=repo.path)
    assert text.code in (0, 1), text.err  # the kept samples still match the hashed pins
    assert "MODEL=sha256:" in text.out
