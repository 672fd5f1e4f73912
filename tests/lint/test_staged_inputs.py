"""What a PATH-restricted ``lint --staged`` covers: deleted graders, settings; and a root
that is not there (GE702)."""

from __future__ import annotations

import pytest

from tests.conftest import Repo, run_cli

GRADER = "def answers(t, case, run):\n    return True\n"
NAMES_IT = "scenarios:\n  - id: one\n    user: hi\n    expect:\n      - grader: {name: q.answers}\n"
PLAIN = "scenarios:\n  - id: two\n    user: hi\n"
BAD = "scenarios:\n  - suite: x\n    id: one\n    user: hi\n"
TREE = {"evals/cases/a.yaml": NAMES_IT, "evals/graders/q.py": GRADER}
GONE = "evals/cases/a.yaml:5:24: GE502 grader module evals/graders/q.py not found"


def test_a_staged_deletion_of_a_grader_relints_the_cases_that_name_it(repo: Repo) -> None:
    repo.commit(TREE)
    repo.git("rm", "-q", "evals/graders/q.py")
    repo.write({"evals/cases/b.yaml": PLAIN})
    repo.git("add", "-A")
    r = run_cli("lint", "--staged", "evals/cases/b.yaml", cwd=repo.path)
    assert r.code == 1
    assert GONE in r.out


def test_a_named_grader_path_missing_from_the_tree_relints_every_case(repo: Repo) -> None:
    from gitevals.git.trees import open_tree
    from gitevals.lint import lint_tree

    repo.commit(TREE)
    repo.git("rm", "-q", "evals/graders/q.py")
    result = lint_tree(open_tree(staged=True, start=repo.path), ["evals/graders/q.py"],
                       cache=False)
    assert "evals/cases/a.yaml:5:24: GE502" in [f"{f.location()}: {f.code}"
                                                for f in result.findings]


@pytest.mark.parametrize("settings", ["pyproject.toml", "gitevals.toml"])
def test_a_named_settings_file_lints_everything(repo: Repo, settings: str) -> None:
    table = "[tool.gitevals]\n" if settings == "pyproject.toml" else ""
    repo.commit({**TREE, "evals/cases/bad.yaml": BAD, settings: f'{table}root = "evals"\n'})
    r = run_cli("lint", "--staged", settings, cwd=repo.path)
    assert r.code == 1
    assert "evals/cases/bad.yaml:2:5: GE301" in r.out


def test_a_deleted_settings_file_lints_everything(repo: Repo) -> None:
    repo.commit({**TREE, "evals/cases/bad.yaml": BAD, "gitevals.toml": 'root = "evals"\n'})
    repo.git("rm", "-q", "gitevals.toml")
    repo.write({"evals/cases/b.yaml": PLAIN})
    repo.git("add", "-A")
    r = run_cli("lint", "--staged", "evals/cases/b.yaml", cwd=repo.path)
    assert "evals/cases/bad.yaml:2:5: GE301" in r.out


@pytest.mark.parametrize("where", [(), ("--staged",), ("--rev", "HEAD")],
                         ids=["working-tree", "staged", "rev"])
def test_a_root_that_does_not_exist_is_an_error(repo: Repo, where: tuple[str, ...]) -> None:
    repo.commit({"gitevals.toml": 'root = "eval"\n', "evals/cases/a.yaml": PLAIN})
    r = run_cli("lint", *where, cwd=repo.path)
    assert r.code == 1
    label = {"--staged": "index", "--rev": f"HEAD ({repo.git('rev-parse', 'HEAD')[:12]})"}
    tree = label.get(where[0], "") if where else "working tree"
    assert r.out.startswith(
        f"gitevals.toml:1:1: GE702 root 'eval' (set in gitevals.toml) does not exist in the "
        f"{tree}, so nothing would be checked; add the eval tree there (`gitevals init` "
        "scaffolds one) or set root to where it is\n")


def test_without_settings_a_missing_default_root_is_only_a_note(repo: Repo) -> None:
    repo.commit({"README.md": "hi\n"})
    r = run_cli("lint", cwd=repo.path)
    assert (r.code, r.out) == (0, "0 files checked: no problems\n")
    assert "nothing to lint in the working tree" in r.err
