'''What ``gitevals init --graders`` writes into ``<root>/graders/``: four starting points a
user edits, one per grader shape (docs/graders.md). Each is a plain module of top-level
``def fn(t, case, run)`` graders, so lint resolves it statically and it lints clean.'''

from __future__ import annotations

SCHEMA_COMPLIANCE = '''\
"""Schema compliance: the final answer is JSON that follows RESPONSE_SCHEMA.

For a failure bucket like "the output is not shaped right" (tool calls, structured
extraction). Deterministic: no judge, nothing to calibrate. Name it in a case as
    - grader: {name: schema_compliance.follows_schema}
Edit RESPONSE_SCHEMA (JSON Schema 2020-12) to the shape your harness must produce.
"""

import json

import jsonschema

RESPONSE_SCHEMA = {
    "type": "object",
    "required": ["action", "arguments"],
    "properties": {
        "action": {"type": "string", "minLength": 1},
        "arguments": {"type": "object"},
    },
    "additionalProperties": False,
}


def follows_schema(t, case, run):
    """Pass when the answer parses as JSON and is valid against RESPONSE_SCHEMA.

    An answer that is not JSON at all is a fail, decided here: it is the very failure
    this grader exists to catch, not an error of the grader."""
    try:
        payload = json.loads(run["final_answer"] or "")
    except ValueError as exc:
        return {"pass": False, "why": f"not JSON: {exc}"}
    validator = jsonschema.Draft202012Validator(RESPONSE_SCHEMA)
    problems = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    if problems:
        where = "/".join(str(p) for p in problems[0].absolute_path) or "the top level"
        return {"pass": False, "why": f"at {where}: {problems[0].message}"}
    return {"pass": True, "why": "valid JSON of the expected shape"}
'''

EXACT_MATCH = '''\
"""Exact match after normalization: the final answer equals the expected one.

For buckets with one right string (a number, an entity, a label) where a plain ==
would fail on case, spacing or punctuation. Both sides go through the same normalize(),
so neither gets an easier comparison. Deterministic: nothing to calibrate.
    - grader: {name: exact_match.matches}
The expected answer comes from the labelled item ("expected", as in goldens.jsonl)
or, in a case, from EXPECTED under the scenario id.
"""

import re
import unicodedata

#: scenario id -> the expected answer (edit: one entry per scenario that uses this grader)
EXPECTED = {
    "answers-the-question": "Paris",
}


def normalize(text):
    """Unicode-compatible forms, case folded, punctuation except '.' dropped, runs of
    whitespace made one space, a trailing full stop dropped."""
    text = unicodedata.normalize("NFKC", str(text)).casefold().strip()
    text = re.sub(r"[^\\w\\s.]", "", text)
    text = re.sub(r"\\s+", " ", text)
    return text.rstrip(".").strip()


def matches(t, case, run):
    """Pass when normalize(answer) == normalize(expected). No expected answer for the
    scenario is an error (a KeyError the run records), never a pass."""
    expected = case["expected"] if "expected" in case else EXPECTED[case["id"]]
    got, want = normalize(run["final_answer"] or ""), normalize(expected)
    return {"pass": got == want, "why": f"{got!r} vs expected {want!r}"}
'''

