"""Benchmark of results kept in git for years (issue 24): summaries in notes, artifacts apart.

    python benchmarks/bench_notes.py [--commits 2000] [--trials 500] [--old-commits 20]
                                     [--dir DIR] [--old-code DIR]

Builds with ``git fast-import`` a history of --commits commits, each with a note holding
the summary of a run of --trials trials of the issue's realistic agent (2 turns, answers
of ~500 characters, 5 tool calls with ~300-character arguments and ~1 KB results, a
third of the results shared between trials). Pins are real (commit, tree, case blob), so
every note is evidence; pass bits, durations and token counts vary from commit to commit.
Only the tip's full artifact is packed and kept (``refs/gitevals/runs/<sha256>``): packing
every run would take the builder minutes and changes none of the figures below.

Then, each a fresh process (wall time and peak RSS of it and its children):

- the packed size of ``refs/notes/gitevals`` (all notes commits, trees and blobs), per trial;
- a fresh clone (``file://``, so git packs as over a network) plus ``gitevals notes pull``;
- on it: ``diff HEAD~1 HEAD``, ``log --limit 200``, ``report --limit 100`` (whose tip's
  transcripts are fetched on demand), ``show --trial`` including the on-demand fetch;
- ``notes pull`` taking the merge path (both sides wrote a note) at 100 and at all notes.

With ``--old-commits N`` (default 20; 0 skips) the same agent's runs are kept the old way
(whole runs in the notes, as ``--old-code``'s gitevals, default ``git archive main``, wrote
them) on N commits, and ``log``, ``notes pull`` and the notes' size are measured with the
old code beside the new code on the new form: the ratios per commit are printed.
zstd, zlib and lzma are compared on the tip's artifact (``gitevals.run.archive``'s choice).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
SCENARIOS = 50
CASE = "".join(f"  - id: s{i}\n    user: question {i}\n    expect:\n"
               "      - final_answer_contains: ok\n" for i in range(SCENARIOS))
CASE = f"defaults: {{trials: 10, timeout: 60s}}\nscenarios:\n{CASE}"
WORDS = ["the", "agent", "reads", "a", "file", "then", "calls", "tool", "and", "writes",
         "answer", "about", "weather", "cities", "prices", "code", "tests", "errors",
         "results", "plans", "steps", "order", "items", "users"]


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True,
                         capture_output=True, input=input)
    return out.stdout.decode().strip()


def text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) + len(out) < chars:
        out.append(rng.choice(WORDS))
    return " ".join(out)


# -- the synthetic runs -----------------------------------------------------------------


def full_run(rng: random.Random, commit: str, tree: str, blob: str, trials: int) -> Any:
    """A run of the realistic agent: ``trials`` trials over ``SCENARIOS`` scenarios."""
    from gitevals.run.artifact import transcript
    from gitevals.run.scoring import score_trial, verdict

    shared = [text(rng, 1000) for _ in range(20)]
    per = max(1, trials // SCENARIOS)
    expect = [{"final_answer_contains": "ok"}]
    scenarios = []
    for s in range(SCENARIOS):
        rate = rng.random()
        results = []
        for t in range(per):
            ok = rng.random() < rate
            replies = []
            for turn in range(2):
                calls = [{"name": f"tool{c}", "arguments": {"q": text(rng, 300)},
                          "result": rng.choice(shared) if c % 3 == 0 else text(rng, 1000)}
                         for c in range(5 if turn == 0 else 0)]
                answer = text(rng, 500) + (" ok" if ok else " no")
                usage = {"prompt_tokens": rng.randint(500, 9000),
                         "completion_tokens": rng.randint(50, 900)}
                replies.append({"final_answer": answer, "tool_calls": calls, "hooks": [],
                                "error": None, "usage": usage})
            tr = transcript(replies, rng.randint(800, 30000))
            assertions, passed = score_trial(expect, tr, [], None)
            results.append({"trial": t, "transcript": tr, "error": None, "graders": [],
                            "assertions": assertions, "passed": passed})
        scenarios.append({"id": f"s{s}", "user": [f"question {s}"], "expect": expect,
                          "trials": per, "timeout": 60, "results": results,
                          "verdict": verdict(results)})
    stamp = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00.000Z"
    return {"format": "gitevals-run/1",
            "run_id": f"20260101T100000Z-{commit[:12]}-{rng.randrange(16 ** 6):06x}",
            "tool_version": "0.1.0", "rev": "HEAD", "commit": commit, "tree": tree,
            "dirty": False, "dirty_diff": None, "root": "evals", "settings": {},
            "files": {"evals/cases/agent.yaml": blob}, "started_at": stamp,
            "finished_at": stamp, "duration_ms": 60000, "interrupted": False,
            "options": {"cases": [], "trials": None, "jobs": 8},
            "cases": [{"name": "agent", "path": "evals/cases/agent.yaml", "blob": blob,
                       "scenarios": scenarios}]}


def varied(template: Any, rng: random.Random, commit: str, tree: str) -> Any:
    """``template`` (a summary with its trials packed, ``summary.pack``) for another
    commit: its own pass bits, times, tokens, written into the columns directly (unpacking
    2,000 runs of 500 trials would take the builder minutes)."""
    from gitevals.run.summary import outcomes_verdict

    doc = json.loads(json.dumps(template))
    doc.update(commit=commit, tree=tree,
               run_id=f"20260101T100000Z-{commit[:12]}-{rng.randrange(16 ** 6):06x}")
    doc["stored"] = {"sha256": hashlib.sha256(commit.encode()).hexdigest(),
                     "bytes": template["stored"]["bytes"]}
    for s in doc["cases"][0]["scenarios"]:
        n, rate = len(s["packed"]["outcomes"]), rng.random()
        bits = "".join("1" if rng.random() < rate else "0" for _ in range(n))
        table = json.loads(s["packed"]["columns"])
        cols = table["o"]
        cols["passed"] = {"b": bits}
        cols["assertions"]["v"]["o"]["passed"] = {"b": bits}
        tr = cols["transcript"]["o"]
        tr["duration_ms"] = {"n": ",".join(str(rng.randint(800, 30000)) for _ in range(n))}
        usage = tr["turns"]["v"]["o"]["usage"]["o"]
        usage["prompt_tokens"] = {"n": ",".join(str(rng.randint(500, 9000))
                                                for _ in range(2 * n))}
        usage["completion_tokens"] = {"n": ",".join(str(rng.randint(50, 900))
                                                    for _ in range(2 * n))}
        s["packed"]["outcomes"] = bits
        s["packed"]["columns"] = json.dumps(table, sort_keys=True, separators=(",", ":"))
        name, passes, trials = outcomes_verdict(bits)
        first = s["verdict"]["first_failure"] or "trial failed"
        s["verdict"].update(verdict=name, passes=passes, trials=trials, pass_at_k=passes > 0,
                            pass_hat_k=passes == trials,
                            first_failure=None if passes == trials else first)
    return doc


# -- building the repositories ----------------------------------------------------------


def build_history(dest: Path, commits: int) -> list[tuple[str, str]]:
    """``commits`` commits on main (fast-import); ``(sha, tree)`` oldest first, and the
    blob of the case file."""
    git(dest, "init", "-q", "-b", "main")
    case = CASE.encode()
    stream = [b"blob\nmark :1\ndata %d\n%s\n" % (len(case), case)]
    for i in range(commits):
        msg = f"change {i}".encode()
        body = f"{i}\n".encode()
        stream.append(b"commit refs/heads/main\nmark :%d\ncommitter bench <b@x> %d +0000\n"
                      b"data %d\n%s\n" % (i + 2, 1700000000 + i * 60, len(msg), msg))
        if i:
            stream.append(b"from :%d\n" % (i + 1))
        stream.append(b"M 100644 :1 evals/cases/agent.yaml\n")
        stream.append(b"M 100644 inline counter.txt\ndata %d\n%s\n" % (len(body), body))
    git(dest, "fast-import", "--quiet", input=b"".join(stream))
    git(dest, "reset", "-q", "--hard", "main")
    rows = git(dest, "log", "--reverse", "--format=%H %T", "main").splitlines()
    return [(r.split()[0], r.split()[1]) for r in rows]


def import_notes(dest: Path, ref: str, notes: list[tuple[str, str]]) -> None:
    """One notes commit on ``ref`` holding ``notes`` (fast-import fans the tree out)."""
    parts = [b"commit %s\ncommitter bench <b@x> 1800000000 +0000\ndata 5\nnotes\n"
             % ref.encode()]
    for commit, note in notes:
        data = note.encode()
        parts.append(b"N inline %s\ndata %d\n%s\n" % (commit.encode(), len(data), data))
    git(dest, "fast-import", "--quiet", "--force", input=b"".join(parts))


def build_new(dest: Path, commits: int, trials: int) -> tuple[int, dict[str, int]]:
    """The history with summary notes; returns the bytes of the tip's artifact text and
    its packed sizes by compressor."""
    from gitevals.git.repo import Repo, require_repo
    from gitevals.run import archive
    from gitevals.run.store import note_line
    from gitevals.run.summary import pack, summarize

    rows = build_history(dest, commits)
    blob = git(dest, "rev-parse", "main:evals/cases/agent.yaml")
    rng = random.Random(24)
    tip, tip_tree = rows[-1]
    run = full_run(rng, tip, tip_tree, blob, trials)
    sha, size, packed = archive.pack(run)
    repo: Repo = require_repo(dest)
    repo.set_ref("refs/gitevals/runs/" + sha, repo.write_blob(packed), None)
    tip_summary = summarize(run, sha, size)
    template = pack(tip_summary)
    notes = [(c, note_line(varied(template, rng, c, t))) for c, t in rows[:-1]]
    notes.append((tip, note_line(tip_summary)))
    import_notes(dest, "refs/notes/gitevals", notes)
    import_notes(dest, "refs/notes/small", notes[-100:])
    plain = archive.dumps(run).encode()
    sizes = {"raw": len(plain), "archive (zstd)": len(packed),
             "zstd -9 whole": len(__import__("zstandard").ZstdCompressor(level=9).compress(plain)),
             "zlib -9 whole": len(zlib.compress(plain, 9)), "lzma whole": len(lzma.compress(plain))}
    return size, sizes


def build_old(dest: Path, commits: int, trials: int) -> None:
    """The history with whole runs in the notes, one JSONL line each (the old form)."""
    from gitevals.run.store import note_line

    rows = build_history(dest, commits)
    blob = git(dest, "rev-parse", "main:evals/cases/agent.yaml")
    rng = random.Random(25)
    notes = [(c, note_line(full_run(rng, c, t, blob, trials))) for c, t in rows]
    import_notes(dest, "refs/notes/gitevals", notes)
    import_notes(dest, "refs/notes/small", notes[-min(100, len(notes)):])


# -- measuring ---------------------------------------------------------------------------


#: Runs the command as its own child and reports that child's rusage: a direct child of
#: this (large) builder would report the builder's RSS, which ru_maxrss keeps across exec.
LAUNCHER = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, u = os.wait4(p.pid, 0)
print(os.waitstatus_to_exitcode(status), u.ru_utime + u.ru_stime, u.ru_maxrss, file=sys.stdout)
"""


