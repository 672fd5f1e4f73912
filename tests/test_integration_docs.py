"""Every page of docs/integrations/ runs as written: its files (the fenced blocks whose
first line is ``# <path>``) are committed to a real repository, and the ``gitevals``
lines of its "Example" section run through the real CLI against what the page assumes
(a server, a collector, a Harbor job) started here on 127.0.0.1. CI examples are checked
with check-jsonschema's built-in schemas, and the commands in them run too."""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Repo, Result, run_cli
from tests.support import fake_openai, refdata
from tests.support.harbor import harbor_job, harbor_trial
from tests.support.jsonschema_check import check
from tests.support.runs import only_artifact, repo_copy

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "integrations"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
FILE = re.compile(r"# ([\w./-]+\.(?:py|toml|yaml|yml))(?:[:\s].*)?")


@dataclass(frozen=True)
class Example:
    """A page's files (path -> text, the ``# <path>`` line kept) and its example's
    ``gitevals`` command lines (argv without the program)."""

    files: dict[str, str]
    commands: list[list[str]]


def example(page: str) -> Example:
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    files: dict[str, str] = {}
    for _, body in FENCE.findall(text):
        named = FILE.fullmatch(body.split("\n", 1)[0])
        if named:
            assert files.get(named[1], body) == body, f"{page}: two different {named[1]}"
            files[named[1]] = body
    section = re.split(r"^## Example.*$", text, maxsplit=1, flags=re.M)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.M)[0]
    commands = [shlex.split(line, comments=True)[1:]
                for lang, body in FENCE.findall(section) if lang == "sh"
                for line in body.splitlines() if line.startswith("gitevals ")]
    return Example(files, commands)


def run_all(ex: Example, repo: Repo, env: dict[str, str] | None = None,
            fix: Callable[[str], str] = lambda s: s) -> list[Result]:
    """Run the example's commands in order; ``fix`` rewrites each argument (a port)."""
    out = []
    for argv in ex.commands:
        res = run_cli(*[fix(a) for a in argv], cwd=repo.path, env=env, timeout=300)
        assert "Traceback" not in res.err, (argv, res.err)
        out.append(res)
    return out


def _turns(art: dict[str, Any]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = art["cases"][0]["scenarios"][0]["results"][0][
        "transcript"]["turns"]
    return turns


def _calls(art: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for t in _turns(art) for c in t["tool_calls"]]


# --- the agent where it lives ---------------------------------------------------------

WEATHER_CALLS = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]


