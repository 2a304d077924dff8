"""The batch engine against its scalar twin (policies.play_scalar on game.py).

Every variant x policy: identical score, won, moves, decisions and line on
fixed-seed random deals; lines replay through game.replay to the same score.
The default run uses a few dozen deals per pair; ``-m slow`` runs 10,000.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine_rs_free.batch import play_batch
from engine_rs_free.deals import deal_batch
from engine_rs_free.game import replay
from engine_rs_free.policies import play_scalar

VARIANTS = (
    "standard",
    "strict",
    "easy",
    "reverse",
    "standard+optional",
    "easy+optional",
    "reverse+leftmost+optional",
    "standard+sensible+leftmost",
    "strict+must_fill",
    "standard+must_fill",
    "easy+sensible+must_fill",
)
POLICIES = ("nomove", "random", "greedy", "aces", "human", "human:sacrifice=0", "lookahead", "lookahead:depth=2")
SEED = 20261130


def _compare(decks, indices, variant, policy, seed):
    res = play_batch(decks, variant, policy, seed=seed, indices=indices, want_lines=True)
    for n in range(len(decks)):
        exp = play_scalar(decks[n], variant, policy, seed=seed, index=int(indices[n]))
        got = (int(res.score[n]), bool(res.won[n]), int(res.moves[n]), int(res.decisions[n]), res.lines[n])
        assert got == (exp.score, exp.won, exp.moves, exp.decisions, exp.line), (variant, policy, int(indices[n]))
        assert replay(decks[n], res.lines[n], variant).score == got[0]
    return res


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("policy", POLICIES)
def test_batch_equals_scalar(variant, policy):
    start = 1000 + 37 * VARIANTS.index(variant)
    decks = deal_batch(SEED, start, 40)
    _compare(decks, np.arange(start, start + 40, dtype=np.int64), variant, policy, SEED)
