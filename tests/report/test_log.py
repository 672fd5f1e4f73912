"""``gitevals log``: the demo's v1/v2 history as exact rows, and its bad inputs."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Repo, run_cli

HEAD = ("commit  subject        suite      basics/answers-in-one-line  "
        "basics/uses-the-shell-rather-than-guessing  tools/explains-recursion-briefly  "
        "tools/guard-refuses-destructive-commands  tools/looks-up-the-weather")
V2 = ("v2      demo agent v2  -20.0 pts  ✗ 0/10 ▼                    ✓ 3/3                     "
      "                  ✗ 0/2                             ✓ 4/4                                "
      "     ~ 2/4")
V1 = ("v1      demo agent v1             ✓ 10/10                     ✓ 3/3                     "
      "                  ✗ 0/2                             ✓ 4/4                                "
      "     ~ 2/4")
LEGEND = ("✓ pass  ~ flaky  ✗ fail  ! broken  - not run  ▼ regressed beyond noise since the "
          "row below")
#: How a move was decided: diff's control, named (issue 21).
NOISE = ("noise: boschloo test under Benjamini-Hochberg false discovery rate at 0.025 over 5 "
         "scenarios, 1/2 of alpha 0.05; the suite by the paired test at 0.05, as `gitevals "
         "diff` decides")


def test_demo_history_exact_rows(demo: Path) -> None:
    got = run_cli("log", cwd=demo)
    assert (got.code, got.err) == (0, "")
    assert got.out.split("\n") == [
        HEAD, V2, V1,
        "2 commits with runs along the first-parent history of HEAD, newest first; "
        "1 scenario move and 0 suite moves regressed beyond noise", NOISE, LEGEND, ""]
    # the procedure before issue 21, asked for by name, says it has no control
    none = run_cli("log", "--control", "none", cwd=demo).out.split("\n")
    assert none[4] == ("noise: boschloo test, each scenario at p < 0.05: no multiple-"
                       "comparison control (--control none)")


def test_one_case_and_one_scenario(demo: Path) -> None:
    got = run_cli("log", "basics", "--rev", "v1..v2", cwd=demo)
    assert got.out.split("\n")[:3] == [
        "commit  subject        suite      basics/answers-in-one-line  "
        "basics/uses-the-shell-rather-than-guessing",
        "v2      demo agent v2  -20.0 pts  ✗ 0/10 ▼                    ✓ 3/3",
        "v1      demo agent v1             ✓ 10/10                     ✓ 3/3"]
    one = run_cli("log", "tools/looks-up-the-weather", "--limit", "1", cwd=demo)
    assert one.out.split("\n")[:2] == [
        "commit  subject        suite  tools/looks-up-the-weather",
        "v2      demo agent v2         ~ 2/4"]


def test_json_points_carry_interval_and_test(demo: Path) -> None:
    doc = json.loads(run_cli("log", "basics/answers-in-one-line", "--format", "json",
                             cwd=demo).out)
    assert doc["format"] == "gitevals-log/1" and doc["regressions"] == 1
    assert [c["label"] for c in doc["commits"]] == ["v2", "v1"]
    v2, v1 = (c["points"][0] for c in doc["commits"])
    assert (v1["passes"], v1["trials"], v1["change"], v1["interval"][1]) == (10, 10, "new", 1.0)
    assert (v2["change"], v2["regressed"], v2["interval"][0]) == ("regressed", True, 0.0)
    diff = json.loads(run_cli("diff", "v1", "v2", "--format", "json", cwd=demo).out)
    row = next(r for r in diff["verdicts"] if r["scenario"] == "answers-in-one-line")
    assert v2["p"] == row["p"]  # the very test diff runs
    assert v2["q"] == row["q"] and doc["control"] == diff["control"] == "fdr"  # its control
    assert doc["commits"][0]["suite"]["estimate_pts"] == diff["suite"]["estimate_pts"]
    assert doc["commits"][1]["suite"] is None  # the first commit has nothing to compare


@pytest.mark.parametrize(("args", "says"), [
    (["nope"], "no scenario 'nope' in the runs of this history"),
    (["--rev", "v2..v1"], "is not on the first-parent history of"),
    (["--rev", "v1...v2"], "a symmetric range (A...B) has no one line of history"),
    (["--rev", "no-such-tag"], "unknown revision 'no-such-tag'"),
    (["--limit", "0"], "argument --limit: '0' must be 1 or more"),
], ids=["unknown-scenario", "backwards-range", "symmetric-range", "unknown-rev", "limit-0"])
def test_bad_input_is_one_line(demo: Path, args: list[str], says: str) -> None:
    got = run_cli("log", *args, cwd=demo)
    assert got.code == 2 and got.out == ""
    assert says in got.err and len(got.err.strip().split("\n")) == 1, got.err


def test_no_runs_yet(repo: Repo) -> None:
    repo.commit({"README": "x"}, msg="first")
    got = run_cli("log", cwd=repo.path)
    assert got.code == 0
    assert got.out == ("no runs along the first-parent history of HEAD: make one with "
                       "`gitevals run`\n")
    report = run_cli("report", "-o", str(repo.path / "r.html"), cwd=repo.path)
    assert report.code == 2 and "no run of HEAD" in report.err
    assert not (repo.path / "r.html").exists()


def test_a_clone_reads_the_history_from_notes(demo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(demo), str(clone)], check=True)
    none = run_cli("log", cwd=clone)
    assert none.out.startswith("no runs along the first-parent history of HEAD")
    subprocess.run(["git", "fetch", "-q", "origin", "refs/notes/gitevals:refs/notes/gitevals"],
                   cwd=clone, check=True)
    assert run_cli("log", cwd=clone).out.split("\n")[:3] == [HEAD, V2, V1]
    # a note that holds no run: said on its row, and v2 is compared with nothing
    subprocess.run(["git", "notes", "--ref", "gitevals", "add", "-f", "-m",
                    '{"format": "gitevals-run/1"}', "v1"], cwd=clone, check=True,
                   capture_output=True)
    rows = run_cli("log", "basics/answers-in-one-line", cwd=clone).out.split("\n")
    assert rows[1:3] == ["v2      demo agent v2                       ✗ 0/10",
                         "v1      (run unreadable: see below)"]
    assert rows[3].startswith("v1: run unreadable: git note refs/notes/gitevals on ")
    report = run_cli("report", "-o", str(clone / "r.html"), cwd=clone)
    assert report.code == 0, report.err
    assert "unreadable: git note refs/notes/gitevals on" in (clone / "r.html").read_text()


def test_report_bad_output_and_outside_a_repo(demo: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.html"
    kept.write_text("an earlier report")
    into_dir = run_cli("report", "-o", str(tmp_path), cwd=demo)
    assert into_dir.code == 2
    assert into_dir.err == (f"gitevals: error: -o {tmp_path}: is a directory; name a file, "
                            f"e.g. {tmp_path / 'gitevals-report.html'}\n")
    limited = run_cli("report", "HEAD~1..HEAD", "-o", str(kept), "--limit", "1", cwd=demo)
    assert limited.code == 0  # v2 has a run: --limit 1 leaves v1 out of the history
    html = kept.read_text()
    assert html.startswith("<!doctype html>") and html.count('class="pt ') == 5
    outside = run_cli("log", cwd=tmp_path)
    assert outside.code == 2 and outside.err.count("\n") == 1 and "git" in outside.err


def test_a_report_into_a_fifo_or_a_link_to_one_is_refused_and_leaves_it(
        demo: Path, tmp_path: Path) -> None:
    """``-o`` naming a FIFO, or a symlink to one (``/dev/stdout``, ``/dev/null``: a
    device run as root): one line, exit 2, the node left as it was. The atomic write
    renamed a regular file over it (as root, over /dev/null itself)."""
    import os

    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    for named in (fifo, link):
        r = run_cli("report", "-o", str(named), cwd=demo)
        assert (r.code, r.err) == (2, "gitevals: error: cannot replace what is not a regular "
                                      "file (a device, FIFO or socket); name a regular file: "
                                      f"{named}\n")
    assert stat.S_ISFIFO(fifo.stat().st_mode) and link.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["fifo", "link"]  # no temp file left


def test_a_report_is_as_readable_as_any_file_the_user_writes(demo: Path, tmp_path: Path) -> None:
    shared, private = tmp_path / "shared.html", tmp_path / "private.html"
    assert run_cli("report", "-o", str(shared), cwd=demo, umask=0o022).code == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644  # group and others may read it
    assert run_cli("report", "-o", str(private), cwd=demo, umask=0o077).code == 0
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    shared.chmod(0o640)  # a report written again keeps the mode its owner gave it
    assert run_cli("report", "-o", str(shared), cwd=demo, umask=0o077).code == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    assert shared.read_text().startswith("<!doctype html>")
