"""A task's image realized by a real container engine (issue 23, item 12), through the
real CLI: its Dockerfile is built, its root exported and unpacked, and that root is the
system of the verifier's sandbox and of the target's (``[agent] sandbox = true``).

The base image is made here from this machine's ``dash`` and the libraries it loads
(``ENGINE import``): nothing is pulled, no network is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitevals.run.artifact import load as load_artifact
from gitevals.tasks.image import ENGINES, Engine, engine_named
from tests.conftest import Repo, run_cli

pytestmark = [pytest.mark.needs_container, pytest.mark.needs_bwrap]

BASE = "localhost/gitevals-test-dash:1"
#: In the image there is only dash: the agent notes whether it sees the image's marker.
AGENT = """\
while read -r line; do
  if [ -f /etc/gitevals-marker ]; then echo in-image > /app/seen; fi
  echo '{"final_answer": "done", "tool_calls": [], "hooks": [], "error": null}'
done
"""
#: The oracle solves it only on the image's system.
SOLVE = "if [ -f /etc/gitevals-marker ]; then echo in-image > /app/seen; fi\n"
CHECK = """\
read -r seen < /app/seen
if [ -f /etc/gitevals-marker ] && [ "$seen" = in-image ] && [ ! -e /usr/bin/python3 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def _dash_root(out: Path) -> None:
    """A tar of a root holding dash (as /bin/sh), bash and the libraries they load."""
    dash = os.path.realpath(shutil.which("dash") or "/bin/dash")
    bash = os.path.realpath(shutil.which("bash") or "/bin/bash")
    libs = {w for exe in (dash, bash)
            for ln in subprocess.run(["ldd", exe], capture_output=True, text=True,
                                     check=True).stdout.splitlines()
            for w in ln.split() if w.startswith("/")}
    with tarfile.open(out, "w") as tar:
        for path in (dash, bash, *sorted(libs)):
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
            if os.path.realpath(path) != path:
                tar.add(os.path.realpath(path), arcname=os.path.realpath(path).lstrip("/"))
        for name, target in (("bin/sh", dash), ("usr/bin/sh", dash), ("bin/bash", bash),
                             ("usr/bin/bash", bash)):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            if not any(m.name == name for m in tar.getmembers()):
                tar.addfile(info)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Engine]:
    # the engine collection found, by name: the run, given that name, asks no info again
    found = next((e for name in ENGINES if (e := engine_named(name)) is not None), None)
    assert found is not None
    monkeypatch.setenv("GITEVALS_CONTAINER_ENGINE", found.name)
    # the verifier runs as nobody when gitevals is root: the cache must let it through
    cache = Path(tempfile.mkdtemp(prefix="gitevals-images-", dir="/tmp"))
    cache.chmod(0o711)
    monkeypatch.setenv("GITEVALS_IMAGE_CACHE", str(cache))
    _dash_root(tmp_path / "base.tar")
    subprocess.run([found.path, "import", str(tmp_path / "base.tar"), BASE],
                   capture_output=True, check=True, timeout=300)
    yield found
    shutil.rmtree(cache, ignore_errors=True)
    made = subprocess.run([found.path, "images", "--format", "{{.Repository}}:{{.Tag}}"],
                          capture_output=True, text=True, check=False).stdout.split()
    for tag in [t for t in made if "gitevals-task-imaged" in t] + [BASE]:
        subprocess.run([found.path, "rmi", "--force", tag], capture_output=True, check=False)


def test_a_built_image_is_the_system_of_the_verifier_and_the_target(
        repo: Repo, engine: Engine) -> None:
    base = "evals/tasks/imaged"
    repo.commit({"agent.sh": AGENT, "evals/.gitignore": "results/\n",
                 "pyproject.toml": '[tool.gitevals.target]\ncommand = ["/bin/sh", "agent.sh"]\n',
                 f"{base}/task.toml": ('[agent]\nsandbox = true\n[verifier]\n'
                                       'command = ["/bin/sh", "/tests/test.sh"]\n'),
                 f"{base}/instruction.md": "Look around.\n", f"{base}/tests/test.sh": CHECK,
                 f"{base}/environment/Dockerfile": (f"FROM {BASE}\n"
                                                    "COPY marker.txt /etc/gitevals-marker\n"),
                 f"{base}/environment/marker.txt": "built\n",
                 f"{base}/solution/solve.sh": SOLVE})
    res = run_cli("run", cwd=repo.path)
    (path,) = (repo.path / "evals" / "results").glob("*.json")
    (entry,) = load_artifact(path)["cases"]
    (trial,) = entry["scenarios"][0]["results"]
    assert res.code == 0 and trial["passed"] is True, (trial["error"], res.err)
    assert "not realized" not in res.err  # the engine builds it: no image_build gap
    info = entry["task"]
    assert info["gaps"] == [] and info["agent_sandbox"] is True
    image = dict(info["image"])
    assert image["engine"] == engine.name and image["built"] is True
    assert image["ref"].startswith("gitevals-task-imaged:") and image["id"].startswith("sha256:")
    root = Path(image["root"])
    assert (root / "etc/gitevals-marker").read_text() == "built\n"
    assert root.parent.name == "sha256-" + image["id"][7:]  # cached by the image id
    # the validity controls run there too: the oracle passes only on the image's system
    check = run_cli("task", "check", "imaged", cwd=repo.path)
    assert check.code == 0 and check.out.endswith("task imaged: valid\n"), check.out + check.err

    # a second run finds the unpacked root again; a Dockerfile that does not build is
    # the trial's image_error, never a run on the host's system
    stamp = (root.parent / "gitevals-image.json").stat().st_mtime_ns
    repo.commit({f"{base}/environment/Dockerfile": "FROM localhost/gitevals-no-such:0\n"})
    again = run_cli("run", cwd=repo.path)
    newest = max((repo.path / "evals" / "results").glob("*.json"), key=os.path.getmtime)
    (entry,) = load_artifact(newest)["cases"]
    (trial,) = entry["scenarios"][0]["results"]
    assert again.code != 0 and trial["error"]["kind"] == "image_error", trial["error"]
    assert trial["error"]["message"].startswith(
        f"the task's image could not be realized: {engine.name} build failed")
    assert "image" not in entry["task"] and entry["task"]["gaps"] == ["image_build"]
    assert (root.parent / "gitevals-image.json").stat().st_mtime_ns == stamp
    assert json.loads((root.parent / "gitevals-image.json").read_text())["ref"] == image["ref"]
