"""Perfect-information Monte Carlo (PIMC) player: `pimc:samples=K[,inner=R]`.

Work in progress (pimc engineer): at each decision of an honest player, sample K orders of the
unseen cards, solve the position after each choice under each sampled order with the exact solver
(restricted by the inner rule options R) and take the choice that wins most often.
"""

from __future__ import annotations


def pimc_batch(decks, rules, player, *, seed, indices, want_lines=False):
    """Play `player` (a `pimc:...` name) on every deck; returns a batch.BatchResult."""
    raise NotImplementedError("pimc_batch: being written by the pimc engineer")
