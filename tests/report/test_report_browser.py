"""``gitevals report`` opened in a real headless Chromium, from a file:// URL, offline.

The demo's report must load with no request and no console error, agree with ``gitevals
show --format json``, plot one point per commit with a run, and expand a trial on a
click; a repository whose harness answers and goldens ids carry markup must leave no
element and no script from that data in the page.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import Repo, built_once, git, run_cli
from tests.support.browser import chromium, png_colours, requests

pytestmark = pytest.mark.needs_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("profile")) as driver:
        yield driver


def open_report(driver: Any, page: Path) -> None:
    driver.get_log("performance")  # drop what an earlier page logged
    driver.get_log("browser")
    driver.get(page.as_uri())


def overview(driver: Any) -> list[dict[str, Any]]:
    """Each overview row as (case, scenario, verdict, passes, trials), read from the DOM."""
    rows = driver.execute_script("""
        return [...document.querySelectorAll('#overview h3')].flatMap(h =>
          [...h.nextElementSibling.querySelectorAll('tbody tr')].map(tr =>
            [h.firstChild.textContent.trim(), ...[...tr.cells].map(td => td.textContent)]));""")
    out = []
    for case, scenario, verdict, ratio, *_ in rows:
        passes, trials = ratio.split("/")
        out.append({"case": case, "scenario": scenario,
                    "verdict": verdict.split(" ", 1)[1].replace(" ", "_"),
                    "passes": int(passes), "trials": int(trials)})
    return out


def test_demo_report_offline_equal_to_show(demo: Path, browser: Any, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    made = run_cli("report", "v1..v2", "-o", str(page), cwd=demo)
    assert made.code == 0, made.err
    assert f"({page.stat().st_size / 1024:,.0f} KiB)" in made.err
    open_report(browser, page)

    assert requests(browser) == [page.as_uri()]  # the page itself, nothing else
    assert browser.execute_script(
        "return performance.getEntriesByType('resource').length") == 0
    assert browser.get_log("browser") == []  # no error, no CSP violation

    shown = json.loads(run_cli("show", "v2", "--format", "json", cwd=demo).out)
    assert overview(browser) == [{k: s[k] for k in ("case", "scenario", "verdict", "passes",
                                                    "trials")} for s in shown["scenarios"]]
    counts = browser.execute_script(
        "return [...document.querySelectorAll('#overview .count')].map(c => c.textContent)")
    assert sorted(counts) == sorted(f"{n} {v.replace('_', ' ')}"
                                    for v, n in shown["summary"].items())

    # one point per commit with a run (v1, v2) in every scenario's plot
    points = browser.execute_script("""return [...document.querySelectorAll('figure.plot')]
        .map(f => f.querySelectorAll('circle.pt').length)""")
    assert points == [2] * len(shown["scenarios"])
    regressed = browser.execute_script(
        "return document.querySelectorAll('circle.pt.regressed').length")
    assert regressed == 1  # answers-in-one-line, as `gitevals diff v1 v2` says
    assert "1 regressed beyond noise" in browser.find_element("id", "diff").text


def test_clicking_a_trial_expands_its_transcript(demo: Path, browser: Any,
                                                 tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert run_cli("report", "v2", "-o", str(page), cwd=demo).code == 0
    open_report(browser, page)
    trial = browser.find_element("css selector", "#transcripts details.trial")
    answer = trial.find_element("css selector", ".answer")
    assert trial.get_attribute("open") is None and not answer.is_displayed()
    trial.find_element("tag name", "summary").click()
    assert trial.get_attribute("open") is not None and answer.is_displayed()
    assert "The capital of France is Paris" in answer.text  # v2's wordy answer
    # the verdict filters work with no script: unchecking "pass" hides passing rows
    browser.find_element("id", "f-pass").click()
    hidden = browser.execute_script("""return [...document.querySelectorAll(
        '#overview tr.v-pass')].every(tr => getComputedStyle(tr).display === 'none')""")
    assert hidden
    browser.set_window_size(900, 700)
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    colours, unlike = png_colours(shot.read_bytes())
    assert colours > 50 and unlike > 900 * 700 // 50, (colours, unlike)


P = ("</style><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"
     "<a href=\"javascript:window.__pwned=3\">click</a><svg onload=\"window.__pwned=4\">"
     "<style>body{display:none}</style>")
#: A python target (imported once a run, forked per conversation): what the report shows
#: is the artifact's answers, not how the target was started.
HARNESS = f"""P = {P!r}


