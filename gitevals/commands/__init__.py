"""One module per subcommand: ``NAME``, ``HELP``, ``add_arguments(parser)``, ``run(args) -> int``.

Modules here are imported at every start to build the parser, so they import
nothing heavy at module level.
"""

#: True in the ``gitevals`` program (``cli.entry`` sets it): the process ends when its
#: command returns, so a command may freeze what it made out of the collector's reach for
#: good. An in-process caller (a notebook, a test, another tool) leaves it False and gets
#: its collector back as it had it, with nothing frozen by gitevals.
PROGRAM = False
