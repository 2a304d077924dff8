"""acesup warm: compile the engine into the on-disk cache, on every core."""

from __future__ import annotations

NAME = "warm"
HELP = "compile the engine once into Numba's on-disk cache, on every core (first run on a machine)"
DESCRIPTION = """\
Compile every engine kernel (the solver's searches, pimc, the bracket players,
the honest policies) into Numba's on-disk cache, one group per process, on
every core at once (pipeline/warm.py). A process started afterwards (a Ray
worker, a test, any acesup command) loads the compiled code instead of
compiling it again. Returns at once when the cache was warmed for this exact
code already (a stamp in the cache folder). Run it once after installing, or
in a container image's build; the test session runs it first.

example:
  acesup warm
  acesup warm --processes 1 --force
"""


def add_arguments(p):
    p.add_argument("--processes", type=int, metavar="N", help="processes to compile in (default: every core)")
    p.add_argument("--force", action="store_true", help="compile (or load) every unit even if the stamp is there")


def run(args) -> int:
    from pipeline.errors import UserError
    from pipeline.warm import warm

    if args.processes is not None and args.processes < 1:
        raise UserError(f"--processes {args.processes} is not positive; give 1 or more")
    res = warm(args.processes, force=args.force, progress=lambda text: print(text, flush=True))
    if res.skipped:
        print("already warm for this code (remove the stamp or give --force to compile again)")
    else:
        print(f"warm: {res.units} groups of kernels on {res.processes} processes in {res.seconds:.0f} s")
    return 0