def _adapter_page(repo: Repo, page: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    ex = example(page)
    assert {"agent_target.py", "pyproject.toml", "evals/cases/weather.yaml"} <= set(ex.files)
    repo.commit(ex.files)
    run, show = run_all(ex, repo, env)
    assert run.code == 0, run.out + run.err
    assert show.code == 0 and "get_weather" in show.out, show.out + show.err
    art = only_artifact(repo)
    assert art["cases"][0]["scenarios"][0]["verdict"]["verdict"] == "pass"
    assert _calls(art) == WEATHER_CALLS
    return art


def test_the_pydantic_ai_page(repo: Repo) -> None:
    art = _adapter_page(repo, "pydantic-ai")
    assert _turns(art)[1]["final_answer"] == "It is sunny in Rome."


def test_the_openai_agents_page(repo: Repo) -> None:
    with fake_openai.serve() as fake:
        art = _adapter_page(repo, "openai-agents",
                            {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "sk-fake"})
    assert _turns(art)[0]["model"] == "gpt-4.1-mini"
    assert fake.requests[0]["model"] == "gpt-4.1-mini"


def test_the_langgraph_page(repo: Repo) -> None:
    art = _adapter_page(repo, "langgraph")
    assert _turns(art)[1]["final_answer"] == "It is sunny in Rome."


def test_the_openai_endpoint_page(repo: Repo) -> None:
    ex = example("openai-endpoint")
    with fake_openai.serve() as fake:
        repo.commit({k: v.replace("http://127.0.0.1:8000/v1", fake.url)
                     for k, v in ex.files.items()})
        run, show = run_all(ex, repo, {"HARNESS_API_KEY": "sk-test"})
    assert run.code == 0 and show.code == 0, run.out + run.err
    assert _calls(only_artifact(repo)) == WEATHER_CALLS[:1]
    assert fake.headers[0]["Authorization"] == "Bearer sk-test"
    assert fake.requests[0]["model"] == "my-harness-2026-01"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def harness_server(tmp_path: Path) -> Iterator[int]:
    """The page's own ``harness_server.py``, started as the page says, on a free port."""
    script = tmp_path / "harness_server.py"
    script.write_text(example("http-endpoint").files["harness_server.py"])
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait()


def test_the_http_endpoint_page(repo: Repo, harness_server: int) -> None:
    ex = example("http-endpoint")
    repo.commit({k: v.replace("127.0.0.1:8000", f"127.0.0.1:{harness_server}")
                 for k, v in ex.files.items()})
    run, show = run_all(ex, repo, {"HARNESS_API_KEY": "sk-test"})
    assert run.code == 0 and show.code == 0, run.out + run.err
    art = only_artifact(repo)
    (turn,) = _turns(art)
    assert turn["final_answer"] == "It is sunny in Paris."
    assert turn["usage"] == {"prompt_tokens": 20, "completion_tokens": 8}
    assert turn["tool_calls"][0]["result"] == "sunny"


#: Reports 20 million prompt tokens a turn: 3 USD a trial at the page's prices.
SPENDER = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"final_answer": "ok", "usage": {"prompt_tokens": 20_000_000,
                                                      "completion_tokens": 0}}), flush=True)
"""


def test_the_cost_limits_page(repo: Repo) -> None:
    ex = example("cost-limits")
    settings = ex.files["pyproject.toml"] + (
        f'\n[tool.gitevals.target]\ncommand = ["{sys.executable}", "spender.py"]\n')
    repo.commit({"pyproject.toml": settings, "spender.py": SPENDER, "evals/cases/a.yaml":
                 "defaults: {trials: 4}\nscenarios:\n  - id: s\n    user: hi\n    expect: []\n"})
    run, show = run_all(ex, repo, fix=lambda a: a)
    assert run.code == 130, run.out + run.err
    assert "gitevals: cost limit 5 USD reached" in run.err
    art = only_artifact(repo)
    assert art["interrupted"] is True and "5 USD" in art["interrupted_reason"]
    assert show.code in (0, 1), show.err


# --- CI -----------------------------------------------------------------------------------

def _valid(schema: str, text: str, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    r = check(schema, path)
    assert (r.returncode, r.stdout.strip()) == (0, "ok -- validation done"), r.stdout + r.stderr


def test_the_github_actions_page(tmp_path: Path) -> None:
    ex = example("github-actions")
    workflow = ex.files[".github/workflows/gitevals.yml"]
    assert workflow == (ROOT / "docs" / "examples" / "gitevals.yml").read_text()
    _valid("vendor.github-workflows", workflow, tmp_path, "gitevals.yml")
    steps = yaml.safe_load(workflow)["jobs"]["evals"]["steps"]
    assert steps[1]["uses"].endswith("/gitevals@v0.1.0")  # the action of this repository


def test_the_gitlab_ci_page(tmp_path: Path) -> None:
    ex = example("gitlab-ci")
    _valid("vendor.gitlab-ci", ex.files[".gitlab-ci.yml"], tmp_path, ".gitlab-ci.yml")


def test_the_code_scanning_page(repo: Repo, tmp_path: Path) -> None:
    import jsonschema

    workflow = example("code-scanning").files[".github/workflows/gitevals-lint.yml"]
    _valid("vendor.github-workflows", workflow, tmp_path, "gitevals-lint.yml")
    steps = yaml.safe_load(workflow)["jobs"]["lint"]["steps"]
    (line,) = [s["run"] for s in steps if "gitevals lint" in s.get("run", "")]
    argv, _, into = line.partition(" > ")
    schema = json.loads(refdata.require("sarif-schema-2.1.0.json").read_text())
    repo.commit({"evals/cases/bad.yaml": "scenarios:\n  - id: s\n    user: hi\n"
                 "    expect: [{no_such_assertion: 1}]\n"})
    res = run_cli(*shlex.split(argv)[1:], cwd=repo.path)
    assert res.code == 1 and into == "gitevals.sarif", res.err
    log = json.loads(res.out)
    jsonschema.validate(log, schema)
    (result, *_) = log["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "evals/cases/bad.yaml"


# --- runs for the tools around us -------------------------------------------------------

HARNESS = """\
import json, sys
for line in sys.stdin:
    text = json.loads(line)["text"]
    print(json.dumps({"final_answer": "Paris" if "France" in text else "?",
                      "tool_calls": [{"name": "search", "args": {"q": text}, "result": 1}],
                      "usage": {"prompt_tokens": 30, "completion_tokens": 7}}), flush=True)
