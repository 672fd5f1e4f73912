"""The command line: argparse, one module per command, and the one error handler."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

import gitevals.commands as commands_pkg
from gitevals import __version__
from gitevals.errors import GitevalsError


def _command_modules(only: str | None = None) -> list[ModuleType]:
    """Every module in ``gitevals.commands`` (each defines NAME, HELP, add_arguments,
    run), or only the one of command ``only`` when there is one: a command's module is
    named as the command, ``-`` as ``_``."""
    # The package's own directory, listed (pkgutil costs a start more than it saves).
    names = sorted({f.partition(".")[0] for d in commands_pkg.__path__ for f in os.listdir(d)
                    if f[0] != "_" and f.endswith((".py", ".pyc")) and f.count(".") == 1})
    if only is not None and only.replace("-", "_") in names:
        names = [only.replace("-", "_")]
    mods = [importlib.import_module(f"gitevals.commands.{n}") for n in names]
    return [m for m in mods if hasattr(m, "NAME")]


def _invoked(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (None before any, e.g. ``--help``, ``--version``)."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "-C":
            skip = True
        elif not token.startswith("-"):
            return token
        elif not token.startswith("-C"):
            return None
    return None


class _Parser(argparse.ArgumentParser):
    """argparse with bad input as one line (what is wrong, where to look), exit 2."""

    #: the command line being parsed (set on the top-level parser): an argument no part
    #: of it knows is the innermost (sub)command's to explain, so its help is the one named
    argv: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        helped: argparse.ArgumentParser = self
        if message.startswith("unrecognized arguments: "):
            helped = _named(self, self.argv)
            message += _near(message.removeprefix("unrecognized arguments: ").split(), helped)
        self.exit(2, f"{self.prog}: error: {message}; see `{helped.prog} --help`\n")


def _named(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the innermost (sub)command ``argv`` names (``task compile``'s)."""
    for token in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            break
        parser = subs[0].choices.get(token, parser)
    return parser


def _near(unknown: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """`` (did you mean --json?)`` for unknown flags close to a flag of ``parser``."""
    from gitevals.schema import closest

    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    flags = [w.partition("=")[0] for w in unknown if w.startswith("--")]
    near = [(flag, closest(flag, known)) for flag in flags]
    said = [(flag, to) for flag, to in near if to is not None]
    if not said:
        return ""
    if len(said) == 1:
        return f" (did you mean {said[0][1]}?)"
    return " (did you mean " + ", ".join(f"{to} for {flag}" for flag, to in said) + "?)"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` the arguments of that one command (every
    start builds just what it parses: about 20 ms less than all twenty commands)."""
    parser = _Parser(
        prog="gitevals",
        description="Evals for LLM agent harnesses, checked like code in the harness's own repo.",
    )
    parser.add_argument("--version", action="version", version=f"gitevals {__version__}")
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)
    for mod in _command_modules(only):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _chdir(path: str) -> None:
    from gitevals.errors import UsageError

    try:
        os.chdir(path)
    except OSError as exc:
        raise UsageError(f"-C {path}: {exc.strerror or exc}; name an existing directory") from exc


def _interrupted(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


def _term_as_interrupt() -> None:
    """SIGTERM (a CI job cancelled, a container stopped) as ^C: every command stops as
    it does on SIGINT (a run keeps what finished; exit 130) rather than dying mid-way.
    An ignored SIGTERM stays ignored; off the main thread nothing changes."""
    import signal

    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _interrupted)
    except ValueError:  # not the main thread (gitevals called from a library)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command in this process; its exit code. The cycle collector is left as
    the caller had it: commands that read big acyclic trees turn it off for their work
    (``commands/score.py``), which a process that goes on (a notebook, a test) must
    not inherit."""
    collecting = gc.isenabled()
    try:
        return _main(argv)
    finally:
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None = None) -> int:
    """``main`` for a process that ends with the command (``entry``)."""
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_invoked(given))
    if isinstance(parser, _Parser):
        parser.argv = given
    args = parser.parse_args(given)
    _term_as_interrupt()
    try:
        if args.chdir:
            _chdir(args.chdir)
        code: int = args._run(args)
        return code
    except GitevalsError as exc:
        from gitevals.text import visible

        # A message may name a file, revision or case from the tree: data, not commands.
        print(f"gitevals: error: {visible(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gitevals: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``gitevals lint | head``): nothing left to say.
        sys.stderr.close()
        return 1
    except OSError as exc:
        from gitevals.text import visible

        print(visible(f"gitevals: error: {exc.strerror or exc}: {exc.filename or ''}")
              .rstrip(": "), file=sys.stderr)
        return 2
    except Exception as exc:  # the one place that turns a bug into a message
        if os.environ.get("GITEVALS_TRACEBACK"):
            raise
        from gitevals.text import visible

        where = _bug_log(exc, given)
        told = (f"the traceback and versions are in {visible(where)}" if where
                else "set GITEVALS_TRACEBACK=1 to see where")
        print(f"gitevals: internal error: {type(exc).__name__}: {visible(exc)} "
              f"({told}; please report it)", file=sys.stderr)
        return 2


def entry() -> NoReturn:
    """The ``gitevals`` program (the console script, ``python -m gitevals``): ``main``,
    then an exit that skips the interpreter's last garbage collections.

    At exit Python runs its cycle collector over every object the command made: a fifth
    of a one-case run's CPU, more after a large diff. ``gc.freeze`` moves those objects
    out of its reach, so the process ends without walking them. Nothing else changes:
    atexit handlers, thread joins and the flush of stdout and stderr still run; what is
    skipped are finalizers of objects kept alive only by reference cycles, which Python
    never promises at exit (every file gitevals writes is closed where it is written).
    ``main`` itself stays a plain function, so a caller in-process keeps its collector."""
    commands_pkg.PROGRAM = True
    _closed_streams_to_devnull()
    code = _main()
    gc.freeze()
    raise SystemExit(code)


def _closed_streams_to_devnull() -> None:
    """Fds 0-2 the caller closed (``gitevals lint >&-``) opened on /dev/null, as git
    does: Python leaves such a ``sys.std*`` None (every write an internal error), and the
    next file opened would take the fd, so a child inheriting its stdout would write into
    it."""
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        mode = "r" if fd == 0 else "w"
        # the process's stream from now on: it lives as long as the process
        stream = open(fd, mode, encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                      closefd=False)
        setattr(sys, name, stream)


def _bug_log(exc: BaseException, argv: Sequence[str]) -> str | None:
    """Write what a bug report needs (versions, the command line, the traceback) to a
    file of its own in the cache directory, as pre-commit's error handler does; its path,
    or None when nothing could be written."""
    import platform
    import time
    import traceback
    from importlib.metadata import PackageNotFoundError, version

    from gitevals import __version__
    from gitevals.files import cache_dir, write_atomic

    try:
        libgit2 = f"pygit2 {version('pygit2')}"
    except PackageNotFoundError:
        libgit2 = "pygit2 not installed"
    text = "".join([
        f"gitevals {__version__}\n", f"python {sys.version.split()[0]} ({sys.executable})\n",
        f"{platform.platform()}\n", f"{libgit2}\n",
        f"argv: {' '.join(map(repr, argv))}\n\n",
        *traceback.format_exception(type(exc), exc, exc.__traceback__)])
    path = cache_dir("bugs") / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text, private=True)
    except OSError:
        return None
    return str(path)
