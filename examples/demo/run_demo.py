"""The README's main job on the bundled example, end to end.

Builds a throwaway git repo from ``v1/`` (a tiny deterministic agent and its eval
tree), then: lint -> publish-check -> run pinned to the v1 commit -> show; then v2
(``v2/`` changes the goldens, and the agent's VERBOSE switch is flipped: wordier
answers) -> run pinned to v2 -> diff v1 v2.
Every step is the real ``gitevals`` CLI; each command is printed before it runs.

    python examples/demo/run_demo.py [--keep DIR]

Exit 0 when every step behaved as the demo expects (including ``diff`` refusing
the regression with exit 1), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "gitevals demo",
    "GIT_AUTHOR_EMAIL": "demo@gitevals.invalid",
    "GIT_COMMITTER_NAME": "gitevals demo",
    "GIT_COMMITTER_EMAIL": "demo@gitevals.invalid",
}
# (command, exit code the demo expects, why)
STEPS_V1 = [
    (["lint"], 0, "every case, grader reference and golden of the working tree is valid"),
    (["publish-check", "v1"], 0, "the v1 tag would evaluate: it may be published"),
    (["run", "--rev", "v1"], 1, "v1 has a flaky and a failing scenario, so the run exits 1"),
    (["show", "v1"], 1, "the verdicts pinned to v1, read back from the artifact (1: not all pass)"),
]
STEPS_V2 = [
    (["run", "--rev", "v2"], 1, "v2's wordier answers fail answers-in-one-line"),
    (["diff", "v1", "v2"], 1, "a scenario regressed beyond trial noise: diff refuses (exit 1)"),
]


def gitevals(args: list[str], cwd: Path, env: dict[str, str]) -> int:
    # Shown as a user types it; run with this interpreter's gitevals.
    print(f"\n$ {shlex.join(['gitevals', *args])}", flush=True)
    return subprocess.run([sys.executable, "-m", "gitevals", *args], cwd=cwd, env=env).returncode


def git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)


def make_v2_harness(repo: Path) -> None:
    """v2 of the agent is v1 with one switch flipped: wordier answers."""
    harness = repo / "harness.py"
    text = harness.read_text()
    v1_line = "VERBOSE = False  # v2 of the demo flips this and regresses a scenario"
    assert v1_line in text, "examples/demo/v1/harness.py lost its VERBOSE switch"
    harness.write_text(text.replace(v1_line, "VERBOSE = True  # v2: longer answers"))


def commit_version(repo: Path, env: dict[str, str], version: str) -> None:
    shutil.copytree(HERE / version, repo, dirs_exist_ok=True)
    if version == "v2":
        make_v2_harness(repo)
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", f"demo agent {version}")
    git(repo, env, "tag", version)
    print(f"\n# committed and tagged {version}", flush=True)


def run_steps(steps: list[tuple[list[str], int, str]], repo: Path, env: dict[str, str]) -> bool:
    ok = True
    for args, expected, why in steps:
        code = gitevals(args, repo, env)
        mark = "as expected" if code == expected else f"UNEXPECTED (wanted {expected})"
        print(f"# exit {code}: {mark} -- {why}", flush=True)
        ok = ok and code == expected
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the demo repo here and keep it")
    args = parser.parse_args()
    env = {**os.environ, **GIT_ENV}
    probe = subprocess.run([sys.executable, "-c", "import gitevals"], capture_output=True,
                           cwd=tempfile.gettempdir())  # not this clone: it is on sys.path here
    if probe.returncode != 0:
        print(f"demo: gitevals is not installed for {sys.executable}: run "
              "`pip install -e .` in the gitevals clone first (README, quick start)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gitevals-demo-") as tmp:
        repo = (args.keep or Path(tmp) / "demo-agent").resolve()
        if repo.exists() and any(repo.iterdir()):
            print(f"demo: {repo} is not empty; name an empty or new directory", file=sys.stderr)
            return 2
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, env, "init", "-q", "-b", "main")
        print(f"# demo repo: {repo} (every command below runs there)")
        commit_version(repo, env, "v1")
        ok = run_steps(STEPS_V1, repo, env)
        commit_version(repo, env, "v2")
        ok = run_steps(STEPS_V2, repo, env) and ok
    print("\ndemo: every step behaved as expected" if ok else "\ndemo: some step surprised us")
    if args.keep is None:
        print("(the demo repo was temporary; pass --keep DIR to look around in it afterwards)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
