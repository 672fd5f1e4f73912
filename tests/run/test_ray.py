"""``run --executor ray`` on a real two-node Ray cluster on 127.0.0.1 (tests/support/raycluster.py).

One cluster per test session (per xdist worker), shared by these tests; nodes are
stopped by their recorded pids. The node-death test adds a node of its own and kills
that one, so the shared nodes stay up for the others.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitevals.run.artifact import load
from tests.conftest import GIT_ENV, Repo, run_cli
from tests.support.paths import PROJECT
from tests.support.raycluster import DRIVER_ENV, LocalCluster, free_port

# one worker runs them all (pyproject's --dist loadfile, or --dist loadgroup by the group
# mark: the module's tests run one after another), so the module's one cluster serves
# them, and stops when they are done: an idle cluster's ~15 daemons burned ~5 CPU-s a
# minute through the rest of the suite
pytestmark = [pytest.mark.needs_ray, pytest.mark.xdist_group("ray")]

DEMO = PROJECT / "examples" / "demo" / "v1"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # Not under pytest's temp root, which lets only its owner through: as on a real node,
    # a task's sandboxed verifier (uid 65534 when run as root) must reach the workspaces
    # under the nodes' TMPDIR, so the cluster's root is traversable.
    root = Path(tempfile.mkdtemp(prefix="ge-ray-cluster-"))
    os.chmod(root, 0o711)
    c = LocalCluster(root)
    try:
        yield c.start(workers=1)
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)


def _ray_env(c: LocalCluster, repo: Path) -> dict[str, str]:
    """The driver's environment: the loopback address kept, this checkout importable."""
    return {**DRIVER_ENV, "PYTHONPATH": str(PROJECT)}