def measure(argv: list[str], cwd: Path, code: Path | None = None) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS MiB, stderr) of ``argv`` and the children it waited for;
    ``gitevals`` runs from this checkout, or from ``code`` (the old one). CPU, not wall:
    on a machine shared with other jobs the wall time is mostly waiting for a core."""
    env = {**os.environ, **GIT_ENV}
    if argv[0] == "gitevals":
        argv = [sys.executable, "-m", "gitevals", *argv[1:]]
        env["PYTHONPATH"] = str(code) if code else str(HERE.parent)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    code_s, cpu, rss = proc.stdout.split()
    if int(code_s) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({code_s}): {proc.stderr}")
    print(f"    ({' '.join(argv[3:])}: wall {wall:.1f} s)", file=sys.stderr)
    return float(cpu), int(rss) / 1024, proc.stderr


def packed_notes(repo: Path, ref: str = "refs/notes/gitevals") -> int:
    objs = subprocess.run(["git", "rev-list", "--objects", ref], cwd=repo, check=True,
                          capture_output=True).stdout
    pack = subprocess.run(["git", "pack-objects", "--stdout", "-q"], cwd=repo, input=objs,
                          check=True, capture_output=True).stdout
    return len(pack)


def fresh_clone(src: Path, dest: Path, notes_ref: str, code: Path | None = None
                ) -> tuple[float, float]:
    """``git clone file://src`` then ``gitevals notes pull`` of ``notes_ref`` (as the
    remote's refs/notes/gitevals): seconds and peak MiB of the pull."""
    bare = dest.with_suffix(".git")
    git(src.parent, "clone", "-q", "--mirror", str(src), str(bare))
    git(bare, "update-ref", "refs/notes/gitevals", git(src, "rev-parse", notes_ref))
    git(src.parent, "clone", "-q", f"file://{bare}", str(dest))
    wall, rss, _ = measure(["gitevals", "notes", "pull"], dest, code)
    return wall, rss


