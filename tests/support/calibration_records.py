"""A calibration record as `gitevals calibrate` writes it, for tests that need a grader
calibrated (or not) without a judge that answers per item: the product's own pure
builder (``calibration.record.build``) over 200 labelled items, every number consistent
with the items listed, the grader's closure read from HEAD."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from gitevals.calibration.metrics import measure, sizes, split_of
from gitevals.calibration.record import Context, build, dumps, item_rows
from gitevals.git.repo import require_repo
from gitevals.git.trees import RevisionTree
from gitevals.graderimports import closure
from tests.conftest import Repo

#: Where the records' labels are committed (the record names them; lint checks against them).
LABELS = "calibration-labels.jsonl"


def record(repo: Repo, grader: str, model: str, *, final: bool = True,
           fail_judged_pass: float = 0.0, root: str = "evals") -> dict[str, Any]:
    """The record of ``grader`` at HEAD: 200 items (every fifth labelled fail), committed
    as ``LABELS`` first; the grader is right on every item except ``fail_judged_pass`` of
    the fail ones."""
    ids = [f"item-{i:03d}" for i in range(200)]
    labels = {i: n % 5 != 0 for n, i in enumerate(ids)}
    text = "".join(json.dumps({"id": i, "output": "x", "label": "pass" if labels[i] else "fail"})
                   + "\n" for i in ids)
    repo.commit({LABELS: text}, msg="labels")
    chosen = [i for i in ids if split_of(i) == ("test" if final else "dev")]
    fails = [i for i in chosen if not labels[i]]
    wrong = set(fails[:round(len(fails) * fail_judged_pass)])
    said: dict[str, bool | str] = {i: labels[i] or i in wrong for i in chosen}
    tree = RevisionTree(require_repo(repo.path), "HEAD")
    module = f"{root}/graders/{grader.partition('.')[0]}.py"
    pins = closure(tree, [module], root)
    ctx = Context(grader, pins[module], str(tree.commit), model, "http://127.0.0.1:1/v1",
                  None, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), LABELS,
                  hashlib.sha256(text.encode()).hexdigest(), sizes(ids), pins)
    measured = measure({i: labels[i] for i in chosen}, said)
    out: dict[str, Any] = json.loads(dumps(build(ctx, measured, final, None,
                                                 item_rows(labels, said))))
    return out
