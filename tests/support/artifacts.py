"""Artifacts built by hand, contract-complete: transcripts, grader answers, trial
results, scenarios, whole runs (scored by the product's own pure scoring), and broken ones."""

from __future__ import annotations

import json
from typing import Any

from gitevals.run.scoring import score_trial, verdict

COMMIT = "1" * 40


def transcript(answer: str | None = "Paris", calls: Any = (), error: Any = None) -> dict[str, Any]:
    return {"final_answer": answer, "tool_calls": list(calls), "hooks": [], "error": error,
            "turns": [{"final_answer": answer}], "duration_ms": 3}


def grader_answer(raw: Any, index: int = 0, name: str = "quality.answers",
                  error: Any = None) -> dict[str, Any]:
    return {"index": index, "name": name, "raw": raw, "error": error, "duration_ms": 1}


def result(trial: int, expect: list[dict[str, Any]], t: dict[str, Any],
           graders: list[dict[str, Any]] | None = None,
           error: dict[str, Any] | None = None) -> dict[str, Any]:
    graders = graders or []
    assertions, passed = score_trial(expect, t, graders, error)
    return {"trial": trial, "transcript": t, "error": error, "graders": graders,
            "assertions": assertions, "passed": passed}


def scenario(sid: str, expect: list[dict[str, Any]], results: list[dict[str, Any]],
             trials: int | None = None) -> dict[str, Any]:
    return {"id": sid, "user": [f"question of {sid}"], "expect": expect,
            "trials": trials or max(1, len(results)), "timeout": 300.0, "results": results,
            "verdict": verdict(results)}


def artifact(cases: dict[str, list[dict[str, Any]]], commit: str = COMMIT,
             run_id: str | None = None, finished_at: str = "2026-11-29T22:01:00Z",
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """A contract-complete artifact from case name -> scenario dicts."""
    return {
        "format": "gitevals-run/1",
        "run_id": run_id or f"20261129T220000Z-{commit[:12]}-a1b2c3",
        "tool_version": "0.1.0", "rev": "HEAD", "commit": commit, "tree": "2" * 40,
        "dirty": False, "dirty_diff": None, "root": "evals", "settings": settings or {},
        "files": {f"evals/cases/{n}.yaml": "3" * 40 for n in cases},
        "started_at": "2026-11-29T22:00:00Z", "finished_at": finished_at,
        "duration_ms": 60000, "interrupted": False,
        "options": {"cases": [], "trials": None, "jobs": 2},
        "cases": [{"name": n, "path": f"evals/cases/{n}.yaml", "blob": "3" * 40,
                   "scenarios": s} for n, s in sorted(cases.items())],
    }


PARIS = [{"final_answer_contains": "Paris"}]


def sample() -> dict[str, Any]:
    """tone: one pass, one flaky, one fail; tools: one broken."""
    ok, bad = transcript("Paris"), transcript("Lyon")
    crash = {"kind": "target_crash", "message": "exited with status 1"}
    return artifact({
        "tone": [
            scenario("capital", PARIS, [result(0, PARIS, ok), result(1, PARIS, ok)]),
            scenario("flaky", PARIS, [result(0, PARIS, ok), result(1, PARIS, bad)]),
            scenario("wrong", PARIS, [result(0, PARIS, bad), result(1, PARIS, bad)]),
        ],
        "tools": [scenario("crashes", PARIS, [result(0, PARIS, transcript(None), error=crash)])],
    })


def _broken(edit: Any) -> bytes:
    art = sample()
    edit(art)
    return json.dumps(art).encode()


BAD: list[tuple[str, bytes, str]] = [
    ("not-json", b"{not json", "not JSON (Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)); give the .json file `gitevals run` wrote"),
    ("list", b"[]", "the top level is list, not an object"),
    ("no-format", b"{}", "no \"format\": 'gitevals-run/1' key; give the .json file "
     "`gitevals run` wrote"),
    ("newer-format", b'{"format": "gitevals-run/2"}', "format 'gitevals-run/2' is not "
     "'gitevals-run/1', the one this gitevals reads; upgrade gitevals"),
    ("missing-commit", _broken(lambda a: a.pop("commit")),
     "at $: 'commit' is a required property; see schemas/result.schema.json"),
    ("bad-verdict", _broken(lambda a: a["cases"][0]["scenarios"][1]["verdict"].update(
        verdict="meh")), "at $.cases[0].scenarios[1].verdict.verdict: 'meh' is not one of "
     "['pass', 'flaky', 'fail', 'broken', 'not_run']; see schemas/result.schema.json"),
    ("bad-trial-record", _broken(lambda a: a["cases"][1]["scenarios"][0]["results"][0]
                                 ["transcript"].update(tool_calls={})),
     "at $.cases[1].scenarios[0].results[0].transcript.tool_calls: {} is not of type 'array'; "
     "see schemas/result.schema.json"),
    ("bad-error-kind", _broken(lambda a: a["cases"][1]["scenarios"][0]["results"][0]
                               ["error"].update(kind="Crash!")),
     "at $.cases[1].scenarios[0].results[0].error.kind: 'Crash!' does not match "
     "'^[a-z][a-z0-9_]*$'; see schemas/result.schema.json"),
]
