"""The ``gitevals`` program: ``python -m gitevals`` and the console script.

Importing the command line takes a noticeable part of a start; a ^C meanwhile (a hook
cancelled as it starts) is one line and exit 130, as later, not the import's traceback.
"""

import sys


def main() -> None:
    try:
        from gitevals.cli import entry
    except KeyboardInterrupt:
        print("gitevals: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    entry()


if __name__ == "__main__":
    main()