"""


def _commit_and_run(repo: Repo) -> None:
    repo.commit({"harness.py": HARNESS, "pyproject.toml":
                 f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n',
                 "evals/cases/geo.yaml": "defaults: {trials: 2}\nscenarios:\n  - id: capital\n"
                 "    user: France?\n    expect: [{final_answer_contains: Paris}]\n"})
    assert run_cli("run", cwd=repo.path).code == 0


@pytest.fixture
def ran(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of a repository with one run (made once for the test run) to export."""
    return repo_copy(tmp_path_factory, tmp_path, "integration-docs-ran", _commit_and_run)


def test_the_inspect_page(ran: Repo) -> None:
    ex = example("inspect")
    (res,) = run_all(ex, ran)
    assert res.code == 0, res.err
    with zipfile.ZipFile(ran.path / "run.eval") as log:
        names = set(log.namelist())
    assert {"header.json", "samples/geo/capital_epoch_1.json",
            "samples/geo/capital_epoch_2.json"} <= names


def test_the_opentelemetry_page(ran: Repo,
                                collector: tuple[str, list[tuple[str, str, bytes]]]) -> None:
    url, got = collector
    ex = example("opentelemetry")
    to_file, to_collector = run_all(ex, ran, fix=lambda a: a.replace("http://127.0.0.1:4318",
                                                                        url))
    assert to_file.code == 0 and to_collector.code == 0, to_file.err + to_collector.err
    spans, events = (ran.path / "run.otlp.jsonl").read_text().splitlines()
    assert json.loads(spans)["resourceSpans"] and json.loads(events)["resourceLogs"]
    assert [path for path, _, _ in got] == ["/v1/traces", "/v1/logs"]


def test_the_harbor_page(repo: Repo) -> None:
    ex = example("harbor")
    repo.commit({"pyproject.toml": '[tool.gitevals]\nroot = "evals"\n'})
    (path,) = [argv[2] for argv in ex.commands if argv[:2] == ["import", "harbor"]]
    job = harbor_job(repo.path, name=Path(path).name)
    assert job == repo.path / path
    harbor_trial(job, "hello", 1, {"reward": 1.0})
    harbor_trial(job, "hello", 2, {"reward": 0.0})
    imported, show = run_all(ex, repo)
    assert imported.code == 0, imported.err
    assert show.code in (0, 1) and "hello" in show.out, show.out + show.err
    (task,) = only_artifact(repo)["cases"]
    assert [t["passed"] for t in task["scenarios"][0]["results"]] == [True, False]


# --- the index ----------------------------------------------------------------------------

def test_every_page_is_indexed_tested_and_links_to_files_that_exist() -> None:
    pages = {p.stem for p in DOCS.glob("*.md")}
    tested = {name.removeprefix("test_the_").removesuffix("_page").replace("_", "-")
              for name in globals() if name.startswith("test_the_")}
    assert pages == tested
    index = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    assert {p for p in pages if f"(integrations/{p}.md)" in index} == pages
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/integrations.md)" in readme
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), (page.name, target)