def _comparable(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every trial and verdict of a run, field by field, timings and placement aside."""
    out = []
    for c in run["cases"]:
        for s in c["scenarios"]:
            for r in s["results"]:
                r = {k: v for k, v in r.items() if k != "placement"}
                r["transcript"] = {k: v for k, v in r["transcript"].items()
                                   if k != "duration_ms"}
                r["graders"] = [{k: v for k, v in g.items() if k != "duration_ms"}
                                for g in r["graders"]]
                out.append((c["name"], s["id"], json.dumps(r, sort_keys=True)))
            out.append((c["name"], s["id"], json.dumps(s["verdict"], sort_keys=True)))
    return out


def test_the_demo_gives_the_same_verdicts_on_the_cluster(cluster: LocalCluster,
                                                         repo: Repo) -> None:
    shutil.copytree(DEMO, repo.path, dirs_exist_ok=True)
    repo.commit(msg="demo v1")
    local = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    env = _ray_env(cluster, repo.path)
    on_ray = run_cli("run", "--no-note", "--format", "json", "--executor", "ray",
                     "--ray-address", cluster.address, cwd=repo.path, env=env)
    graded_there = run_cli("run", "--no-note", "--format", "json", "--ray-address",
                           cluster.address, "--graders-on-workers", cwd=repo.path, env=env)
    assert local.code == on_ray.code == graded_there.code == 1, on_ray.err + graded_there.err
    runs = [json.loads(r.out) for r in (local, on_ray, graded_there)]  # stdout: JSON alone
    assert _comparable(runs[1]) == _comparable(runs[0])
    assert _comparable(runs[2]) == _comparable(runs[0])
    assert runs[0]["executor"] == {"kind": "local", "address": None, "nodes": []}
    assert runs[1]["executor"]["kind"] == "ray"
    assert runs[1]["executor"]["address"] == cluster.address
    placements = [r["placement"] for c in runs[1]["cases"] for s in c["scenarios"]
                  for r in s["results"]]
    assert all(p["attempts"] == 1 and p["lost"] == [] for p in placements)
    # both nodes served conversations, and the run says so
    assert {p["node"] for p in placements} == set(runs[1]["executor"]["nodes"])
    assert len(runs[1]["executor"]["nodes"]) == 2
    # the tree came through the object store, unpacked once into each node's cache
    for node in cluster.nodes[:2]:
        assert (node.cache / "gitevals" / "ray-trees" / runs[1]["tree"] / ".complete").is_file()


SLOW_HARNESS = """\
import json, os, sys, time
with open({marks!r}, "a") as f:
    f.write(f"{{os.getpid()}} {{os.getcwd()}}\\n")
# A target whose work copy is under `held` waits before each answer until the release
# file exists, at most `hold` seconds from its start; the others answer at once.
held = {held!r} in os.getcwd()
until = time.monotonic() + {hold}
for line in sys.stdin:
    while held and time.monotonic() < until and not os.path.exists({release!r}):
        time.sleep(0.02)
    print(json.dumps({{"final_answer": "ok"}}), flush=True)
"""


def _slow_repo(repo: Repo, marks: Path, trials: int, hold: float = 0.0, held: str = "",
               release: Path | None = None) -> None:
    """A two-turn case whose targets hold (see SLOW_HARNESS): the tests wait for events
    (a target started, a node took work), not for fixed turn lengths."""
    repo.commit({
        "harness.py": SLOW_HARNESS.format(marks=str(marks), hold=hold, held=held,
                                          release=str(release or marks.with_name("never"))),
        "pyproject.toml": f'[tool.gitevals.target]\ncommand = ["{sys.executable}", '
                          '"harness.py"]\n',
        "evals/cases/slow.yaml": f"defaults: {{trials: {trials}, timeout: 60s}}\nscenarios:\n"
                                 "  - id: waits\n    user: [one, two]\n"
                                 "    expect: [{final_answer_contains: ok}]\n",
    })


def _marks(path: Path) -> list[tuple[int, str]]:
    if not path.exists():
        return []
    return [(int(p), cwd) for p, _, cwd in
            (line.partition(" ") for line in path.read_text().splitlines() if line)]


def _wait(predicate: Any, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _popen_run(repo: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gitevals", "run", "--no-note", *args],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **GIT_ENV, **env})


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_node_killed_mid_run_loses_no_trial(cluster: LocalCluster, repo: Repo,
                                              tmp_path: Path) -> None:
    doomed = cluster.add_worker()
    marks = tmp_path / "marks"
    # the targets on the doomed node hold until it dies (50 s at most, under the case's
    # 60 s timeout), so conversations are in flight there when it is killed; the others
    # answer at once
    _slow_repo(repo, marks, trials=12, hold=50, held=str(doomed.cache))
    proc = _popen_run(repo.path, "--format", "json", "--jobs", "6", "--ray-address",
                      cluster.address, env=_ray_env(cluster, repo.path))
    try:
        # the doomed node has conversations in flight (its targets run in its own tmp)
        on_doomed = _wait(lambda: any(str(doomed.cache) in cwd for _, cwd in _marks(marks)),
                          120)
        assert on_doomed, proc.stderr.read() if proc.poll() is not None else "no target there"
        cluster.kill(doomed)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 1), err
    run = json.loads(out)
    results = run["cases"][0]["scenarios"][0]["results"]
    assert sorted(r["trial"] for r in results) == list(range(12))  # every trial accounted for
    retried = [r for r in results if r["placement"]["lost"]]
    assert retried, "no conversation was on the killed node"
    for r in results:
        if r["error"] is None:  # retried elsewhere, or never on the killed node
            assert r["passed"] is True
            assert r["placement"]["attempts"] == len(r["placement"]["lost"]) + 1
        else:  # ran out of nodes: an infrastructure error, never a verdict
            assert r["error"]["kind"] == "node_lost"
    assert all(p not in r["placement"]["node"] for r in retried
               for p in r["placement"]["lost"])
    saved = list((repo.path / "evals" / "results").glob("*.json"))
    assert len(saved) == 1
    load(saved[0])  # valid against the schema


ACTIVE_HOSTS = """\
import json, ray
ray.init(address={address!r}, log_to_driver=False, logging_level="ERROR", namespace="gitevals")
alive = []
for a in ray.util.list_named_actors(all_namespaces=True):
    if a["namespace"] == "gitevals":
        try:
            alive.append(ray.get(ray.get_actor(a["name"]).active.remote(), timeout=30))
        except ray.exceptions.RayActorError:
            pass  # the host of a node killed by an earlier test
print(json.dumps(alive))
"""


def test_sigint_on_the_driver_writes_the_interrupted_run_and_stops_the_cluster_work(
        cluster: LocalCluster, repo: Repo, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    # every target holds (50 s): a target the interrupt failed to stop outlives the check
    _slow_repo(repo, marks, trials=12, hold=50)
    env = _ray_env(cluster, repo.path)
    proc = _popen_run(repo.path, "--format", "json", "--jobs", "4", "--ray-address",
                      cluster.address, env=env)
    try:
        assert _wait(lambda: len(_marks(marks)) >= 3, 120), "targets never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    run = json.loads(out)
    assert run["interrupted"] is True
    saved = list((repo.path / "evals" / "results").glob("*.json"))
    assert len(saved) == 1 and load(saved[0])["interrupted"] is True
    # every target the cluster started is gone, and no host of the run is left
    pids = [p for p, _ in _marks(marks)]
    assert _wait(lambda: not any(_alive(p) for p in pids), 15), [p for p in pids if _alive(p)]
    script = ACTIVE_HOSTS.format(address=cluster.address)
    left = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    assert left.returncode == 0, left.stderr
    hosts = json.loads(left.stdout.strip().splitlines()[-1])
    assert hosts and all(h == {} for h in hosts)  # warm hosts, with no run and no conversation


def test_an_unreachable_cluster_is_one_line_and_exit_2_before_anything_runs(
        repo: Repo, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    _slow_repo(repo, marks, trials=1)
    port = free_port()  # nothing listens there
    res = run_cli("run", "--ray-address", f"127.0.0.1:{port}", cwd=repo.path)
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        f"gitevals: error: no Ray cluster answers at 127.0.0.1:{port} (Connection refused): start "
        "one with `ray start --head` (docs/run.md), or pass its address with --ray-address"]
    assert not marks.exists()  # no target started
    assert not (repo.path / "evals" / "results").exists()


def test_the_executor_can_be_set_in_settings_and_flags_win(repo: Repo, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    _slow_repo(repo, marks, trials=1)
    port = free_port()
    with (repo.path / "pyproject.toml").open("a") as f:
        f.write(f'\n[tool.gitevals.executor]\nkind = "ray"\naddress = "127.0.0.1:{port}"\n')
    repo.commit(msg="run on the cluster")
    res = run_cli("run", "--no-note", cwd=repo.path)
    assert res.code == 2 and f"no Ray cluster answers at 127.0.0.1:{port}" in res.err
    res = run_cli("run", "--no-note", "--executor", "local", cwd=repo.path)
    assert res.code == 0, res.err
    assert len(_marks(marks)) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--executor", "local", "--ray-address", "127.0.0.1:1"],
     "gitevals: error: --ray-address is for --executor ray: drop it, or add --executor ray"),
    (["--graders-on-workers"],
     "gitevals: error: --graders-on-workers needs --executor ray: drop it, or run on a cluster"),
    (["--ray-address", "nowhere"],
     "gitevals: error: --ray-address 'nowhere' is not host:port (e.g. 127.0.0.1:6379, the address "
     "`ray start --head` printed)"),
], ids=["address-without-ray", "graders-on-workers-locally", "not-host-port"])
def test_bad_executor_flags_are_one_line(repo: Repo, tmp_path: Path, args: list[str],
                                         message: str) -> None:
    _slow_repo(repo, tmp_path / "marks", trials=1)
    res = run_cli("run", *args, cwd=repo.path)
    assert (res.code, res.err.strip()) == (2, message)


SIZED = """\
import json, sys
from gitevals.run.executors import RunShared
from gitevals.run.ray_executor import RayExecutor
from tests.support.raycluster import SizedProbe

executor = RayExecutor(sys.argv[1])
executor.connect()
try:
    executor.start(sys.argv[2], "0" * 40, RunShared(None, 2, 30.0))
    result, placement = executor.submit(SizedProbe(0.5, 64))
finally:
    executor.close()
print(json.dumps({"result": result, "placement": placement}))
"""


def test_resource_hints_become_ray_resource_requests(cluster: LocalCluster,
                                                     tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "harness.py").write_text("print('hi')\n")
    proc = subprocess.run([sys.executable, "-c", SIZED, cluster.address, str(tree)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **_ray_env(cluster, tree)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["result"] == {"assigned": {"CPU": 0.5, "memory": 64 * 1024 * 1024},
                             "harness": True}
    assert out["placement"]["attempts"] == 1 and out["placement"]["lost"] == []


def test_a_node_unpacks_a_tree_once_and_refuses_paths_out_of_it(tmp_path: Path) -> None:
    import io
    import tarfile

    from gitevals.run.ray_executor import pack_tree, unpack_cached

    tree = tmp_path / "tree"
    (tree / "evals").mkdir(parents=True)
    (tree / "evals" / "a.txt").write_text("a")
    (tree / "link").symlink_to("evals/a.txt")
    cache = tmp_path / "cache"
    first = unpack_cached(pack_tree(str(tree)), "ab" * 20, cache)
    assert (first / "evals" / "a.txt").read_text() == "a"
    assert os.readlink(first / "link") == "evals/a.txt"
    (first / "evals" / "a.txt").write_text("kept")
    assert unpack_cached(b"not a tar", "ab" * 20, cache) == first  # not unpacked again
    assert (first / "evals" / "a.txt").read_text() == "kept"
    hostile = io.BytesIO()
    with tarfile.open(fileobj=hostile, mode="w") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack_cached(hostile.getvalue(), "cd" * 20, cache)
    assert not (cache / "escaped").exists() and not (cache / ("cd" * 20)).exists()
    assert [p.name for p in cache.iterdir()] == ["ab" * 20]  # no scratch left behind


def test_placement_and_executor_records_match_the_schema() -> None:
    from gitevals.run.artifact import ExecutorRecord, Placement
    from gitevals.validation import schema_path

    schema = json.loads(schema_path("result").read_text())
    placement = schema["$defs"]["result"]["properties"]["placement"]
    executor = schema["properties"]["executor"]
    for model, part in ((Placement, placement), (ExecutorRecord, executor)):
        assert model.__required_keys__ == frozenset(part["required"])
        assert model.__required_keys__ | model.__optional_keys__ == set(part["properties"])


def test_a_ray_without_a_call_gitevals_makes_is_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the driver calls of Ray is checked when Ray is imported (``_is_ray``): a Ray
    lacking one of its calls or error classes is a usage error before anything runs,
    not an AttributeError in the middle of a run."""
    import types

    from gitevals.errors import UsageError
    from gitevals.run.executors import RunShared
    from gitevals.run.ray_executor import RayExecutor

    fake = types.ModuleType("ray")
    fake.__dict__.update(__version__="0.1", init=print, nodes=list, put=id, get=id, wait=id,
                         cancel=id, shutdown=print, remote=id,
                         exceptions=types.SimpleNamespace(RayError=Exception))
    monkeypatch.setitem(sys.modules, "ray", fake)
    executor = RayExecutor(None)
    executor.connect()
    try:
        with pytest.raises(UsageError) as got:
            executor.start(str(tmp_path), "0" * 40, RunShared(None, 2, 30.0))
    finally:
        executor.close()
    assert str(got.value) == ("Ray 0.1 lacks calls gitevals makes: pip install 'gitevals[ray]' "
                              "for a Ray it knows (on the driver and on every node of the "
                              "cluster)")
    assert executor.ray is None  # it never joined: nothing of the run started


def test_a_conversation_with_no_node_left_is_broken_never_dropped(tmp_path: Path) -> None:
    """The driver's side of the last retry: every node of the run is gone (no cluster
    needed: the executor has no live host), so each conversation is a ``node_lost``
    error of its trials, the scenarios are broken, and the run is still a valid one."""
    import time as clock

    from gitevals import api
    from gitevals.git.trees import WorkingTree
    from gitevals.run import runner
    from gitevals.run.artifact import checked
    from gitevals.run.build import ArtifactParts, build_artifact
    from gitevals.run.ray_executor import RayExecutor

    (tmp_path / "evals" / "cases").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.gitevals.target]\ncommand = ["true"]\n')
    (tmp_path / "evals" / "cases" / "c.yaml").write_text(
        "defaults: {trials: 3}\nscenarios:\n  - id: a\n    user: hi\n"
        "    expect: [{no_error: true}]\n  - id: b\n    user: [x, y]\n    trials: 1\n"
        "    expect: [{no_error: true}]\n")
    the_plan = api.plan(WorkingTree(tmp_path), [])
    execution = runner.Execution(the_plan, str(tmp_path), 2, executor=RayExecutor(None))
    execution.run()
    prov = runner.Provenance("HEAD", "a" * 40, "b" * 40)
    run = checked(build_artifact(ArtifactParts(prov, the_plan, execution, [], 2, clock.time(),
                                               clock.time(), lambda run: {})), "built")
    scenarios = run["cases"][0]["scenarios"]
    assert [len(s["results"]) for s in scenarios] == [3, 1]  # every trial accounted for
    assert [s["verdict"]["verdict"] for s in scenarios] == ["broken", "broken"]
    for s in scenarios:
        for r in s["results"]:
            assert r["error"] == {"kind": "node_lost", "message": "no node of the Ray "
                                  "cluster was left to run this conversation"}
            assert r["placement"] == {"node": "", "attempts": 0, "lost": []}
    assert run["executor"] == {"kind": "ray", "address": None, "nodes": []}


