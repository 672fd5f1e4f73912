"""A test harness speaking the gitevals target protocol; misbehaves on request.

The scenario id picks the behaviour: ok*, crash*, hang*, garbage*, half*, silent*,
flaky* (passes on even trials), slow* (answers after 0.3 s).
"""
import json
import os
import sys
import time

for line in sys.stdin:
    msg = json.loads(line)
    sid = msg["scenario"]
    if sid.startswith("crash"):
        print("boom: the harness fell over", file=sys.stderr)
        sys.exit(3)
    if sid.startswith("hang"):
        marks = os.environ.get("RUN_HARNESS_MARKS")
        if marks:  # lets a test see that this conversation is now hanging
            open(os.path.join(marks, f"{sid}-{msg['trial']}"), "w").close()
        time.sleep(600)
    if sid.startswith("garbage"):
        print("this is not json", flush=True)
        continue
    if sid.startswith("half"):
        sys.stdout.write('{"final_answer": "cut sh')
        sys.stdout.flush()
        sys.exit(0)
    if sid.startswith("silent"):
        sys.exit(0)
    if sid.startswith("slow"):
        time.sleep(0.3)
    answer = "Paris" if "France" in msg["text"] else "answer: " + msg["text"]
    if sid.startswith("flaky") and msg["trial"] % 2:
        answer = "I do not know"
    calls = [{"name": "shell__run", "args": {"cmd": "ls"}, "result": "a b"}] if "files" in msg["text"] else []
    print(json.dumps({"final_answer": answer, "tool_calls": calls,
                      "hooks": [{"name": "guard", "decision": "allow"}], "error": None,
                      "tokens": 7, "echo": msg}), flush=True)
