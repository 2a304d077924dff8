"""Compile the engine into Numba's on-disk cache once, on every core (``acesup warm``).

A process compiles each engine kernel the first time it runs it, and on a cold
cache that is minutes (docs/solver.md, "No reference counting, few calls").
Every process that starts before the cache holds a kernel compiles it again:
the test session's driver and each local Ray worker, side by side on the same
cores. ``warm`` plays a tiny game of each unit of ``UNITS`` (one group of
kernels each) in parallel processes, the slowest units first, so that the
processes started after it load compiled code from disk.

A stamp in the cache folder (a hash of the engine's sources, Python, Numba
and the CPU) says the cache was warmed for exactly this code; ``warm`` then
returns at once. Numba keeps its own check (each source file's time stamp
and size), so a stale stamp costs nothing worse than a compile.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np

# (variant, player): each compiles one group of kernels, listed slowest first (cold, one process, Dec 2026:
# the pending search 128 s, plain optional 57 s, native 55 s, easy 44 s; the others under 40 s each)
UNITS: tuple[tuple[str, str], ...] = (
    ("strict+optional", "solver"),
    ("standard+optional", "solver"),
    ("standard", "solver"),
    ("easy", "solver"),
    ("standard", "pimc"),
    ("standard", "bound"),
    ("standard", "adp"),
    ("standard", "greedy"),
    ("standard", "nomove"),
)
UNIT_DECKS = 2  # deals 0.. of seed 0: a fraction of a second each once compiled
UNIT_NODE_LIMIT = 20_000


@dataclass(frozen=True)
class WarmResult:
    skipped: bool  # the stamp says this code is warm already
    seconds: float
    units: int
    processes: int


def engine_stamp(root: Path | None = None) -> str:
    """A hash of what Numba's compiled code depends on: the engine's sources (the package at ``root``, by
    default the installed one), Python, Numba and this CPU."""
    import llvmlite.binding as llvm
    import numba

    import engine_rs_free

    h = hashlib.sha256()
    root = Path(root) if root is not None else Path(engine_rs_free.__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"{sys.version}|{numba.__version__}|{platform.machine()}|{llvm.get_host_cpu_name()}".encode())
    return h.hexdigest()[:16]


def stamp_path() -> Path:
    """Where the stamp goes: ``NUMBA_CACHE_DIR`` if set, else the engine's own ``__pycache__`` (Numba's default)."""
    import engine_rs_free

    base = os.environ.get("NUMBA_CACHE_DIR")
    folder = Path(base) if base else Path(engine_rs_free.__file__).parent / "__pycache__"
    return folder / f"acesup-warm-{engine_stamp()}"


def _warm_unit(unit: tuple[str, str]) -> float:
    """Play UNIT_DECKS deals of one unit (compiling its kernels into the cache); returns the seconds it took."""
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    start = time.perf_counter()
    variant, player = unit
    play(deal_batch(0, 0, UNIT_DECKS), variant, player, seed=0, indices=np.arange(UNIT_DECKS),
         node_limit=UNIT_NODE_LIMIT)
    return time.perf_counter() - start


def warm(processes: int | None = None, *, force: bool = False, progress=None) -> WarmResult:
    """Compile every unit of UNITS into the on-disk cache with ``processes`` processes (default: every core).

    Skipped when the stamp of this code is there (unless ``force``); ``progress(text)``, if given, hears
    when the compile starts and about each unit as it finishes. The stamp is written only when every unit ran.
    """
    stamp = stamp_path()
    if stamp.exists() and not force:
        return WarmResult(True, 0.0, 0, 0)
    processes = max(1, min(processes or os.cpu_count() or 1, len(UNITS)))
    if progress:
        progress(f"compiling the engine into the on-disk cache {stamp.parent}: {len(UNITS)} groups of kernels "
                 f"on {processes} processes, a few minutes (once per machine and engine version)")
    start = time.perf_counter()
    # spawn, not fork: the caller may hold threads (Ray, Prefect) that a forked child would inherit half-made
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        for unit, seconds in zip(UNITS, pool.map(_warm_unit, UNITS)):
            if progress:
                progress(f"compiled {unit[1]} on {unit[0]} in {seconds:.0f} s")
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        pass  # a read-only install: Numba caches elsewhere, and the next call warms (loads) again
    return WarmResult(False, time.perf_counter() - start, len(UNITS), processes)
