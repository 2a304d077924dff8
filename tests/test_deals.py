"""Seeded deals: golden vectors, an independent pure-Python twin, batch independence."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_rs_free.cards import format_deck, parse_deck
from engine_rs_free.deals import STREAM_DEAL, deal, deal_batch, philox4x32

GOLDEN = Path(__file__).parent / "golden" / "deals.txt"
MASK = 0xFFFFFFFF


def test_philox_known_answers():
    # Random123 kat_vectors for philox4x32-10.
    assert philox4x32(0, 0, 0, 0, 0, 0) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert philox4x32(MASK, MASK, MASK, MASK, MASK, MASK) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    assert philox4x32(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0) == (
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def _philox_py(ctr, key):
    """Philox4x32-10 in plain Python integers (the slow twin)."""
    c = list(ctr)
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK]
        k0 = (k0 + 0x9E3779B9) & MASK
        k1 = (k1 + 0xBB67AE85) & MASK
    return c


def _deal_py(seed, index):
    """The algorithm of the deals.py docstring, written again from the prose."""
    key = (seed & MASK, seed >> 32)

    def words():
        block = 0
        while True:
            yield from _philox_py((block, STREAM_DEAL, index & MASK, index >> 32), key)
            block += 1

    w = words()
    deck = list(range(52))
    for i in range(51, 0, -1):
        s = i + 1
        while True:
            m = next(w) * s
            if (m & MASK) >= (2**32 - s) % s:
                j = m >> 32
                break
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def _golden():
    for line in GOLDEN.read_text().splitlines():
        if line and not line.startswith("#"):
            seed, index, deck = line.split(" ", 2)
            yield int(seed), int(index), deck


def test_golden_vectors():
    rows = list(_golden())
    assert {(s, i) for s, i, _ in rows} >= {(s, i) for s in (0, 2026) for i in (0, 1, 2, 3, 4, 10**12)}
    for seed, index, text in rows:
        assert format_deck(deal(seed, index)) == text
        assert _deal_py(seed, index) == list(parse_deck(text))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**63 - 1))
def test_compiled_deal_equals_python_twin(seed, index):
    assert list(deal(seed, index)) == _deal_py(seed, index)


def test_batch_rows_do_not_depend_on_batch_size():
    whole = deal_batch(7, 1000, 300)
    parts = np.concatenate([deal_batch(7, 1000 + a, b - a) for a, b in [(0, 1), (1, 100), (100, 299), (299, 300)]])
    assert np.array_equal(whole, parts)
    assert np.array_equal(whole[17], deal(7, 1017))
    assert (np.sort(whole, axis=1) == np.arange(52)).all()


def test_highest_index_and_seed_work():
    d = deal(2**64 - 1, 2**63 - 1)
    assert sorted(d.tolist()) == list(range(52))


@pytest.mark.parametrize("seed,start,count", [(-1, 0, 1), (2**64, 0, 1), (0, -1, 1), (0, 2**63 - 1, 2), (0, 0, -1)])
def test_out_of_range_is_rejected(seed, start, count):
    with pytest.raises(ValueError, match="out of range|pass 2\\*\\*63-1|negative"):
        deal_batch(seed, start, count)


def test_positions_are_uniform():
    # Each card appears at deck position p with probability 1/52; a chi-square
    # test over 52 x 52 cells with 104,000 decks (df = 51 per position).
    decks = deal_batch(11, 0, 104_000)
    counts = np.zeros((52, 52))
    for p in range(52):
        counts[p] = np.bincount(decks[:, p], minlength=52)
    expected = len(decks) / 52
    chi2 = ((counts - expected) ** 2 / expected).sum(axis=1)
    # df=51: the 99.999th percentile is about 110; a broken shuffle is far above.
    assert chi2.max() < 110, chi2.max()