def test_a_task_trial_runs_on_the_cluster_in_bubblewrap(cluster: LocalCluster,
                                                        repo: Repo) -> None:
    """A task trial (its conversation and every verifier call) is a job on some node,
    sandboxed there as on this machine; the verdict and rewards are the local run's."""
    from tests.support.tasks import commit_task

    commit_task(repo, "0.4\n1.0\n")
    local = run_cli("run", "--no-note", "--format", "json", cwd=repo.path)
    on_ray = run_cli("run", "--no-note", "--format", "json", "--ray-address", cluster.address,
                     cwd=repo.path, env=_ray_env(cluster, repo.path))
    assert local.code == on_ray.code == 0, on_ray.err
    trials = [json.loads(r.out)["cases"][0]["scenarios"][0]["results"][0]
              for r in (local, on_ray)]
    for t in trials:
        assert t["task"]["state"] == "satisfied" and t["task"]["sandbox"] == "bwrap"
        assert [i["reward"] for i in t["task"]["iterations"]] == [0.4, 1.0]
    assert "placement" not in trials[0]
    assert trials[1]["placement"]["attempts"] == 1 and trials[1]["placement"]["node"]


def test_a_sequential_run_on_the_cluster_stops_as_the_local_one(cluster: LocalCluster,
                                                                repo: Repo) -> None:
    """``run --against`` on Ray: the driver decides each round and every node runs only
    the scenarios still going, so the looks and trials are the local run's."""
    from tests.support.sequential import CASE, HARNESS, SETTINGS

    files = {"harness.py": HARNESS, "pyproject.toml": SETTINGS, "evals/cases/geo.yaml": CASE}
    a = repo.commit({**files, "rates.json": json.dumps(
        {"stable": 1.0, "dropped": 1.0, "uncertain": 0.7})}, "A")
    assert run_cli("run", "--jobs", "8", cwd=repo.path, timeout=300).code == 1
    repo.commit({"rates.json": json.dumps(
        {"stable": 1.0, "dropped": 0.3, "uncertain": 0.6})}, "B")
    runs = []
    for extra in ([], ["--ray-address", cluster.address]):
        r = run_cli("run", "--no-note", "--against", a, "--format", "json", "--jobs", "8",
                    *extra, cwd=repo.path, timeout=300, env=_ray_env(cluster, repo.path))
        assert r.code == 1, r.err  # B has failing trials
        runs.append(json.loads(r.out))
    local, on_ray = ({s["id"]: (len(s["results"]), s["sequential"])
                      for s in run["cases"][0]["scenarios"]} for run in runs)
    assert on_ray == local
    assert on_ray["dropped"][1]["stopped"] == "regressed" and on_ray["dropped"][0] == 16
    assert on_ray["stable"][1]["stopped"] == "ruled_out"
    assert all("placement" in t for s in runs[1]["cases"][0]["scenarios"]
               for t in s["results"])
    assert runs[1]["sequential"]["against"] == a


