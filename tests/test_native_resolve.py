"""The native searches' forced discards (``native._nat_resolve``) against ``game.forced_discards``.

``_nat_resolve`` works on a position held as bits (a card lies on its own pile as bit 13*p + i,
a pile may also hold one foreign bottom card) and reads again only the tops of the piles a round
of discards took a card from. Its twin is the plain round-at-a-time rule of game.py on the same
piles as lists. The positions are any subsets of each pile's own cards, with or without a foreign
bottom, not only reachable ones: the resolve is a function of the piles alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free import game
from engine_rs_free.deals import deal_batch
from engine_rs_free.rules import rules_by_name
from engine_rs_free.solver import core
from engine_rs_free.solver.native import _nat_resolve_call

VARIANTS = ("standard", "strict", "reverse")


def _native_deck(deck_cards, variant):
    rules = rules_by_name(variant)
    deck = core._workspace(10).native_deck(core.search_rules(rules))
    starts = core.deck_inputs(deck_cards[None, :])
    core._fill_native_deck(deck, starts.piles, starts.stocks, 0)
    return rules, deck


def _piles_of(mask: int, fw: int, deck_cards) -> list[tuple[int, ...]]:
    """The piles of a native position as game.py holds them: foreign bottom first, then the
    pile's own cards in deal order (card j of the deal is the (j // 4)-th card of pile j % 4)."""
    piles = []
    for p in range(4):
        foreign = (fw >> (8 * p)) & 255
        own = [int(deck_cards[4 * i + p]) for i in range(13) if (mask >> (13 * p + i)) & 1]
        piles.append(tuple(([foreign] if foreign != 255 else []) + own))
    return piles


def _check(seed: int, index: int, variant: str, bits: int, foreign_pick: list[int]) -> int:
    """Resolve one position both ways; returns the discards made."""
    deck_cards = deal_batch(seed, index, 1)[0]
    rules, deck = _native_deck(deck_cards, variant)
    mask = bits & ((1 << 52) - 1)
    fw = 0
    for p in range(4):
        # a foreign bottom: a card of another pile that is not on the table (foreign_pick[p] >= 52: none)
        pick = foreign_pick[p]
        card_bit = pick % 52
        if pick < 52 and card_bit // 13 != p and not (mask >> card_bit) & 1:
            j = next(j for j in range(52) if 13 * (j % 4) + j // 4 == card_bit)
            fw |= int(deck_cards[j]) << (8 * p)
        else:
            fw |= 255 << (8 * p)
    if len({(fw >> (8 * p)) & 255 for p in range(4)} - {255}) < sum(((fw >> (8 * p)) & 255) != 255 for p in range(4)):
        return 0  # the same card twice as a foreign bottom: not a position
    piles = _piles_of(mask, fw, deck_cards)
    want = [tuple(pl) for pl in piles]
    gone = game.forced_discards(want, game.strength_tuple(rules))
    got_mask, got_fw, nd, full = _nat_resolve_call(np.uint64(mask), np.uint32(fw), deck)
    got = _piles_of(int(got_mask), int(got_fw), deck_cards)
    assert got == want, (variant, game.picture(game.State(tuple(piles), (), frozenset())))
    assert nd == len(gone)
    assert full == all(want)
    return nd


@pytest.mark.parametrize("variant", VARIANTS)
def test_resolve_equals_the_round_rule_on_random_positions(variant):
    """Dense positions (each card on the table with probability 1/2; every pile has a foreign bottom
    now and then): many rounds of discards, cascades down a pile, piles emptied."""
    rng = np.random.default_rng(20261206)
    discards = rounds_deep = 0
    for index in range(400):
        bits = int(rng.integers(0, 1 << 52, dtype=np.uint64))
        nd = _check(31, index, variant, bits, [int(x) for x in rng.integers(0, 104, 4)])
        discards += nd
        rounds_deep += nd >= 3
    assert discards > 400 and rounds_deep > 50, (discards, rounds_deep)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, 10_000), variant=st.sampled_from(VARIANTS),
       bits=st.integers(0, (1 << 52) - 1), foreign=st.lists(st.integers(0, 103), min_size=4, max_size=4))
def test_resolve_equals_the_round_rule(index, variant, bits, foreign):
    _check(32, index, variant, bits, foreign)