EXECUTION = '''\
"""Execution: the final answer is Python code, and it passes when TESTS run clean
against it inside a bubblewrap sandbox.

SECURITY: this runs code a model wrote. It runs it only inside bubblewrap (bwrap):
no network, the system read-only, a private /tmp, an empty environment, the answer's
directory read-only. When bwrap is not on PATH, or cannot set the sandbox up, the
grader raises SandboxUnavailable: the run records a grader error, never a pass and
never a run on the host. TIMEOUT keeps grading moving; it is not a security boundary.
    - grader: {name: execution.passes_tests}
Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) where graders run.
"""

import os
import shutil
import subprocess
import tempfile

#: Seconds the tests may run; a hung answer is a fail, never a pass.
TIMEOUT = 20
#: scenario id -> test code run against solution.py ("default" for any other scenario).
TESTS = {
    "default": "from solution import add\\nassert add(2, 3) == 5\\nassert add(-1, 1) == 0\\n",
}


class SandboxUnavailable(RuntimeError):
    """No sandbox to run the answer in: an error of the grader, never a decision."""


def _sandboxed(bwrap, work):
    """The argv that runs the tests inside bubblewrap, with ``work`` read-only at /work."""
    return [
        bwrap, "--unshare-all", "--die-with-parent", "--new-session",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin",
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--ro-bind", work, "/work", "--chdir", "/work",
        "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
        "python3", "-E", "-s", "-B", "test_solution.py",
    ]


def passes_tests(t, case, run):
    """Pass when the tests exit 0 in the sandbox; a non-zero exit or a timeout is a fail."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not on PATH: this grader runs "
                                 "model-written code only inside it; install bubblewrap")
    tests = TESTS.get(case["id"], TESTS["default"])
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "solution.py"), "w", encoding="utf-8") as f:
            f.write(run["final_answer"] or "")
        with open(os.path.join(work, "test_solution.py"), "w", encoding="utf-8") as f:
            f.write(tests)
        try:
            proc = subprocess.run(_sandboxed(bwrap, work), capture_output=True, text=True,
                                  timeout=TIMEOUT, env={"PATH": "/usr/bin:/bin"},
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {"pass": False, "why": f"the tests ran past {TIMEOUT} s"}
    if proc.returncode != 0 and proc.stderr.startswith("bwrap:"):
        raise SandboxUnavailable(f"bubblewrap could not set up the sandbox: "
                                 f"{proc.stderr.strip()[:200]}")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {"pass": False, "why": last[:300]}
    return {"pass": True, "why": "the tests passed"}
'''

LLM_JUDGE = '''\
"""LLM judge: the judge model answers PASS or FAIL on one criterion, anchored by
few-shot examples of each.

Only for what no deterministic check can express (tone, faithfulness). It asks the
judge through t.judge, which takes exactly PASS or FAIL (any case, spaces around
allowed) and raises on anything else: an unparseable answer is an error, never a FAIL.
Until it is calibrated (gitevals calibrate llm_judge.meets_criterion --labels FILE
--final) its verdicts are advisory: shown, never counted. Few-shot examples may come
from the train split of your labels, never from dev or test.
    - grader: {name: llm_judge.meets_criterion}
"""

CRITERION = "The response answers the question asked, politely and in plain words."

#: (task, response) pairs a careful human labelled PASS: edit them.
PASS_EXAMPLES = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("How do I list files?", "Run `ls` in the directory you want to see."),
]
#: (task, response) pairs a careful human labelled FAIL: edit them.
FAIL_EXAMPLES = [
    ("What is the capital of France?", "Why would you even ask that?"),
    ("How do I list files?", "The weather today is sunny."),
]

PROMPT = """Decide whether a response meets this criterion: {criterion}

Responses that meet it (PASS):
{passes}

Responses that do not (FAIL):
{fails}

Grade the response below. Reply with one word only: PASS or FAIL.

Task: {task}
Response: {response}
Verdict:"""


def _shown(pairs):
    return "\\n".join(f"- Task: {task}\\n  Response: {response}" for task, response in pairs)


def meets_criterion(t, case, run):
    """True when the judge says PASS, False for FAIL (t.judge raises on anything else)."""
    prompt = PROMPT.format(criterion=CRITERION, passes=_shown(PASS_EXAMPLES),
                           fails=_shown(FAIL_EXAMPLES), task="\\n".join(case["user"]),
                           response=run["final_answer"] or "")
    return t.judge(prompt)
'''

#: file name (in ``<root>/graders/``) -> its text.
TEMPLATES: dict[str, str] = {
    "schema_compliance.py": SCHEMA_COMPLIANCE,
    "exact_match.py": EXACT_MATCH,
    "execution.py": EXECUTION,
    "llm_judge.py": LLM_JUDGE,
}
