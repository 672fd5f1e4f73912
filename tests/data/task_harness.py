"""A test target for task runs: it works in the workspace it is given.

Iteration i writes line i of the workspace's ``plan.txt`` (the last line once the plan
runs out) to ``answer.txt``; a line ``-`` writes nothing, a line ``!`` crashes (exit 3).
Its answer echoes the message.
"""
import json
import os
import sys

for line in sys.stdin:
    msg = json.loads(line)
    ws = msg["workspace"]
    files = sorted(os.listdir(ws)) if msg["iteration"] == 0 else None
    with open(os.path.join(ws, "plan.txt")) as f:
        plan = f.read().splitlines()
    step = plan[min(msg["iteration"], len(plan) - 1)]
    if step == "!":
        sys.exit(3)
    if step != "-":
        with open(os.path.join(ws, "answer.txt"), "w") as f:
            f.write(step + "\n")
    marks = os.environ.get("TASK_HARNESS_MARKS")
    if marks:  # lets a test see that the verifier of this iteration is about to run
        open(os.path.join(marks, f"{msg['trial']}-{msg['iteration']}"), "w").close()
    print(json.dumps({"final_answer": "wrote " + step, "tool_calls": [], "hooks": [],
                      "error": None, "echo": msg, "workspace_files": files}), flush=True)
