"""Graders of the demo: plain functions called as quality.<name>(t, case, run)."""


def concise(t, case, run):
    """Shorter answers score higher; over 200 characters fails."""
    answer = run["final_answer"] or ""
    score = max(0.0, 1.0 - len(answer) / 200)
    return {"pass": len(answer) <= 200, "score": round(score, 3), "why": f"{len(answer)} chars"}
