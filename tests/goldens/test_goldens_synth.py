"""``gitevals goldens synth`` (#23 item 11): one row per combination of the axes through a
generator of the tree that calls ``t.llm`` (a fake judge on 127.0.0.1), deterministic ids,
nothing overwritten, every number bounded; lint checks the coverage of declared axes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import Repo, run_cli

GENERATOR = ('def make(t, case, run):\n'
             '    axes = case["axes"]\n'
             '    text = t.llm(f"Write a {axes[\'tone\']} {axes[\'length\']} question")\n'
             '    return {"input": text, "bucket": "synthetic"}\n'
             '\n'
             'def bad(t, case, run):\n'
             '    return "not a row"\n')


@pytest.fixture
def judge() -> Iterator[list[str]]:
    """A judge answering ``made: <prompt>``; yields the prompts it got."""
    prompts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = data["messages"][-1]["content"]
            prompts.append(prompt)
            body = json.dumps({"model": data["model"], "choices": [
                {"message": {"role": "assistant", "content": f"made: {prompt}"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    prompts.append(f"http://127.0.0.1:{server.server_address[1]}/v1")
    yield prompts
    server.shutdown()
    server.server_close()


def _setup(repo: Repo, url: str, axes: str = "") -> None:
    settings = (f'[tool.gitevals.judge]\nbase_url = "{url}"\nmodel = "judge-2026-01-15"\n'
                + (f"\n[tool.gitevals.goldens]\naxes = {axes}\n" if axes else ""))
    repo.commit({"pyproject.toml": settings, "evals/graders/gen.py": GENERATOR,
                 "evals/goldens.jsonl": '{"id": "g1", "input": "hi"}\n'})


AXES = ("--axis", "tone=formal,casual", "--axis", "length=short,long")


def test_one_row_per_combination_through_the_judge(repo: Repo, judge: list[str]) -> None:
    _setup(repo, judge.pop(0))
    res = run_cli("goldens", "synth", *AXES, "--generator", "gen.make", "-o", "a.jsonl",
                  cwd=repo.path)
    assert res.code == 0, res.err
    assert res.err.strip() == "wrote 4 rows to a.jsonl; refused 0"
    rows = [json.loads(line) for line in (repo.path / "a.jsonl").read_text().splitlines()]
    assert [r["axes"] for r in rows] == [
        {"tone": "formal", "length": "short"}, {"tone": "formal", "length": "long"},
        {"tone": "casual", "length": "short"}, {"tone": "casual", "length": "long"}]
    assert rows[0]["input"] == "made: Write a formal short question"
    assert sorted(judge) == sorted(f"Write a {t} {n} question" for t in ("formal", "casual")
                                   for n in ("short", "long"))
    head = repo.git("rev-parse", "HEAD")
    assert all(r["source"] == {"generator": "gen.make", "commit": head} for r in rows)
    assert all(r["bucket"] == "synthetic" and r["id"].startswith("synth-") for r in rows)
    # deterministic: the same combinations, the same ids (axes in another order too)
    again = run_cli("goldens", "synth", "--axis", "length=long,short", "--axis",
                    "tone=casual,formal", "--generator", "gen.make", cwd=repo.path)
    assert again.code == 0
    assert sorted(json.loads(x)["id"] for x in again.out.splitlines()) == sorted(
        r["id"] for r in rows)
    # once in goldens.jsonl, the ids are refused and the generator is not called for them
    asked = len(judge)
    with (repo.path / "evals/goldens.jsonl").open("a") as f:
        f.write((repo.path / "a.jsonl").read_text())
    third = run_cli("goldens", "synth", *AXES, "--generator", "gen.make", cwd=repo.path)
    assert third.code == 1 and third.out == "" and len(judge) == asked
    assert third.err.count("is in goldens.jsonl (ids are never reused)") == 4


def test_nothing_is_overwritten_and_every_number_is_bounded(repo: Repo,
                                                           judge: list[str]) -> None:
    _setup(repo, judge.pop(0))
    (repo.path / "kept.jsonl").write_text("mine\n")
    cases = [
        (("-o", "kept.jsonl"), "kept.jsonl: already exists"),
        (("--axis", "a=" + ",".join(map(str, range(40))), "--axis",
          "b=" + ",".join(map(str, range(40)))),
         "the axes make 1,600 combinations, over the limit of 1,000"),
        (("--axis", "a=" + ",".join(map(str, range(101))),), "101 values, over the limit"),
        (("--axis", "tone"), "write NAME=v1,v2"),
        (("--axis", "t=a,,b"), "a value is empty"),
        (("--axis", "t=a,a"), "value 'a' is given twice"),
        (("--axis", "t=a", "--axis", "t=b"), "--axis t is given twice"),
        ((), "no axis: give --axis NAME=v1,v2"),
    ]
    for extra, words in cases:
        res = run_cli("goldens", "synth", "--generator", "gen.make", *extra, cwd=repo.path)
        assert res.code == 2, (extra, res.err)
        assert words in res.err and len(res.err.strip().splitlines()) == 1, res.err
    assert (repo.path / "kept.jsonl").read_text() == "mine\n"
    bad = run_cli("goldens", "synth", *AXES, "--generator", "gen.bad", "-o", "b.jsonl",
                  cwd=repo.path)
    assert bad.code == 1 and not (repo.path / "b.jsonl").exists()
    assert "returned \"not a row\", not a JSON object" in bad.err
    assert "failed on 4 of 4 combinations; nothing was written" in bad.err
    assert judge == []  # refused before any generator ran


def test_lint_checks_the_coverage_of_declared_axes(repo: Repo, judge: list[str]) -> None:
    _setup(repo, judge.pop(0), axes='{tone = ["formal", "casual"], length = ["short"]}')
    lint = run_cli("lint", cwd=repo.path)
    assert lint.code == 0
    assert ("pyproject.toml:6:1: GE645 (warning) 2 of 2 combinations of the declared axes "
            "have no golden in evals/goldens.jsonl: tone=formal, length=short; "
            "tone=casual, length=short") in lint.out + lint.err
    # synth with the declared axes covers them
    made = run_cli("goldens", "synth", "--generator", "gen.make", cwd=repo.path)
    assert made.code == 0 and len(made.out.splitlines()) == 2
    typo = '{"id": "g2", "input": "x", "axes": {"tone": "formall", "length": "short"}}\n'
    (repo.path / "evals/goldens.jsonl").write_text(
        '{"id": "g1", "input": "hi"}\n' + made.out + typo)
    lint = run_cli("lint", cwd=repo.path)
    out = lint.out + lint.err
    assert "combinations of the declared axes" not in out
    assert ("evals/goldens.jsonl:4:1: GE645 (warning) axis 'tone' has the value \"formall\", "
            "which [tool.gitevals.goldens] axes does not declare (formal, casual)") in out
