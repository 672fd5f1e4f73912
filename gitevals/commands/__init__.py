"""One module per subcommand: ``NAME``, ``HELP``, ``add_arguments(parser)``, ``run(args) -> int``.

Modules here are imported at every start to build the parser, so they import
nothing heavy at module level.
"""
