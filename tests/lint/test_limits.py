"""Issue 8, class 1: lint bounds what would crash or run away in a run (trials, timeouts,
numbers too large to read), each as a finding at its line and column."""

from __future__ import annotations

import pytest

from gitevals.findings import Finding
from gitevals.lint.cases import lint_case_bytes

P = "evals/cases/c.yaml"


def _case(defaults: str, scenario: str = "") -> bytes:
    return (f"defaults: {{{defaults}}}\nscenarios:\n  - id: a\n    user: hi\n{scenario}"
            "    expect: [{no_error: true}]\n").encode()


HUGE = "9" * 5000
LIMITS = [
    ("trials-over-10000", _case("trials: 10001"),
     Finding(P, 1, 20, "GE204", "defaults.trials is 10001, must be at most 10000")),
    ("trials-10000-ok", _case("trials: 10000"), None),
    ("timeout-1000h", _case("timeout: 1000h"),
     Finding(P, 1, 21, "GE406", "timeout 1000h is over the limit of 24h a conversation; "
             "use 24h or less")),
    ("scenario-timeout-86401s", _case("trials: 2", "    timeout: 86401s\n"),
     Finding(P, 5, 14, "GE406", "timeout 86401s is over the limit of 24h a conversation; "
             "use 24h or less")),
    ("timeout-24h-ok", _case("timeout: 24h"), None),
    ("timeout-ten-digits", _case("timeout: 9999999999s"),
     Finding(P, 1, 21, "GE204", "defaults.timeout '9999999999s' is not valid; write it like "
             "300s or 5m or 1h or 250ms")),
    ("trials-5000-digits", _case(f"trials: {HUGE}"),
     Finding(P, 1, 20, "GE112", "number with 5000 characters is too large to read; write a "
             "smaller number")),
]


@pytest.mark.parametrize(("data", "expected"), [x[1:] for x in LIMITS],
                         ids=[x[0] for x in LIMITS])
def test_limits_are_findings(data: bytes, expected: Finding | None) -> None:
    findings, _ = lint_case_bytes(data, P, {})
    assert list(findings) == ([expected] if expected else [])
