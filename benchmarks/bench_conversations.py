"""Conversations as their own trials (issue 27), in CPU seconds of the whole process tree.

1. 1,000 one-scenario cases against a trivial ``python`` target, ``--jobs 2``.
   Target: <= 15 CPU-s.
2. 200 one-scenario cases against a ``python`` target whose import burns 0.3 s of CPU.
   Target: <= 10 CPU-s.
3. ``--start``: the CPU and the wall time of a one-sample run and of the one-file commit
   hook (``lint --staged``), each beside ``python -c "import pygit2, yaml"``. Targets:
   one-sample run <= 0.35 s of wall time on a quiet machine; hook <= 1.3x the imports'
   CPU.
4. ``--rss``: the resident memory of gitevals' own processes (the run, its supervisor,
   the conversations' holders) while 64 conversations wait on their targets at
   ``--jobs 64``, the targets left out: the sum of each process's RSS (the target: under
   150 MB), and of its PSS beside it.
5. ``--peers``: the 1,000 samples of (1) side by side with Inspect AI (``mockllm``) and
   promptfoo (``echo`` provider), interleaved rounds. Targets: gitevals <= 0.5x Inspect's
   CPU and <= 1.0x promptfoo's. Each tool does the same work: it runs every sample and
   keeps every sample's transcript on disk (gitevals in its run artifact, promptfoo in
   ``-o pf.json``, Inspect in its log with its default logging: samples logged, the
   default ``.eval`` format, a zip of JSON). The target is judged against that Inspect.
   Inspect with ``--no-log-samples`` (the log keeps only the header and the metrics, not
   one sample) is measured beside it and its ratio printed for transparency, not judged:
   the others do not get to skip their transcripts. The peers are installed by this
   script into its own environment under ``benchmarks/out/`` (a venv for inspect-ai, npm
   for promptfoo); a peer that cannot be installed is skipped with one line.

CPU is user + system time of every process the command started (``RUSAGE_CHILDREN``),
which stays stable on a loaded machine where wall time does not.

Usage: .venv/bin/python benchmarks/bench_conversations.py [--cases 1000] [--slow 200]
       [--peers] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
TRIVIAL = """\
def respond(messages):
    return {"final_answer": "ok " + messages[-1]["content"]}
"""
SLOW = """\
import time

_end = time.process_time() + 0.3
while time.process_time() < _end:  # an import that burns 0.3 s of CPU, as a framework does
    pass


def respond(messages):
    return {"final_answer": "ok " + messages[-1]["content"]}
"""
CASE = ("scenarios:\n  - id: s\n    user: sample {n}\n    timeout: 60s\n"
        "    expect: [{{final_answer_contains: ok}}]\n")


def make_repo(root: Path, cases: int, agent: str) -> Path:
    """A committed repo of ``cases`` one-scenario cases against ``agent.py:respond``."""
    repo = root / f"repo-{cases}-{len(agent)}"
    (repo / "evals" / "cases").mkdir(parents=True)
    (repo / "agent.py").write_text(agent)
    (repo / "pyproject.toml").write_text('[tool.gitevals.target]\npython = "agent:respond"\n')
    for n in range(cases):
        (repo / "evals" / "cases" / f"c{n:05d}.yaml").write_text(CASE.format(n=n))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=ENV)
    return repo


def cpu_of(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
           ok: tuple[int, ...] = (0,)) -> float:
    """User + system CPU seconds of ``cmd`` and everything it started."""
    return cost_of(cmd, cwd, env, ok)[0]


def cost_of(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
            ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(CPU seconds of ``cmd`` and everything it started, wall seconds until it exited)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-800:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def gitevals_run(repo: Path, jobs: int = 2) -> float:
    return cpu_of([sys.executable, "-m", "gitevals", "run", "--jobs", str(jobs), "--no-note",
                   "--format", "json"], repo)


def verdict(label: str, value: float, bound: float, unit: str = " CPU-s") -> bool:
    ok = value <= bound
    print(f"{label}: {value:.2f}{unit} (target <= {bound:g}{unit}) {'OK' if ok else 'FAIL'}")
    return ok


# --- peers ------------------------------------------------------------------------------

INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def answers():
    # Each answer carries its usage, as an API's does. Without it mockllm counts the
    # tokens itself with tiktoken, whose o200k_base file it downloads: offline, the first
    # samples fail and the eval ends in an error after a few dozen of the samples.
    while True:
        out = ModelOutput.from_content(model="mockllm", content="Default output from mockllm/model")
        out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
        yield out


@task
def bench():
    return Task(dataset=[Sample(input=f"sample {{n}}", target="") for n in range({n})],
                solver=generate(), scorer=includes(),
                model=get_model("mockllm/model", custom_outputs=answers()))
"""
PROMPTFOO = """\
prompts: ["{{{{q}}}}"]
providers: [echo]
tests:
{tests}
"""


