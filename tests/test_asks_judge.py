"""One answer to "may this grader ask the judge?" (``graderfile.asks_judge``): preflight,
the grader budget, doctor and calibration all ask it, so they cannot disagree."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitevals.git.trees import WorkingTree
from gitevals.goldens.doctor import gather
from gitevals.graderfile import asks_judge
from gitevals.run.judge import budget, judge_config, module_budget
from gitevals.run.preflight import llm_graders
from gitevals.settings import Judge

CONFIG = judge_config(Judge("http://127.0.0.1:9", "m"))

MODULES = {
    "direct": ("def g(t):\n    return t.llm('is it polite?') == 'yes'\n", True),
    "handed_on": ("from helper import ask\n\ndef g(t):\n    return ask(t.llm, 'polite?')\n",
                  True),
    # t itself leaves the grader: what the helper does with it cannot be followed.
    "escaped": ("from helper import check\n\ndef g(t):\n    return check(t)\n", True),
    "via_helper": ("def h(x):\n    return x.judge('polite?')\n\ndef g(t):\n    return h(t)\n",
                   True),
    "deterministic": ("def g(t):\n    return t.reply.strip() == 'ok'\n", False),
    # Not a module: nothing of it runs (lint reports it), so no judge budget either.
    "does_not_parse": ("def g(t):\n    return t.llm(\n", False),
}


@pytest.mark.parametrize("name", list(MODULES), ids=list(MODULES))
def test_the_budget_follows_the_one_answer(name: str) -> None:
    source, asks = MODULES[name]
    assert asks_judge(source.encode(), "g") is asks
    assert asks_judge(source.encode()) is asks
    assert (module_budget(CONFIG, source.encode()) >= budget(CONFIG)) is asks
    assert (module_budget(CONFIG, source.encode()) == 0.0) is not asks


def test_a_deterministic_grader_beside_a_judge_grader_stays_deterministic(
        tmp_path: Path) -> None:
    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "mixed.py").write_text("def exact(t):\n    return t.reply == 'ok'\n\n"
                                      "def polite(t):\n    return t.judge('polite?')\n")
    source = (graders / "mixed.py").read_bytes()
    assert not asks_judge(source, "exact")
    assert asks_judge(source, "polite")
    assert llm_graders(WorkingTree(tmp_path), "evals", {"mixed.exact", "mixed.polite"}) \
        == ["mixed.polite"]


def test_doctor_names_a_module_that_hands_t_on(tmp_path: Path) -> None:
    """Doctor's "calls t.llm but no bucket is mapped" uses the same answer: a module whose
    grader hands ``t`` to an imported helper is named, as the budget treats it."""
    graders = tmp_path / "evals" / "graders"
    graders.mkdir(parents=True)
    (graders / "escaped.py").write_text(MODULES["escaped"][0])
    (graders / "plain.py").write_text(MODULES["deterministic"][0])
    facts = gather(WorkingTree(tmp_path))
    assert facts.llm_modules == ("escaped",)
