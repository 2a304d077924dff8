"""One module per ``acesup`` subcommand.

Each module defines ``NAME`` (the subcommand), ``HELP`` (one line),
``DESCRIPTION`` (a paragraph with an example), ``add_arguments(parser)`` and
``run(args) -> int``. Modules import heavy libraries (ray, prefect, duckdb)
inside ``run`` only, so ``acesup --help`` stays fast. ``pipeline.cli``
discovers every module here; adding a command needs no other change.
"""
