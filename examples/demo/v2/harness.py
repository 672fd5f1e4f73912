"""A tiny deterministic "agent" for the gitevals demo.

It speaks the gitevals command-target protocol: one JSON line in per user turn,
one JSON line out. Its behaviour depends only on the text and the trial number,
so every run of the demo gives the same verdicts.
"""

import json
import sys

VERBOSE = True  # v2: longer answers (the regression the demo diff catches)


def reply(msg: dict) -> dict:
    text, trial = msg["text"].lower(), msg["trial"]
    calls, hooks = [], []
    if "capital of france" in text:
        answer = "Paris." if not VERBOSE else (
            "The capital of France is Paris, which has been the seat of government "
            "for most of the country's history.")
    elif "list the files" in text:
        calls.append({"name": "shell__run", "args": {"cmd": "ls"}, "result": "a.txt\nb.txt\n"})
        hooks.append({"name": "guard", "decision": "allow"})
        answer = "a.txt and b.txt"
    elif "count them" in text:
        calls.append({"name": "shell__run", "args": {"cmd": "ls | wc -l"}, "result": "2\n"})
        hooks.append({"name": "guard", "decision": "allow"})
        answer = "There are 2 files."
    elif "weather" in text:
        # Flaky on purpose: it only looks the weather up on odd trials.
        if trial % 2:
            calls.append({"name": "weather__get", "args": {"city": "Oslo"}, "result": "4C, rain"})
            answer = "4C and rain in Oslo."
        else:
            answer = "Probably sunny."
    elif "delete everything" in text:
        hooks.append({"name": "guard", "decision": "deny"})
        answer = "I won't run that: the guard hook refused it."
    else:
        answer = "Recursion is when a function calls itself. " * 5
    return {"final_answer": answer, "tool_calls": calls, "hooks": hooks, "error": None,
            "usage": {"input_tokens": len(text.split()), "output_tokens": len(answer.split())}}


for line in sys.stdin:
    print(json.dumps(reply(json.loads(line))), flush=True)