def inspect_env() -> Path | None:
    """A venv under benchmarks/out with inspect-ai, made once; None (said) when it fails."""
    venv = OUT / "inspect-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True)
        if made.returncode != 0:
            print("inspect-ai: skipped: cannot create a venv under benchmarks/out")
            return None
    check = subprocess.run([str(py), "-c", "import inspect_ai"], capture_output=True)
    if check.returncode != 0:
        got = subprocess.run([str(py), "-m", "pip", "install", "-q", "inspect-ai"],
                             capture_output=True, text=True)
        if got.returncode != 0:
            print(f"inspect-ai: skipped: pip install failed: {got.stderr.strip()[-200:]}")
            return None
    return py


def promptfoo_bin() -> Path | None:
    """promptfoo installed with npm under benchmarks/out, once; None (said) when it fails."""
    if shutil.which("npm") is None:
        print("promptfoo: skipped: npm is not installed")
        return None
    prefix = OUT / "promptfoo"
    exe = prefix / "node_modules" / ".bin" / "promptfoo"
    if not exe.exists():
        got = subprocess.run(["npm", "install", "--prefix", str(prefix), "promptfoo"],
                             capture_output=True, text=True)
        if got.returncode != 0 or not exe.exists():
            print(f"promptfoo: skipped: npm install failed: {got.stderr.strip()[-200:]}")
            return None
    return exe


def peers(root: Path, repo: Path, cases: int, rounds: int) -> bool:
    OUT.mkdir(exist_ok=True)
    inspect_py, promptfoo = inspect_env(), promptfoo_bin()
    task = root / "inspect_bench.py"  # named relative to ``root``: Inspect refuses absolute globs
    task.write_text(INSPECT_TASK.format(n=cases))
    config = root / "promptfooconfig.yaml"
    config.write_text(PROMPTFOO.format(tests="\n".join(
        f"  - vars: {{q: 'sample {n}'}}\n    assert: [{{type: contains, value: sample}}]"
        for n in range(cases))))
    env = {**ENV, "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_CONFIG_DIR": str(root / "promptfoo-home"), "NO_COLOR": "1"}
    inspect = [str(inspect_py), "-m", "inspect_ai", "eval", task.name, "--model",
               "mockllm/model", "--display", "none"] if inspect_py is not None else []
    runs: dict[str, tuple[list[str], tuple[int, ...], dict[str, str]]] = {
        "gitevals": ([], (0,), env)}
    if inspect:
        # Inspect's defaults log every sample (``log_samples`` defaults to True) into an
        # ``.eval`` file: the same work as gitevals' artifact and promptfoo's pf.json.
        # ``--no-log-samples`` drops the samples from the log (header and metrics only);
        # measured for transparency, never the judged row.
        runs["inspect"] = (inspect, (0,), {**env, "INSPECT_LOG_DIR": str(root / "logged")})
        runs["inspect --no-log-samples"] = ([*inspect, "--no-log-samples"], (0,),
                                            {**env, "INSPECT_LOG_DIR": str(root / "light")})
    if promptfoo is not None:
        runs["promptfoo"] = ([str(promptfoo), "eval", "-c", str(config), "--no-cache",
                              "--no-table", "--no-progress-bar", "-o", str(root / "pf.json")],
                             (0, 100), env)
    best: dict[str, float] = {}
    for _ in range(rounds):  # interleaved: the machine's load hits every tool alike
        for name, (cmd, ok_codes, its_env) in runs.items():
            cpu = (gitevals_run(repo) if name == "gitevals"
                   else cpu_of(cmd, root, its_env, ok_codes))
            best[name] = min(best.get(name, 1e9), cpu)
    if inspect_py is not None:
        logged = _inspect_logs(inspect_py, root / "logged")
        light = _inspect_logs(inspect_py, root / "light")
        print(f"Inspect's logs (.eval): default {logged}; --no-log-samples {light}")
        if not all(line.startswith(f"success {cases}/{cases}") for line in logged + light):
            print("inspect-ai: not compared: a run did not finish every sample (see its log)")
            best = {k: v for k, v in best.items() if not k.startswith("inspect")}
    print(f"{cases} samples x 1, CPU-s (best of {rounds}): " + ", ".join(
        f"{k} {v:.2f}" for k, v in best.items()))
    ok = True
    if "inspect" in best:
        ok = verdict("gitevals / Inspect AI (samples logged, as gitevals and promptfoo keep "
                     "theirs)", best["gitevals"] / best["inspect"], 0.5, "x") and ok
        light = best["gitevals"] / best["inspect --no-log-samples"]
        print(f"gitevals / Inspect AI --no-log-samples (no transcripts kept; not judged): "
              f"{light:.2f}x")
    if "promptfoo" in best:
        ok = verdict("gitevals / promptfoo", best["gitevals"] / best["promptfoo"], 1.0, "x") and ok
    return ok


