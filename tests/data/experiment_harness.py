"""A deterministic test harness for experiments: its answers, token counts and counters
are functions of MODEL (the lane's env), SKILL (a constant each commit may change) and
the trial number, so a test can compute every rate, mean and variance by hand.

MODEL=a: always right; usage prompt 100 + trial, completion 10 * SKILL.
MODEL=b: wrong on odd trials; usage prompt 200 + 2 * trial, completion 20 + trial;
         reports ``retries`` = trial.
MODEL=quiet: always right; omits ``usage`` on the second turn of odd trials.
A lane's commit sets SKILL; SKILL 2 answers wrong on trial 4 of the geo case.
MODEL=hang: never answers (a test interrupts the experiment).
EXPERIMENT_MARKER: a file this harness creates as soon as it starts.
"""
import json
import os
import sys
import time

SKILL = 1

marker = os.environ.get("EXPERIMENT_MARKER")
if marker:
    open(marker, "a").close()
model = os.environ.get("MODEL", "a")
if model == "hang":
    time.sleep(600)
for line in sys.stdin:
    msg = json.loads(line)
    t, turn = msg["trial"], msg["turn"]
    right = "Paris" if msg["case"] == "geo" else "4"
    wrong = (model == "b" and t % 2 == 1) or (SKILL == 2 and msg["case"] == "geo" and t == 4)
    reply = {"final_answer": "Lyon" if wrong else right, "tool_calls": [], "error": None}
    if model == "a":
        reply["usage"] = {"prompt_tokens": 100 + t, "completion_tokens": 10 * SKILL}
    elif model == "b":
        reply["usage"] = {"prompt_tokens": 200 + 2 * t, "completion_tokens": 20 + t}
        reply["retries"] = t
    elif not (t % 2 == 1 and turn == 1):
        reply["usage"] = {"prompt_tokens": 50, "completion_tokens": 5 + turn}
    print(json.dumps(reply), flush=True)