def merge_pull(clone: Path, code: Path | None = None) -> tuple[float, float]:
    """Both sides write a note (the remote on HEAD~1, this clone on HEAD), then pull:
    the merge path. Seconds and peak MiB."""
    bare = Path(git(clone, "config", "remote.origin.url").removeprefix("file://"))
    for where, rev, suffix in ((bare, "main~1", "aaaaaa"), (clone, "main", "bbbbbb")):
        sha = git(where, "rev-parse", rev)
        line = json.loads(git(where, "notes", "--ref", "gitevals", "show", sha).split("\n")[0])
        line["run_id"] = line["run_id"][:-6] + suffix
        text = json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n"
        old = git(where, "notes", "--ref", "gitevals", "show", sha)
        git(where, "notes", "--ref", "gitevals", "add", "-f", "-F", "-", sha,
            input=(old + "\n" + text).encode())
    wall, rss, _ = measure(["gitevals", "notes", "pull"], clone, code)
    return wall, rss


def old_code(given: str | None, work: Path) -> Path:
    if given:
        return Path(given)
    dest = work / "old-code"
    dest.mkdir()
    tar = subprocess.run(["git", "archive", "main", "gitevals", "schemas"], cwd=HERE.parent,
                         check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--old-commits", type=int, default=20)
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--old-code", help="a checkout of the gitevals before summaries")
    ap.add_argument("--measure-only", action="store_true",
                    help="reuse the repositories built in --dir by an earlier run")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent))
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-notes-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src"
    if args.measure_only:
        for name in ("clone", "clone.git", "merge-100", "merge-100.git", "merge-all",
                     "merge-all.git", "old-clone", "old-clone.git", "old-merge",
                     "old-merge.git", "old-code"):
            subprocess.run(["rm", "-rf", str(work / name)], check=True)
    else:
        src.mkdir()
        t0 = time.perf_counter()
        size, sizes = build_new(src, args.commits, args.trials)
        trials = args.commits * args.trials
        print(f"built {args.commits} commits x {args.trials} trials in "
              f"{time.perf_counter() - t0:.0f} s (machine shared with other jobs)")
        total = packed_notes(src)
        print(f"summary notes packed: {total / 2**20:.1f} MiB = {total / trials:.1f} B a "
              "trial (bar 150)")
        print(f"tip artifact: {size / args.trials / 1024:.1f} KiB a trial as text; "
              + ", ".join(f"{k} {v / 2**20:.2f} MiB ({size / v:.1f}x)"
                          for k, v in sizes.items() if k != "raw"))
    clone = work / "clone"
    wall, rss = fresh_clone(src, clone, "refs/notes/gitevals")
    print(f"fresh clone + notes pull: pull {wall:.2f} CPU-s, {rss:.0f} MiB")
    for name, argv in (("diff HEAD~1 HEAD", ["diff", "HEAD~1", "HEAD"]),
                       ("log --limit 200", ["log", "--limit", "200"]),
                       ("report --limit 100", ["report", "--limit", "100", "-o", "r.html"]),
                       ("show --trial (fetch)", ["show", "--trial", "agent/s3/0"]),
                       ("show --trial (kept)", ["show", "--trial", "agent/s3/0"])):
        wall, rss, _ = measure(["gitevals", *argv], clone)
        print(f"{name}: {wall:.2f} CPU-s, {rss:.0f} MiB")
    new_pull = {}
    for label, ref in (("100 notes", "refs/notes/small"), ("all notes", "refs/notes/gitevals")):
        c = work / f"merge-{label.split()[0]}"
        fresh_clone(src, c, ref)
        new_pull[label] = merge_pull(c)
        print(f"notes pull, merge path, {label}: {new_pull[label][0]:.2f} CPU-s, "
              f"{new_pull[label][1]:.0f} MiB")
    if args.old_commits:
        compare(work, args, new_pull["100 notes"])


