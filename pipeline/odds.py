"""Headline odds of a run: win rate per variant × policy with a Wilson 95% interval.

The rows are read back from the data files that cover the run's request (of
any run in the folder: keys are unique across it). Solver rows that gave up
count as losses for the estimate and the lower bound and as wins for the
upper bound, so an unfinished search never narrows the interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .manifest import pair_key, read_all_manifests
from .spec import RunSpec
from .storage import DataStore, read_table

Z95 = 1.96  # the same z as the report's SQL macros (queries/catalog.py WILSON_Z), so both print the same interval


def wilson(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``wins`` successes in ``n`` trials.

    >>> [round(x, 4) for x in wilson(5, 100)]
    [0.0215, 0.1118]
    """
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class WinRate:
    """Wins of one variant × policy over ``games`` deals (``gave_up`` solver deals unresolved)."""

    variant: str
    policy: str
    games: int
    wins: int
    gave_up: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    def one_in(self) -> str:
        if not self.wins:
            return "none"
        x = 1 / self.rate
        return f"1 in {x:,.0f}" if x >= 100 else f"1 in {x:.1f}"


def win_rates(spec: RunSpec) -> list[WinRate]:
    """Win rate of every variant × policy of the spec over its requested deals, in spec order."""
    store = DataStore(spec.data)
    manifests = read_all_manifests(store)
    requested = spec.requested()
    files: dict[str, list] = {}
    for m in manifests.values():
        if m.seed != spec.seed:
            continue
        for b in m.done():
            rng = requested.get((b.variant, b.policy))
            if rng and b.first <= rng[1] and b.last >= rng[0]:
                files.setdefault(b.key, []).append(b)
    out = []
    for (v, p), (first, last) in requested.items():
        games = wins = gave_up = 0
        for b in files.get(pair_key(v, p), []):
            t = read_table(store, b.path, columns=["deal", "won", "status"])
            deal = t.column("deal").to_numpy()
            keep = (deal >= first) & (deal <= last)
            won = t.column("won").to_numpy(zero_copy_only=False)[keep]
            games += int(keep.sum())
            wins += int(won.sum())
            status = t.column("status").to_numpy(zero_copy_only=False)[keep]
            gave_up += int(np.sum(status == "gave_up"))
        low, _ = wilson(wins, games)
        _, high = wilson(wins + gave_up, games)
        out.append(WinRate(v, p, games, wins, gave_up, low, high))
    return out


def format_win_rates(rates: list[WinRate]) -> str:
    """A plain text table of win rates."""
    head = f"{'variant':<18} {'policy':<36} {'games':>9} {'wins':>8} {'win rate':>9}  {'95% interval':<19} odds"
    rows = [head]
    for r in rates:
        gu = f" ({r.gave_up} unresolved)" if r.gave_up else ""
        rows.append(f"{r.variant:<18} {r.policy:<36} {r.games:>9,} {r.wins:>8,} {r.rate:>9.3%}  "
                    f"{r.low:>7.3%} - {r.high:<8.3%} {r.one_in()}{gu}")
    return "\n".join(rows)