def test_a_node_that_joins_during_a_run_takes_work(cluster: LocalCluster, repo: Repo,
                                                   tmp_path: Path) -> None:
    marks, release = tmp_path / "marks", tmp_path / "release"
    # Until the joined node takes work every conversation holds 3 s, 4 at a time, so the
    # 100 trials outlast a node's start (75 s); then the rest answer at once.
    _slow_repo(repo, marks, trials=100, hold=3, release=release)
    proc = _popen_run(repo.path, "--format", "json", "--jobs", "4", "--ray-address",
                      cluster.address,
                      env={**_ray_env(cluster, repo.path), "GITEVALS_RAY_WATCH": "0.5"})
    try:
        assert _wait(lambda: bool(_marks(marks)), 120), "the run never started a target"
        joined = cluster.add_worker()  # after the run started: unknown to it at its start
        on_joined = _wait(lambda: any(str(joined.cache) in cwd for _, cwd in _marks(marks)),
                          120)
        assert on_joined, proc.stderr.read() if proc.poll() is not None else "no work there"
        release.touch()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    run = json.loads(out)
    results = run["cases"][0]["scenarios"][0]["results"]
    assert sorted(r["trial"] for r in results) == list(range(100))
    assert all(r["passed"] for r in results)
    used = {r["placement"]["node"] for r in results}
    assert used == set(run["executor"]["nodes"]) and len(used) >= 3