def respond(messages):
    return {{"final_answer": P, "error": None,
            "tool_calls": [{{"name": "shell__run", "args": {{"cmd": P}}, "result": P}}],
            "hooks": [{{"name": "guard", "decision": P}}]}}
"""
CASE = """defaults: {trials: 2, timeout: 30s}
scenarios:
  - id: hostile
    user: Say something.
    expect:
      - final_answer_contains: nothing like this
      - tool_called: {name: shell__run}
"""
SETTINGS = '[tool.gitevals.target]\npython = "harness:respond"\n'


def _build_hostile(root: Path) -> None:
    """The repository both ``test_hostile_data_stays_text`` cases report on, in
    ``root/repo``: two runs whose answers, goldens and commit subject carry markup."""
    path = root / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    repo = Repo(path)
    golden = json.dumps({"id": "g-1", "input": "hi"})
    repo.commit({"pyproject.toml": SETTINGS, "harness.py": HARNESS,
                 "evals/cases/hostile.yaml": CASE, "evals/goldens.jsonl": golden + "\n",
                 "evals/results/.gitignore": "*\n"}, msg="first")
    repo.git("tag", "x<script>window.__pwned=5</script>")
    assert run_cli("run", cwd=repo.path).code == 1
    repo.commit(msg="no run here")
    bad = json.dumps({"id": P, "input": P, "bucket": P})
    repo.commit({"evals/goldens.jsonl": f"{golden}\n{bad}\n"}, msg=P)
    assert run_cli("run", cwd=repo.path).code == 1


@pytest.fixture
def hostile(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Repo:
    """A copy of the hostile repository, built (its two runs) once for the test run."""
    built = built_once(tmp_path_factory, "report-browser-hostile", _build_hostile)
    shutil.copytree(built / "repo", tmp_path / "repo", symlinks=True)
    return Repo(tmp_path / "repo")


@pytest.mark.parametrize("static", ["1000", "0"], ids=["inline", "as-data"])
def test_hostile_data_stays_text(hostile: Repo, browser: Any, tmp_path: Path,
                                 static: str) -> None:
    repo = hostile
    page = tmp_path / "report.html"
    made = run_cli("report", "HEAD~2..HEAD", "-o", str(page), "--static-transcripts", static,
                   cwd=repo.path)
    assert made.code == 0, made.err
    open_report(browser, page)

    assert browser.execute_script("return window.__pwned") is None
    assert requests(browser) == [page.as_uri()]
    assert browser.get_log("browser") == []
    found = browser.execute_script("""return {
        scripts: document.querySelectorAll('script:not([type="text/plain"])').length,
        styles: document.querySelectorAll('style').length,
        loaders: document.querySelectorAll('img, iframe, object, embed, link, base').length,
        handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes]
                    .some(a => a.name.startsWith('on'))).length,
        urls: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
                .filter(h => !h.startsWith('#')).length,
        svgs: document.querySelectorAll('svg').length,
        plots: document.querySelectorAll('figure.plot').length,
        visible: getComputedStyle(document.body).display}""")
    assert found == {"scripts": 0 if static == "1000" else 1, "styles": 1, "loaders": 0,
                     "handlers": 0, "urls": 0, "svgs": found["plots"], "plots": 1,
                     "visible": "block"}
    text = browser.find_element("tag name", "body").text
    assert "<script>window.__pwned=1</script>" in text  # shown as text in the diff (goldens)
    assert "x<script>window.__pwned=5</script>" in text  # the tag, as a label
    # the commit without a run is not a point: two points for two commits with runs
    assert browser.execute_script("return document.querySelectorAll('circle.pt').length") == 2
    if static == "0":  # as data: opening the list of trials puts them in
        browser.find_element("css selector", "details.trials > summary").click()
        WebDriverWait(browser, 10).until(lambda d: d.find_elements("css selector",
                                                                   "details.trial"))
    details = browser.find_element("css selector", "details.trial")
    details.find_element("tag name", "summary").click()
    assert P in details.find_element("css selector", ".answer").text
    assert browser.execute_script("return window.__pwned") is None
    images = "return document.querySelectorAll('img, svg image').length"
    assert browser.execute_script(images) == 0
    assert browser.get_log("browser") == []  # the script ran under the policy, nothing refused
