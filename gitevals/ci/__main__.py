"""``python -m gitevals.ci STEP``: the steps of the CI integrations (see the package)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gitevals.ci import steps
from gitevals.errors import GitevalsError
from gitevals.text import visible


def _exit_code(value: str) -> int:
    if not value.isdigit() or int(value) > 255:
        raise argparse.ArgumentTypeError(f"{value!r} is not an exit code (0-255)")
    return int(value)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m gitevals.ci",
                                  description="steps of gitevals' CI integrations")
    sub = top.add_subparsers(dest="step", required=True, metavar="STEP")
    sub.add_parser("setup-sandbox", help="install bubblewrap and allow user namespaces")
    base = sub.add_parser("base-run", help="print reuse, run or none for the base revision")
    base.add_argument("rev", metavar="REV")
    for name, what in (("summary", "append the diff to $GITHUB_STEP_SUMMARY"),
                       ("comment", "create or update the sticky pull/merge request comment")):
        p = sub.add_parser(name, help=what)
        p.add_argument("markdown", metavar="FILE", help="what `gitevals diff --format "
                       "markdown` wrote")
        p.add_argument("--exit-code", type=_exit_code, required=True, metavar="N",
                       help="the diff's exit code")
    check = sub.add_parser("check-run", help="publish JUnit results as a GitHub check run "
                           "with annotations (needs `checks: write`)")
    check.add_argument("junit", nargs="+", metavar="JUNIT",
                       help="what `gitevals diff --format junit` and `gitevals run --format "
                       "junit` wrote")
    check.add_argument("--markdown", required=True, metavar="FILE",
                       help="what `gitevals diff --format markdown` wrote (the summary)")
    check.add_argument("--exit-code", type=_exit_code, required=True, metavar="N",
                       help="the diff's exit code (the conclusion)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    env = dict(os.environ)
    try:
        if args.step == "setup-sandbox":
            return steps.setup_sandbox()
        if args.step == "base-run":
            print(steps.base_run(args.rev, env))
            return 0
        if args.step == "summary":
            return steps.summary(args.markdown, args.exit_code, env)
        if args.step == "check-run":
            return steps.check_run(args.junit, args.markdown, args.exit_code, env)
        return steps.post_comment(args.markdown, args.exit_code, env)
    except GitevalsError as exc:
        print(f"gitevals: error: {visible(exc)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(visible(f"gitevals: error: {exc.strerror or exc}: {exc.filename or ''}")
              .rstrip(": "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
