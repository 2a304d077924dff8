"""``acesup bench``: throughput figures, measured on one core after compilation.

A *figure* is a name (``deal``, ``play/greedy``, ``solve/standard``, …) and a
function that prepares its input (decks generated before timing starts),
warms up (Numba compilation happens there, outside the timing) and then
returns a ``Measurement``. Figures are registered with ``@figure(name)`` in
the modules listed in ``FIGURE_MODULES``; ``acesup bench`` imports them all.

Rates are items per second of wall time on one thread: the engine is
single-threaded, and the command pins Numba to one thread before importing
anything that compiles.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

FIGURE_MODULES = ("pipeline.bench_engine", "pipeline.bench_solver", "pipeline.bench_pimc", "pipeline.bench_pipeline",
                  "pipeline.bench_fingerprint")


@dataclass
class Measurement:
    """One figure: ``rate`` items per second, with the item unit and extra facts for the table."""

    rate: float
    unit: str = "decks/s"
    items: int = 0
    seconds: float = 0.0
    extra: dict[str, float | int | str] = field(default_factory=dict)


_FIGURES: dict[str, tuple[Callable[[], Measurement], bool]] = {}


def figure(name: str, *, default: bool = True):
    """Register a figure function under ``name``; ``default=False`` keeps it out of a bare ``acesup bench``."""

    def register(fn: Callable[[], Measurement]) -> Callable[[], Measurement]:
        _FIGURES[name] = (fn, default)
        return fn

    return register


def load_figures() -> dict[str, tuple[Callable[[], Measurement], bool]]:
    """Import every figure module (missing ones are skipped) and return the registry."""
    for mod in FIGURE_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    return dict(_FIGURES)


def time_rate(fn: Callable[[], int], *, min_seconds: float = 1.0, warmup: bool = True) -> Measurement:
    """Call ``fn`` (which returns how many items it processed) until ``min_seconds`` pass.

    The first call is a warm-up (compilation) and is not timed when ``warmup``.
    """
    if warmup:
        fn()
    items = 0
    start = time.perf_counter()
    while True:
        items += fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            break
    return Measurement(rate=items / elapsed, items=items, seconds=elapsed)