def compare(work: Path, args: argparse.Namespace, new_pull: tuple[float, float]) -> None:
    """The old form with the old code beside the new form with the new code, per commit."""
    old = work / "old-src"
    if not args.measure_only:
        old.mkdir()
        build_old(old, args.old_commits, args.trials)
    code = old_code(args.old_code, work)
    n = args.old_commits
    old_size = packed_notes(old)
    new_size = packed_notes(work / "src", "refs/notes/small")
    print(f"old notes packed: {old_size / n / 2**20:.2f} MiB a run; new "
          f"{new_size / 100 / 1024:.1f} KiB a run: {old_size / n / (new_size / 100):.0f}x smaller")
    clone = work / "old-clone"
    fresh_clone(old, clone, "refs/notes/gitevals", code)
    wall_old, _, _ = measure(["gitevals", "log", "--limit", str(n)], clone, code)
    wall_new, _, _ = measure(["gitevals", "log", "--limit", str(n)], work / "clone")
    print(f"log --limit {n}: old {wall_old:.2f} CPU-s, new {wall_new:.2f} CPU-s "
          f"({wall_old / wall_new:.1f}x)")
    merged = work / "old-merge"
    fresh_clone(old, merged, "refs/notes/gitevals", code)
    wall, rss = merge_pull(merged, code)
    print(f"notes pull, merge path, {n} old notes with the old code: {wall:.2f} CPU-s, "
          f"{rss:.0f} MiB (new, 100 notes: {new_pull[0]:.2f} CPU-s, {new_pull[1]:.0f} MiB)")


if __name__ == "__main__":
    main()
