"""Adjusted p values for a family of tests: Benjamini-Hochberg, Benjamini-Yekutieli, Holm.

A suite compared scenario by scenario is a family of tests: at p < 0.05 each, 100
unchanged scenarios give about five false "regressed" calls between them. An adjusted
p (``q``) is the smallest family level at which a row would be called: ``q < level``
calls it, and the family keeps the promise of its method --

- ``holm`` (family-wise error): P[any false call] <= level, under any dependence;
- ``bh`` (false discovery rate, Benjamini-Hochberg): E[false calls / calls] <= level
  for independent (or positively dependent) tests; when every hypothesis is null that
  is P[any call] <= level, so it also keeps an unchanged suite's alarms at ``level``;
- ``by`` (Benjamini-Yekutieli): the same rate under any dependence, at the cost of a
  factor 1 + 1/2 + ... + 1/m (for families whose tests share data, e.g. lane pairs
  that share a lane).

The values equal ``statsmodels.stats.multitest.multipletests``' ``pvals_corrected``
(``tests/stats/test_stats_kernel.py`` checks it on random families).
"""

from __future__ import annotations

from collections.abc import Sequence

#: ``--control`` values -> the method a family of independent tests uses.
CONTROLS = ("fdr", "fwer", "none")
DEFAULT_CONTROL = "fdr"
METHODS = ("bh", "by", "holm", "none")

#: What each method is called in reports.
NAMES = {"bh": "Benjamini-Hochberg false discovery rate",
         "by": "Benjamini-Yekutieli false discovery rate (any dependence)",
         "holm": "Holm family-wise error rate",
         "none": "no multiple-comparison control"}


def method_of(control: str, dependent: bool = False) -> str:
    """The method ``--control`` names: fdr -> bh (by when the tests are dependent),
    fwer -> holm, none -> none."""
    if control == "fdr":
        return "by" if dependent else "bh"
    if control == "fwer":
        return "holm"
    if control == "none":
        return "none"
    raise ValueError(f"unknown control {control!r}: use one of {', '.join(CONTROLS)}")


def _order(ps: Sequence[float]) -> list[int]:
    return sorted(range(len(ps)), key=ps.__getitem__)


def holm(ps: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjusted p: the k-th smallest times (m - k + 1), kept monotone."""
    m, out, running = len(ps), [0.0] * len(ps), 0.0
    for rank, i in enumerate(_order(ps)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return tuple(out)


def bh(ps: Sequence[float], factor: float = 1.0) -> tuple[float, ...]:
    """Benjamini-Hochberg's step-up adjusted p: the k-th smallest times m / k, made
    monotone from the largest down (times ``factor``: BY's harmonic sum)."""
    m, out, running = len(ps), [0.0] * len(ps), 1.0
    for rank, i in reversed(list(enumerate(_order(ps)))):
        running = min(running, factor * m * ps[i] / (rank + 1))
        out[i] = min(1.0, running)
    return tuple(out)


def by(ps: Sequence[float]) -> tuple[float, ...]:
    """Benjamini-Yekutieli: BH times 1 + 1/2 + ... + 1/m (valid under any dependence)."""
    return bh(ps, sum(1.0 / k for k in range(1, len(ps) + 1)))


def adjust(ps: Sequence[float], method: str) -> tuple[float, ...]:
    """Adjusted p values of ``ps`` by ``method`` (bh, by, holm, none)."""
    for p in ps:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p value must be between 0 and 1, not {p!r}")
    if method == "bh":
        return bh(ps)
    if method == "by":
        return by(ps)
    if method == "holm":
        return holm(ps)
    if method == "none":
        return tuple(ps)
    raise ValueError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")


def family(ps: Sequence[float], control: str, share: int = 1,
           dependent: bool = False) -> tuple[float, ...]:
    """Each test's q on the whole budget's scale: its adjusted p under ``control``, times
    ``share`` (the budget is split evenly between ``share`` families, e.g. the suite test
    and the scenarios), at most 1. A row is called when ``q < alpha``: by the union bound
    the calls of all the families together keep the control's promise at ``alpha``."""
    return tuple(min(1.0, share * q) for q in adjust(ps, method_of(control, dependent)))


def describe(control: str, alpha: float, tests: int, share: int = 1,
             dependent: bool = False, what: str = "tests") -> str:
    """One phrase naming the control, its error rate and the level it holds it at."""
    method = method_of(control, dependent)
    if method == "none":
        return (f"no multiple-comparison control: each of {tests} {what} at p < {alpha:g} "
                f"(about {alpha * tests / 2:.2g} false 'regressed' calls expected when "
                f"nothing changed)")
    half = f", 1/{share} of alpha {alpha:g}" if share > 1 else ""
    return f"{NAMES[method]} at {alpha / share:g} over {tests} {what}{half}"
