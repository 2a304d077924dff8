"""The ``acesup`` command line: a thin shell over the library.

Subcommands live in ``pipeline/commands/`` (one module each, discovered here).
A user mistake (bad argument, malformed deck, unknown variant, unreachable
cluster: the ``AcesUpError`` family of pipeline.errors) ends with a one-line
error and exit code 2, never a traceback. Any other exception, a plain
``ValueError`` included, is a bug or a machine failure: its traceback is shown.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .errors import AcesUpError


def _command_modules():
    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    return mods


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acesup",
        description="Aces Up odds, measured: deal, play and solve seeded deals, run them on Ray, "
        "query the results with SQL and build the odds report.",
        epilog="Run 'acesup COMMAND --help' for a command's arguments and an example.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules():
        p = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=getattr(mod, "DESCRIPTION", mod.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except AcesUpError as exc:
        # Input errors of the engine and the pipeline; their message names the input and the fix.
        print(f"acesup {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"acesup {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
