"""The Python API: what the commands call, and what a notebook or another tool uses.

Each function takes typed values and returns typed results; none prints, parses argv
or exits (the commands in ``gitevals/commands/`` do that). This module sits above the
features (lint, goldens, diff, ...) and the engine (``run/``), and is the one place
that puts them together: the engine never imports a feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitevals.findings import Finding, has_errors
from gitevals.model import Case, load_case
from gitevals.run.runner import MAX_TRIALS, Plan, case_paths, select_cases
from gitevals.settings import Settings, load_settings

if TYPE_CHECKING:
    from gitevals.git.trees import Tree


# -- plan: what a run of a revision will do ------------------------------------------------


def plan(tree: Tree, names: Sequence[str], trials: int | None = None,
         goldens_alone: bool = False) -> Plan:
    """Read settings and the selected cases of ``tree``; lint them; nothing runs.

    A tree with no case and no task is a usage error, unless ``goldens_alone`` and its
    goldens are mapped to graders: then the plan is empty (``empty``), and the goldens
    are what the run sends."""
    from gitevals.errors import UsageError

    settings, bad = load_settings(tree)
    if bad:
        raise UsageError(f"{bad[0]}")
    available = case_paths(tree, settings.root)
    from gitevals.run import tasks

    picked = tasks.select(tree, settings, available, names)
    if not available and not picked.tasks and not picked.blocked:
        if goldens_alone and not names and settings.golden_graders:
            return Plan(settings, (), (), (), {}, trials, (), picked.notes)
        raise UsageError(f"no cases in {settings.root}/cases/ of {tree.label}: "
                         f"{_no_case_fix(tree, settings)}{_goldens_hint(tree, settings)}")
    chosen = (available if picked.cases is None
              else select_cases(available, picked.cases) if picked.cases else {})
    findings = _lint(tree, list(chosen.values()))
    cases, blocked = [], []
    for name, path in chosen.items():
        if any(f.path == path and f.severity == "error" for f in findings):
            blocked.append(name)  # lint said what is wrong; loading it would only guess
            continue
        case, more = load_case_file(tree, path)
        findings += [f for f in more if f not in findings]
        if case is None or any(f.path == path and f.severity == "error" for f in findings):
            blocked.append(name)
        else:
            cases.append(case)
    findings += [f for f in picked.findings if f not in findings]
    the_plan = Plan(settings, tuple(cases), (*blocked, *picked.blocked),
                    tuple(sorted(findings)),
                    {**_used_files(tree, settings, cases), **picked.files}, trials,
                    picked.tasks, picked.notes)
    if the_plan.total() > MAX_TRIALS:
        # Refused before anything starts: a typo such as `trials: 1000000000000` must not
        # allocate (or bill) without bound.
        raise UsageError(f"this run would make {the_plan.total():,} trials, over the limit "
                         f"of {MAX_TRIALS:,} a run; lower `trials` (or --trials), or run "
                         "fewer cases at once")
    return the_plan


def _no_case_fix(tree: Tree, settings: Settings) -> str:
    """What to do about a revision with no case: commit the cases the working tree has
    (right after `gitevals init`, say), else write one."""
    from gitevals.git.trees import RevisionTree

    cases = (tree.repo.work_root / settings.root / "cases"
             if isinstance(tree, RevisionTree) else None)
    waiting = sorted(p.name for p in cases.glob("*.y*ml") if p.is_file()) if (
        cases is not None and cases.is_dir()) else []
    if waiting:
        from gitevals.text import visible

        shown = visible(f"{settings.root}/cases/{waiting[0]}")
        more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
        return (f"{shown}{more} is in the working tree only: commit it first "
                "(runs read the commit, not the working tree)")
    return "add a <name>.yaml there (see `gitevals init`)"


def _goldens_hint(tree: Tree, settings: Settings) -> str:
    """What else would make the tree runnable: mapping the buckets of its goldens."""
    from gitevals.goldens.plan import goldens_path

    path = goldens_path(settings.root)
    if settings.golden_graders or tree.blob_sha(path) is None:
        return ""
    return (f", or map the buckets of {path} to graders in [tool.gitevals.goldens] "
            "graders to run the goldens alone")


def _lint(tree: Tree, paths: list[str]) -> list[Finding]:
    from gitevals.lint import lint_tree

    return list(lint_tree(tree, paths=paths).findings)


def load_case_file(tree: Tree, path: str) -> tuple[Case | None, list[Finding]]:
    """Parse and model one case; a failure is a finding, never an exception."""
    from gitevals.yamlsafe import parse

    doc, findings = parse(tree.read(path) or b"", path)
    if doc is None or has_errors(findings):
        return None, findings
    try:
        if not isinstance(doc.data, dict):
            raise TypeError("the top level is not a mapping")
        return load_case(path, doc.data), findings
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return None, [*findings, Finding(path, 1, 1, "GE000",
                                         f"cannot load the case: {exc}; run `gitevals lint`")]


def _used_files(tree: Tree, settings: Settings, cases: list[Case]) -> dict[str, str]:
    paths = {c.path for c in cases}
    if settings.source:
        paths.add(settings.source)
    for c in cases:
        for s in c.scenarios:
            for g in s.graders():
                paths.add(f"{settings.root}/graders/{g.partition('.')[0]}.py")
    out = {}
    for p in sorted(paths):
        e = tree.entry(p)
        if e is not None:
            out[p] = e.sha
    from gitevals.graderimports import closure

    # What the graders import from the tree is pinned beside them (graderimports.py).
    graders = f"{settings.root}/graders/" if settings.root else "graders/"
    out.update(closure(tree, [p for p in out if p.startswith(graders)], settings.root))
    return dict(sorted(out.items()))
