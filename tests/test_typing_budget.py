"""The `Any` / `cast(` budget of gitevals/ (``.ci/typing-budget.toml``): the counts may not
rise above it, so every new `Any` or `cast` has to pay for itself by removing another."""

from __future__ import annotations

import io
import tokenize
import tomllib
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / ".ci" / "typing-budget.toml"


def count(source: str) -> Counter[str]:
    """How often ``source`` names ``Any`` and calls ``cast(``, as code: tokens, so that a
    word in a string, docstring or comment is not a use."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    found: Counter[str] = Counter()
    for tok, nxt in zip(tokens, [*tokens[1:], None], strict=True):
        if tok.type != tokenize.NAME:
            continue
        if tok.string == "Any":
            found["Any"] += 1
        elif tok.string == "cast" and nxt is not None and nxt.string == "(":
            found["cast"] += 1
    return found


def package_counts() -> tuple[Counter[str], dict[str, Counter[str]]]:
    total: Counter[str] = Counter()
    per_file: dict[str, Counter[str]] = {}
    for path in sorted((ROOT / "gitevals").rglob("*.py")):
        found = count(path.read_text(encoding="utf-8"))
        if found:
            per_file[path.relative_to(ROOT).as_posix()] = found
            total += found
    return total, per_file


def test_the_counter_counts_code_not_prose() -> None:
    src = ('"""Any value; cast(it) in a docstring."""\n'
           "from typing import Any, cast  # Any in a comment, cast( too\n"
           "x: dict[str, Any] = cast(dict[str, Any], y)\n"
           "typing.Any; cast ( z ); s = 'Any cast(' ; castle(1); Anything = 1\n")
    assert count(src) == Counter({"Any": 4, "cast": 2})


def test_gitevals_stays_within_the_budget() -> None:
    budget = tomllib.loads(BUDGET.read_text(encoding="utf-8"))
    assert set(budget) == {"Any", "cast"} and all(
        isinstance(v, int) and v >= 0 for v in budget.values()), BUDGET
    total, per_file = package_counts()
    over = {k: (total[k], budget[k]) for k in budget if total[k] > budget[k]}
    where = "; ".join(f"{f} {dict(c)}" for f, c in per_file.items())
    assert not over, (f"gitevals/ exceeds the typing budget in {BUDGET.name} "
                      f"(count, budget): {over}. Type the new code instead. Uses: {where}")
    under = {k: total[k] for k in budget if total[k] < budget[k]}
    if under:
        warnings.warn(f"gitevals/ is under the typing budget: lower {BUDGET} to {under}",
                      stacklevel=1)
