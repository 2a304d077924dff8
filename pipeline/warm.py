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
returns at once. Callers that start together (two drivers, the workers of a
parallel test session) take turns on a lock in the cache folder: the first
compiles, the others wait and then find its stamps. Numba checks a kernel
against a hash of its own source file only, so the first warm of a new version
of the sources deletes the engine's compiled kernels (``expire_compiled``); each
Ray worker process checks the same before its first task
(``expire_stale_kernels_once``), since a cluster's nodes keep caches of their
own that no driver warms.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np

# (variant, player): each compiles one group of kernels, listed slowest first, so that the pool's processes
# finish together (as measured in this order on 2 cores, the cache shared, Dec 3 2026: the pending search
# 132 s, plain optional 83 s, bound 66 s, adp and the policies 54 s each, easy 40 s, pimc 31 s, the native
# search 24 s)
UNITS: tuple[tuple[str, str], ...] = (
    ("strict+optional", "solver"),  # the pending search (every rule set with optional discards)
    ("standard+optional", "solver:sensible"),  # the plain optional search (under a restriction)
    ("standard", "bound"),
    ("standard", "adp"),
    ("standard", "greedy"),
    ("easy", "solver"),
    ("standard", "pimc"),
    ("standard", "solver"),
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


def _cache_folder() -> Path:
    """``NUMBA_CACHE_DIR`` if set, else the engine's own ``__pycache__`` (Numba's default)."""
    import engine_rs_free

    base = os.environ.get("NUMBA_CACHE_DIR")
    return Path(base) if base else Path(engine_rs_free.__file__).parent / "__pycache__"


def stamp_path(unit: tuple[str, str], engine: str | None = None) -> Path:
    """The stamp that says ``unit`` was compiled for this code (``engine``: engine_stamp(), if known)."""
    variant, player = unit
    return _cache_folder() / f"acesup-warm-{engine or engine_stamp()}-{player}-{variant}"


def cold_units(units=UNITS, engine: str | None = None) -> list[tuple[str, str]]:
    """The units of ``units`` with no stamp for this code (``engine``: engine_stamp(), if known)."""
    engine = engine or engine_stamp()
    return [u for u in units if not stamp_path(u, engine).exists()]


def _unit_key(variant: str, player: str) -> tuple:
    """What decides the kernels a (variant, player) runs: the player's kind, and for the solver its search."""
    from engine_rs_free.players import POLICY_KINDS, parse_player, solver_rules
    from engine_rs_free.rules import rules_by_name

    spec = parse_player(player)
    if spec.kind == "solver":
        from engine_rs_free.solver.core import search_mode
        from engine_rs_free.solver.optional import rule_flags
        from engine_rs_free.solver.pending import RULE_PENDING

        rules = solver_rules(spec, rules_by_name(variant))
        return ("solver", search_mode(rules, "auto"), bool(rule_flags(rules) & RULE_PENDING))
    if spec.kind in POLICY_KINDS:
        return ("batch",)  # one compiled kernel (batch._play_kernel) plays every honest policy
    return (spec.kind,)


def units_for(pairs) -> tuple[tuple[str, str], ...]:
    """The units of UNITS whose kernels playing ``pairs`` ((variant, player) of a run) compiles."""
    wanted = {_unit_key(v, p) for v, p in pairs}
    return tuple(u for u in UNITS if _unit_key(*u) in wanted)


def _warm_unit(unit: tuple[str, str]) -> float:
    """Play UNIT_DECKS deals of one unit (compiling its kernels into the cache); returns the seconds it took."""
    from engine_rs_free.deals import deal_batch
    from engine_rs_free.players import play

    start = time.perf_counter()
    variant, player = unit
    play(deal_batch(0, 0, UNIT_DECKS), variant, player, seed=0, indices=np.arange(UNIT_DECKS),
         node_limit=UNIT_NODE_LIMIT)
    return time.perf_counter() - start


LOCK_NAME = "acesup-warm.lock"


def _kernel_cache_folders(root: Path) -> set[Path]:
    """The folders where Numba keeps the compiled kernels of the sources under ``root``: for each source
    folder, the first of Numba's own cache locations that takes it (``__pycache__`` beside the sources,
    ``NUMBA_CACHE_DIR``, a user-wide folder), as Numba itself chooses."""
    from numba.core import caching, config

    config.reload_config()  # NUMBA_CACHE_DIR as the environment says now, as Numba reads it before a compile

    def probe():  # the locators read a function's source file name, and this function's line
        pass

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    folders = set()
    for py_file in sorted({p.parent: p for p in root.rglob("*.py")}.values()):
        folder = py_file.parent / "__pycache__"
        try:
            for locator_class in impl._locator_classes:
                locator = locator_class.from_function(probe, str(py_file))
                if locator is not None:
                    folder = Path(locator.get_cache_path())
                    break
        except Exception:  # a Numba whose private locators changed: its default place
            pass
        folders.add(folder)
    return folders


def expire_compiled(root: Path | None = None) -> int:
    """Delete the compiled kernels of the engine (the package at ``root``, by default the installed one) from
    Numba's on-disk cache, so that each is compiled again from the sources. Returns the files deleted.

    Numba checks a cached kernel against its own source file only (a hash of its text), so a kernel whose
    callee in *another* module changed would load its old machine code, callee included: after an edit of
    ``solver/lines.py``, ``core._solve_native_many`` kept running the old line finish.
    """
    import engine_rs_free

    root = Path(root) if root is not None else Path(engine_rs_free.__file__).parent
    deleted = 0
    for folder in _kernel_cache_folders(root):
        for path in [*folder.glob("*.nbi"), *folder.glob("*.nbc")]:
            try:
                path.unlink()
                deleted += 1
            except OSError:
                pass
    return deleted


@contextmanager
def warm_lock(progress=None):
    """Hold the cache folder's warm lock (an exclusive ``flock``; released when the process ends, however it
    ends). ``progress(text)``, if given, hears when the lock is held by another process. Without ``fcntl``
    (not POSIX) or a writable cache folder there is no lock: two callers then both compile, as without one."""
    try:
        import fcntl

        _cache_folder().mkdir(parents=True, exist_ok=True)
        handle = open(_cache_folder() / LOCK_NAME, "a")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress(f"waiting for another process that is compiling the engine into {_cache_folder()}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sources_mark(engine: str) -> Path:
    """The mark that says the cache was expired for this version of the sources (``expire_for_new_sources``)."""
    return _cache_folder() / f"acesup-warm-{engine}-sources"


def expire_for_new_sources(engine: str | None = None, root: Path | None = None) -> bool:
    """``expire_compiled`` once per version of the engine's sources (``engine``: engine_stamp(root), if
    known), with a mark in the cache folder; True when it expired the cache now."""
    mark = _sources_mark(engine or engine_stamp(root))
    if mark.exists():
        return False
    expire_compiled(root)
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError:
        pass  # a read-only cache folder: nothing to mark, and nothing of ours to go stale in it
    return True


_SOURCES_CHECKED: set[str] = set()  # the engine roots this process has checked (expire_stale_kernels_once)


def expire_stale_kernels_once(root: Path | None = None) -> bool:
    """``expire_for_new_sources`` under the warm lock, once per process (and engine root); True when it
    expired the cache now.

    What every Ray task of the pipeline runs before its first kernel. On this machine ``warm`` has done it
    already (the mark is there: one hash of the sources, a few tenths of a second, once per worker process),
    but a cluster's node keeps a cache of its own that no driver warms: after an in-place update of the
    node's sources its kernels would otherwise load machine code compiled from the old ones. Once per
    process, because a process runs the sources it imported when it started.
    """
    import engine_rs_free

    key = str(Path(root) if root is not None else Path(engine_rs_free.__file__).parent)
    if key in _SOURCES_CHECKED:
        return False
    engine = engine_stamp(root)
    expired = False
    if not _sources_mark(engine).exists():  # the lock only when there may be work: never behind a compile
        with warm_lock():
            expired = expire_for_new_sources(engine, root)
    _SOURCES_CHECKED.add(key)
    return expired


def warm(processes: int | None = None, *, units=UNITS, force: bool = False, progress=None) -> WarmResult:
    """Compile ``units`` (default: every unit of UNITS) into the on-disk cache with ``processes`` processes
    (default: every core).

    A unit whose stamp for this code is there is left out (unless ``force``); ``skipped`` says none was
    left. ``progress(text)``, if given, hears when the compile starts and about each unit as it finishes.
    A unit's stamp is written once every unit ran. The first warm of a version of the engine's sources
    recompiles every kernel it plays (``expire_compiled``: Numba alone would keep kernels whose callees
    changed in another module). Callers take turns on the cache folder's lock
    (``warm_lock``): one that waited compiles only what the one before it left undone.
    """
    engine = engine_stamp()
    if not force and not cold_units(units, engine):
        return WarmResult(True, 0.0, 0, 0)
    with warm_lock(progress):
        # again under the lock: a process that held it may have warmed these units meanwhile
        todo = list(units) if force else cold_units(units, engine)
        if not todo:
            return WarmResult(True, 0.0, 0, 0)
        expire_for_new_sources(engine)
        return _compile(todo, engine, processes, progress)


def _compile(todo, engine: str, processes: int | None, progress) -> WarmResult:
    """Play each unit of ``todo`` in a pool of processes, then stamp them (``warm``, under its lock)."""
    processes = max(1, min(processes or os.cpu_count() or 1, len(todo)))
    if progress:
        progress(f"compiling the engine into the on-disk cache {_cache_folder()}: {len(todo)} groups of kernels "
                 f"on {processes} processes, a few minutes (once per machine and engine version)")
    start = time.perf_counter()
    # spawn, not fork: the caller may hold threads (Ray, Prefect) that a forked child would inherit half-made
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        for unit, seconds in zip(todo, pool.map(_warm_unit, todo)):
            if progress:
                progress(f"compiled {unit[1]} on {unit[0]} in {seconds:.0f} s")
    try:
        _cache_folder().mkdir(parents=True, exist_ok=True)
        for old in _cache_folder().glob("acesup-warm-*"):
            if not old.name.startswith(f"acesup-warm-{engine}-"):
                old.unlink()  # the stamps of earlier versions of the code
        for unit in todo:
            stamp_path(unit, engine).touch()
    except OSError:
        pass  # a read-only install: Numba caches elsewhere, and the next call warms (loads) again
    return WarmResult(False, time.perf_counter() - start, len(todo), processes)