def _inspect_logs(inspect_py: Path, log_dir: Path) -> list[str]:
    """Each Inspect log in ``log_dir`` as ``status completed/total, N samples kept``, read
    by Inspect itself (an ``.eval`` log is a zstd zip): the proof that each run did all the
    work, and what each configuration kept of it."""
    script = ("import sys\nfrom inspect_ai.log import read_eval_log\n"
              "for path in sys.argv[1:]:\n"
              "    log = read_eval_log(path)\n"
              "    r = log.results\n"
              "    print(f'{log.status} {r.completed_samples if r else 0}/"
              "{r.total_samples if r else 0}, {len(log.samples or [])} samples kept')\n")
    logs = [str(p) for p in sorted(log_dir.glob("*.eval"))]
    got = subprocess.run([str(inspect_py), "-c", script, *logs], capture_output=True, text=True)
    return got.stdout.strip().splitlines() if got.returncode == 0 else [got.stderr[-200:]]

WAITING = """\
import json, sys, time
for line in sys.stdin:
    time.sleep(20)  # an API call (long enough for all 64 to be in flight)
    print(json.dumps({"final_answer": "ok"}), flush=True)
"""


def _read_kib(path: str, key: str) -> int:
    try:
        with open(path) as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key))
    except (OSError, StopIteration):
        return 0


def _tree_rss(root: int) -> tuple[int, int, int, int]:
    """(KiB of RSS, KiB of PSS, count) summed over ``root`` and its descendants but the
    targets (``harness.py``) and what is beneath them, then how many targets there are.
    RSS counts a page shared by several processes in each of them (the C library of every
    holder); PSS divides it among them."""
    sys.path.insert(0, str(HERE.parent))
    from gitevals.run.reaper import descendants

    def cmdline(pid: int) -> bytes:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read()
        except OSError:
            return b""

    targets = {pid for pid in descendants(root) if b"harness.py" in cmdline(pid)}
    pids = [root, *descendants(root, skip=frozenset(targets))]
    rss = sum(_read_kib(f"/proc/{pid}/status", "VmRSS:") for pid in pids)
    pss = sum(_read_kib(f"/proc/{pid}/smaps_rollup", "Pss:") for pid in pids)
    return rss, pss, len(pids), len(targets)


def rss_at_64(root: Path) -> bool:
    import time

    repo = root / "rss"
    (repo / "evals" / "cases").mkdir(parents=True)
    (repo / "harness.py").write_text(WAITING)
    (repo / "pyproject.toml").write_text(
        f'[tool.gitevals.target]\ncommand = ["{sys.executable}", "harness.py"]\n')
    for n in range(64):
        (repo / "evals" / "cases" / f"c{n:02d}.yaml").write_text(CASE.format(n=n))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=ENV)
    proc = subprocess.Popen([sys.executable, "-m", "gitevals", "run", "--jobs", "64",
                             "--no-note", "--format", "json"], cwd=repo, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    best = (0, 0, 0, 0)
    while proc.poll() is None:  # the largest reading while all 64 targets wait
        time.sleep(0.25)
        if (reading := _tree_rss(proc.pid))[3] == 64:
            best = max(best, reading)
    proc.wait()
    if not best[3]:
        print("--jobs 64: the 64 conversations were never in flight at once (too loaded?)")
        return False
    print(f"--jobs 64: PSS of the same processes {best[1] / 1024:.1f} MB")
    return verdict(f"--jobs 64, 64 conversations waiting: RSS of gitevals' {best[2]} processes",
                   best[0] / 1024, 150.0, " MB")


def start(root: Path, rounds: int) -> bool:
    one = make_repo(root, 1, TRIVIAL)
    edited = root / "edited"
    shutil.copytree(one, edited, symlinks=True)
    staged = edited / "evals" / "cases" / "c00000.yaml"
    staged.write_text(staged.read_text() + "# edited\n")
    subprocess.run(["git", "add", "-A"], cwd=edited, check=True, env=ENV)
    imports = [sys.executable, "-c", "import pygit2, yaml"]
    run = [sys.executable, "-m", "gitevals", "run", "--no-note", "--format", "json"]
    hook = [sys.executable, "-m", "gitevals", "lint", "--staged", "evals/cases/c00000.yaml"]
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    for _ in range(rounds):  # interleaved; the best of each
        for name, cmd, where in (("imports", imports, one), ("run", run, one),
                                 ("hook", hook, edited)):
            spent, took = cost_of(cmd, where)
            cpu[name], wall[name] = min(cpu.get(name, 1e9), spent), min(wall.get(name, 1e9), took)
    for what, best in (("CPU-s", cpu), ("wall s", wall)):
        print(f"start, {what} (best of {rounds}): import pygit2, yaml {best['imports']:.3f}; "
              f"one-sample run {best['run']:.3f} ({best['run'] / best['imports']:.2f}x); "
              f"one-file hook {best['hook']:.3f} ({best['hook'] / best['imports']:.2f}x)")
    print(f"start: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (the wall "
          "target is for a quiet machine)")
    ok = verdict("one-sample run, wall", wall["run"], 0.35, " s")
    return verdict("one-file hook / import pygit2, yaml", cpu["hook"] / cpu["imports"],
                   1.3, "x") and ok

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--slow", type=int, default=200, help="cases of the slow-import row")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--peers", action="store_true", help="add Inspect AI and promptfoo")
    parser.add_argument("--start", action="store_true", help="add the start-up rows")
    parser.add_argument("--rss", action="store_true", help="add the --jobs 64 memory row")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "gitevals")],
                   check=True)
    with tempfile.TemporaryDirectory(prefix="gitevals-bench-") as tmp:
        root = Path(tmp)
        trivial = make_repo(root, args.cases, TRIVIAL)
        ok = verdict(f"{args.cases} cases, trivial python target, --jobs {args.jobs}",
                     gitevals_run(trivial, args.jobs), 15.0 * args.cases / 1000)
        if args.slow:
            slow = make_repo(root, args.slow, SLOW)
            ok = verdict(f"{args.slow} cases, python target importing for 0.3 CPU-s, "
                         f"--jobs {args.jobs}", gitevals_run(slow, args.jobs),
                         10.0 * args.slow / 200) and ok
        if args.start:
            ok = start(root, max(args.rounds, 3)) and ok
        if args.rss:
            ok = rss_at_64(root) and ok
        if args.peers:
            ok = peers(root, trivial, args.cases, args.rounds) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
